/**
 * Several replicas on one PostgreSQL database (DESIGN.md §6): leases with SKIP LOCKED and
 * compare-and-set updates give each task exactly one owner and one submit. Needs a real server:
 * `GATEWAY_TEST_DATABASE_URL` (set by .ci/run); without it these tests are skipped, saying so.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { PgClient } from "@effect/sql-pg"
import { Registry } from "@genway/registry"
import { assert, describe, it } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as TestClock from "effect/TestClock"
import { randomBytes, randomUUID } from "node:crypto"
import * as Config from "../src/Config.js"
import * as Gateway from "../src/Gateway.js"
import { Scheduler } from "../src/Scheduler.js"
import { TaskStore } from "../src/TaskStore.js"
import { tempDir } from "./harness.js"

const url = process.env.GATEWAY_TEST_DATABASE_URL

if (url === undefined || url === "") {
  console.warn("postgres.test.ts: GATEWAY_TEST_DATABASE_URL is not set; the PostgreSQL tests are SKIPPED")
}

const schema = `genway_test_${randomBytes(4).toString("hex")}`

/** The test URL with a private schema as search path, so runs never see each other's tables. */
const scopedUrl = () => {
  const u = new URL(url!)
  u.searchParams.set("options", `-c search_path=${schema}`)
  return u.toString()
}

const createSchema = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE SCHEMA IF NOT EXISTS ${sql(schema)}`
}).pipe(Effect.provide(PgClient.layer({ url: Redacted.make(url ?? "") })))

const dropSchema = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`DROP SCHEMA IF EXISTS ${sql(schema)} CASCADE`
}).pipe(Effect.provide(PgClient.layer({ url: Redacted.make(url ?? "") })), Effect.orDie)

const replica = (dataDir: string) =>
  Gateway.services(Effect.succeed(new Map()), Registry.layer()).pipe(
    Layer.provideMerge(Config.layerWith({
      dataDir,
      databaseUrl: Option.some(Redacted.make(scopedUrl())),
      apiKeys: [],
      sandboxDelayMs: 1000,
      pollIntervalMs: Option.none(),
      modelsFile: Option.none()
    }))
  )

describe.skipIf(url === undefined || url === "")("PostgreSQL, several replicas", () => {
  it.scoped("two replicas working the same tasks submit each exactly once and finish all", () =>
    Effect.gen(function*() {
      yield* createSchema
      yield* Effect.addFinalizer(() => dropSchema)
      const dataDir = tempDir()
      const a = yield* Layer.build(replica(dataDir))
      const b = yield* Layer.build(replica(dataDir))
      const storeA = Context.get(a, TaskStore)
      const entry = Registry.entries.find((e) => e.endpoints.includes("E4"))!
      const ids: Array<string> = []
      for (let i = 0; i < 30; i++) {
        const id = randomUUID()
        ids.push(id)
        yield* storeA.create({
          id,
          tenant: "t",
          entryId: entry.id,
          vendor: entry.vendor,
          mode: "sandbox",
          request: JSON.stringify({ prompt: `p${i}` }),
          hints: {},
          idempotencyKey: null,
          requestHash: null,
          upstreamModel: entry.upstream.model,
          deadlineAt: 10_000_000,
          createdAt: 0
        }, 0)
      }
      const runA = Effect.flatMap(Scheduler, (s) => s.runOnce).pipe(Effect.provide(a))
      const runB = Effect.flatMap(Scheduler, (s) => s.runOnce).pipe(Effect.provide(b))
      const [claimedA, claimedB] = yield* Effect.all([runA, runB], { concurrency: 2 })
      assert.strictEqual(claimedA + claimedB, 30)
      for (let round = 0; round < 4; round++) {
        yield* TestClock.adjust("1 second")
        yield* Effect.all([runA, runB], { concurrency: 2 })
      }
      for (const id of ids) {
        const task = Option.getOrThrow(yield* storeA.findById(id))
        assert.strictEqual(task.status, "completed", id)
        const events = yield* storeA.events(id)
        assert.strictEqual(events.filter((e) => e.note === "submitted").length, 1)
      }
    }), 60_000)

  it.scoped("idempotency keys and compare-and-set hold on PostgreSQL", () =>
    Effect.gen(function*() {
      yield* createSchema
      yield* Effect.addFinalizer(() => dropSchema)
      const ctx = yield* Layer.build(replica(tempDir()))
      const store = Context.get(ctx, TaskStore)
      const base = {
        tenant: "t",
        entryId: "vendor-b/vid2.5-t2v-preview",
        vendor: "vendor-b",
        mode: "sandbox" as const,
        request: "{}",
        hints: {},
        idempotencyKey: "k1",
        requestHash: "h1",
        upstreamModel: "m",
        deadlineAt: 1_000_000,
        createdAt: 0
      }
      const first = yield* store.create({ ...base, id: randomUUID() }, 0)
      const again = yield* store.create({ ...base, id: randomUUID() }, 0)
      assert.isTrue(again.replay)
      assert.strictEqual(again.task.id, first.task.id)
      const conflict = yield* Effect.flip(store.create({ ...base, id: randomUUID(), requestHash: "h2" }, 0))
      assert.strictEqual(conflict._tag, "IdempotencyConflict")
      const moved = yield* store.update(first.task, { status: "processing" }, 1)
      assert.isTrue(Option.isSome(moved))
      const stale = yield* store.update(first.task, { status: "failed" }, 2)
      assert.isTrue(Option.isNone(stale))
    }))
})

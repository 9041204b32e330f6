/**
 * Several replicas on one PostgreSQL database (DESIGN.md §6): leases with SKIP LOCKED and
 * compare-and-set updates give each task exactly one owner and one submit. Needs a real server:
 * `GATEWAY_TEST_DATABASE_URL` (set by .ci/run); without it these tests are skipped, saying so.
 */
import { Registry } from "@genway/registry"
import * as SqlClient from "@effect/sql/SqlClient"
import { assert, describe, it } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as TestClock from "effect/TestClock"
import { randomUUID } from "node:crypto"
import { Scheduler } from "../src/tasks/Scheduler.js"
import { TaskStore } from "../src/tasks/Store.js"
import { tempDir } from "./harness.js"
import * as Pg from "./pg.js"

describe.skipIf(!Pg.available("postgres.test.ts"))("PostgreSQL, several replicas", () => {
  it.scoped("two replicas working the same tasks submit each exactly once and finish all", () =>
    Effect.gen(function*() {
      const { replica } = yield* Pg.privateSchema
      const dataDir = tempDir()
      const a = yield* Layer.build(replica(dataDir))
      const b = yield* Layer.build(replica(dataDir))
      const storeA = Context.get(a, TaskStore)
      const entry = Registry.entries.find((e) => e.endpoints.includes("E4"))!
      const ids: Array<string> = []
      for (let i = 0; i < 30; i++) {
        const task = Pg.sandboxTask(entry, i)
        ids.push(task.id)
        yield* storeA.create(task, 0)
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
      const { replica } = yield* Pg.privateSchema
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
      // A write and its event are one statement here: each change that happened has its event, a
      // replay and a change that lost the compare-and-set have none.
      const trail = Effect.map(store.events(first.task.id), (events) => events.map((e) => `${e.from}→${e.to}:${e.note}`))
      assert.deepStrictEqual(yield* trail, ["null→pending:created"])
      // Without a budget to check, the create is one statement here, the ledger's reservation in it.
      const sql = Context.get(ctx, SqlClient.SqlClient)
      assert.deepStrictEqual((yield* sql`SELECT state FROM usage_ledger WHERE id = ${first.task.id}`).map((r) => r.state), ["reserved"])
      const moved = yield* store.update(first.task, { status: "processing" }, 1)
      assert.isTrue(Option.isSome(moved))
      const stale = yield* store.update(first.task, { status: "failed" }, 2)
      assert.isTrue(Option.isNone(stale))
      const notedOnly = yield* store.update(Option.getOrThrow(moved), {}, 3, "vendor accepted")
      assert.isTrue(Option.isSome(notedOnly))
      assert.deepStrictEqual(yield* trail, ["null→pending:created", "pending→processing:null", "processing→processing:vendor accepted"])
    }))
})

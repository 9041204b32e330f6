/**
 * Kept model responses (E2) on PostgreSQL: the migration, the poller's leases (SKIP LOCKED) across
 * two replicas, compare-and-set, and the retention sweep. Needs a real server:
 * `GATEWAY_TEST_DATABASE_URL` (set by .ci/run); without it these tests are skipped, saying so.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { PgClient } from "@effect/sql-pg"
import { Registry } from "@genway/registry"
import { assert, describe, it } from "@effect/vitest"
import * as Clock from "effect/Clock"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as TestClock from "effect/TestClock"
import { randomBytes } from "node:crypto"
import * as Config from "../src/Config.js"
import * as Gateway from "../src/Gateway.js"
import * as Store from "../src/ResponseStore.js"
import { ResponsesService } from "../src/ResponsesService.js"
import { tempDir } from "./harness.js"

const url = process.env.GATEWAY_TEST_DATABASE_URL

if (url === undefined || url === "") {
  console.warn("responses.postgres.test.ts: GATEWAY_TEST_DATABASE_URL is not set; the PostgreSQL tests are SKIPPED")
}

const schema = `genway_test_${randomBytes(4).toString("hex")}`

const scopedUrl = () => {
  const u = new URL(url!)
  u.searchParams.set("options", `-c search_path=${schema}`)
  return u.toString()
}

const admin = (f: (sql: SqlClient.SqlClient) => Effect.Effect<unknown, unknown>) =>
  Effect.flatMap(SqlClient.SqlClient, f).pipe(Effect.provide(PgClient.layer({ url: Redacted.make(url ?? "") })), Effect.orDie)

const replica = (dataDir: string) =>
  Gateway.services(Effect.succeed(new Map()), Registry.layer()).pipe(
    Layer.provideMerge(Config.layerWith({
      dataDir,
      databaseUrl: Option.some(Redacted.make(scopedUrl())),
      apiKeys: [],
      sandboxDelayMs: 1000,
      pollIntervalMs: Option.none(),
      modelsFile: Option.none()
    })),
    Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map())))
  )

const entry = Registry.entries.find((e) => e.kind === "responses")!

describe.skipIf(url === undefined || url === "")("PostgreSQL: kept responses", () => {
  it.scoped("two replicas finish each background response once; reads, CAS and the sweep hold", () =>
    Effect.gen(function*() {
      yield* admin((sql) => sql`CREATE SCHEMA IF NOT EXISTS ${sql(schema)}`)
      yield* Effect.addFinalizer(() => admin((sql) => sql`DROP SCHEMA IF EXISTS ${sql(schema)} CASCADE`))
      const dataDir = tempDir()
      const a = yield* Layer.build(replica(dataDir))
      const b = yield* Layer.build(replica(dataDir))
      const service = Context.get(a, ResponsesService)
      const ids: Array<string> = []
      for (let i = 0; i < 20; i++) {
        const created = yield* service.create({ entry, tenant: "t", body: { model: "m", input: `job ${i}`, background: true } }).pipe(
          Effect.provide(a)
        )
        assert.strictEqual(created.status, "queued")
        ids.push(created.id)
      }
      const runA = Effect.flatMap(ResponsesService, (s) => s.runOnce).pipe(Effect.provide(a))
      const runB = Effect.flatMap(ResponsesService, (s) => s.runOnce).pipe(Effect.provide(b))
      yield* TestClock.adjust("1 second")
      const [claimedA, claimedB] = yield* Effect.all([runA, runB], { concurrency: 2 })
      assert.strictEqual(claimedA + claimedB, 20)
      assert.deepStrictEqual(yield* Effect.all([runA, runB]), [0, 0])
      for (const id of ids) {
        const kept = yield* service.retrieve("t", entry, id).pipe(Effect.provide(a))
        assert.strictEqual(JSON.parse(Option.getOrThrow(kept).json).status, "completed", id)
        assert.isTrue(Option.isNone(yield* service.retrieve("someone-else", entry, id).pipe(Effect.provide(a))))
      }

      const row = Option.getOrThrow(yield* Store.find("t", entry.id, ids[0]!, 0).pipe(Effect.provide(a)))
      assert.isTrue(Option.isSome(yield* Store.update(row, {}, 1).pipe(Effect.provide(a))))
      assert.isTrue(Option.isNone(yield* Store.update(row, {}, 2).pipe(Effect.provide(a))))
      yield* TestClock.adjust("29 days")
      assert.strictEqual(yield* Store.sweep(yield* Clock.currentTimeMillis).pipe(Effect.provide(a)), 0)
      yield* TestClock.adjust("1 day")
      assert.strictEqual(yield* Store.sweep(yield* Clock.currentTimeMillis).pipe(Effect.provide(a)), 20)
    }), 60_000)
})

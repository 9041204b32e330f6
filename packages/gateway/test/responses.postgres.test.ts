/**
 * Kept model responses (E2) on PostgreSQL: the migration, the poller's leases (SKIP LOCKED) across
 * two replicas, compare-and-set, and the retention sweep. Needs a real server:
 * `GATEWAY_TEST_DATABASE_URL` (set by .ci/run); without it these tests are skipped, saying so.
 */
import { Registry } from "@genway/registry"
import { assert, describe, it } from "@effect/vitest"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as TestClock from "effect/TestClock"
import * as Usage from "../src/ledger/Usage.js"
import * as Store from "../src/responses/Store.js"
import { ResponsesService } from "../src/responses/Service.js"
import { tempDir } from "./harness.js"
import * as Pg from "./pg.js"

const entry = Registry.entries.find((e) => e.kind === "responses")!
const tokensOf = (json: string) => {
  const usage = JSON.parse(json).usage
  return { input: usage.input_tokens as number, output: usage.output_tokens as number }
}

describe.skipIf(!Pg.available("responses.postgres.test.ts"))("PostgreSQL: kept responses", () => {
  it.scoped("two replicas finish each background response once and record its usage once; reads, CAS and the sweep hold", () =>
    Effect.gen(function*() {
      const { replica } = yield* Pg.privateSchema
      const dataDir = tempDir()
      const a = yield* Layer.build(replica(dataDir))
      const b = yield* Layer.build(replica(dataDir))
      const service = Context.get(a, ResponsesService)
      const ids: Array<string> = []
      for (let i = 0; i < 20; i++) {
        const created = yield* service.create({ entry, tenant: "t", keyId: "k1", body: { model: "m", input: `job ${i}`, background: true } }).pipe(
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
      const expected = { input: 0, output: 0 }
      for (const id of ids) {
        const kept = yield* service.retrieve("t", entry, id).pipe(Effect.provide(a))
        assert.strictEqual(JSON.parse(Option.getOrThrow(kept).json).status, "completed", id)
        const tokens = tokensOf(Option.getOrThrow(kept).json)
        expected.input += tokens.input
        expected.output += tokens.output
        assert.isTrue(Option.isNone(yield* service.retrieve("someone-else", entry, id).pipe(Effect.provide(a))))
      }
      // Each response's usage once, against the creating key (migration 0008), whichever replica finished it.
      const now = yield* Clock.currentTimeMillis
      const usage = yield* Usage.report({ from: 0, to: now + 1, tenant: "t", groupBy: "key" }).pipe(Effect.provide(b))
      assert.strictEqual(usage.total.counts.requests, 20)
      assert.deepStrictEqual([usage.total.units.input_tokens, usage.total.units.output_tokens], [expected.input, expected.output])
      assert.deepStrictEqual(usage.groups?.map((g) => g.key), ["k1"])

      const store = Context.get(a, Store.ResponseStore)
      const row = Option.getOrThrow(yield* store.find("t", entry.id, ids[0]!, 0))
      // The input items are kept with the response (migration 0006).
      const items = Option.getOrThrow(yield* service.inputItems("t", entry, ids[0]!).pipe(Effect.provide(a)))
      assert.deepStrictEqual(items.map((i) => i["content"]), [[{ type: "input_text", text: "job 0" }]])
      assert.isTrue(Option.isSome(yield* store.update(row, {}, 1)))
      assert.isTrue(Option.isNone(yield* store.update(row, {}, 2)))
      yield* TestClock.adjust("29 days")
      assert.strictEqual(yield* store.sweep(yield* Clock.currentTimeMillis), 0)
      yield* TestClock.adjust("1 day")
      assert.strictEqual(yield* store.sweep(yield* Clock.currentTimeMillis), 20)
    }), 60_000)

  it.scoped("24 answered at once, kept or not: written in shared batches, each kept one found, each recorded once", () =>
    Effect.gen(function*() {
      const { replica } = yield* Pg.privateSchema
      const a = yield* Layer.build(replica(tempDir()))
      const service = Context.get(a, ResponsesService)
      const store = Context.get(a, Store.ResponseStore)
      const sql = Context.get(a, SqlClient.SqlClient)
      const answers = yield* Effect.forEach(
        Array.from({ length: 24 }, (_, i) => i),
        (i) => service.create({ entry, tenant: "t", keyId: "k1", body: { model: "m", input: `at once ${i}`, ...(i % 3 === 0 ? { store: false } : {}) } }),
        { concurrency: "unbounded" }
      ).pipe(Effect.provide(a))
      const now = yield* Clock.currentTimeMillis
      for (const [i, answer] of answers.entries()) {
        const found = yield* store.find("t", entry.id, answer.id, now)
        assert.strictEqual(Option.isSome(found), i % 3 !== 0, answer.id)
      }
      const rows = yield* sql<{ id: string; key_id: string }>`SELECT id, key_id FROM usage_ledger WHERE source = 'request'`
      assert.deepStrictEqual(rows.map((r) => r.id).sort(), answers.map((r) => r.id).sort())
      assert.isTrue(rows.every((r) => r.key_id === "k1"))
    }))
})

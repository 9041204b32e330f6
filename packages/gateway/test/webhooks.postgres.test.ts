/**
 * Webhooks with two replicas on one PostgreSQL database: each event is delivered, once per
 * endpoint, whichever replica's worker claims it. Skipped (saying so) without
 * `GATEWAY_TEST_DATABASE_URL`.
 */
import { Registry } from "@genway/registry"
import { assert, describe, it } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as TestClock from "effect/TestClock"
import { Scheduler } from "../src/tasks/Scheduler.js"
import { TaskStore } from "../src/tasks/Store.js"
import { Webhooks } from "../src/webhooks/Webhooks.js"
import { tempDir } from "./harness.js"
import * as Pg from "./pg.js"
import { receiver } from "./receiver.js"

/** Two gateways' services on one private schema, webhooks to loopback allowed. */
const twoReplicas = Effect.gen(function*() {
  const { replica } = yield* Pg.privateSchema
  const dataDir = tempDir()
  const open = { webhookAllowInsecure: true, webhookAllowPrivate: true }
  return [yield* Layer.build(replica(dataDir, open)), yield* Layer.build(replica(dataDir, open))] as const
})

describe.skipIf(!Pg.available("webhooks.postgres.test.ts"))("webhooks on PostgreSQL, two replicas", () => {
  it.scoped("each event is delivered exactly once per endpoint, none lost", () =>
    Effect.gen(function*() {
      const [a, b] = yield* twoReplicas
      const hook = yield* receiver()
      const endpoint = yield* Context.get(a, Webhooks).create("t", { url: hook.url, events: ["task.processing", "task.completed"], description: null })
      hook.secret = endpoint.secret
      const store = Context.get(a, TaskStore)
      const entry = Registry.entries.find((e) => e.endpoints.includes("E4"))!
      const ids: Array<string> = []
      for (let i = 0; i < 15; i++) {
        const task = Pg.sandboxTask(entry, i)
        ids.push(task.id)
        yield* store.create(task, 0)
      }
      const both = <A, E>(f: (ctx: Context.Context<any>) => Effect.Effect<A, E>) => Effect.all([f(a), f(b)], { concurrency: 2 })
      const work = both((ctx) => Context.get(ctx, Scheduler).runOnce)
      const deliver = both((ctx) => Context.get(ctx, Webhooks).deliverDue)
      yield* work
      for (const step of ["200 millis", "1 second", "1 second", "1 second"] as const) {
        yield* TestClock.adjust(step)
        yield* work
        yield* deliver
      }
      yield* deliver
      const payloads = hook.received.map((r) => {
        assert.isTrue(r.verified.ok)
        return { id: r.id, ...(r.verified as any).payload }
      })
      assert.strictEqual(payloads.length, 30)
      assert.strictEqual(new Set(payloads.map((p) => p.id)).size, 30)
      for (const id of ids) {
        const types = payloads.filter((p) => p.data.task_info.id === id).map((p) => p.type).sort()
        assert.deepStrictEqual(types, ["task.completed", "task.processing"], id)
      }
    }), 60_000)

  it.scoped("an endpoint registered on one replica reaches another's task changes within 5 s", () =>
    Effect.gen(function*() {
      const [a, b] = yield* twoReplicas
      const entry = Registry.entries.find((e) => e.endpoints.includes("E4"))!
      const task = Pg.sandboxTask(entry, 0)
      yield* Context.get(b, TaskStore).create(task, 0)
      // B's worker submits the task: its change to processing looks the tenant's endpoints up (none).
      const runB = Context.get(b, Scheduler).runOnce
      yield* runB
      yield* TestClock.adjust("200 millis")
      yield* runB
      assert.strictEqual(Option.getOrThrow(yield* Context.get(b, TaskStore).findById(task.id)).status, "processing")
      const hook = yield* receiver()
      const endpoint = yield* Context.get(a, Webhooks).create(task.tenant, { url: hook.url, events: ["task.completed"], description: null })
      hook.secret = endpoint.secret
      // Past B's 5 s, its next change of the task sees the endpoint.
      yield* TestClock.adjust("5 seconds")
      yield* runB
      yield* Context.get(a, Webhooks).deliverDue
      const types = hook.received.map((r) => (r.verified as any).payload.type)
      assert.deepStrictEqual(types, ["task.completed"])
    }), 60_000)
})


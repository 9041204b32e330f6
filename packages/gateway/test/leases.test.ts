/**
 * Short task leases kept alive by a heartbeat (issue 13, item 1): a slow submit keeps a 30 s
 * lease renewed while it waits, and a step whose lease was taken stops before its side effect.
 * Time is the TestClock; the vendor stand-in waits on gates the test opens.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { VendorAdapter } from "@genway/core"
import { Registry } from "@genway/registry"
import { assert, describe, layer } from "@effect/vitest"
import * as Clock from "effect/Clock"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/TestClock"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Scope from "effect/Scope"
import * as ResponsesService from "../src/responses/Service.js"
import * as Scheduler from "../src/tasks/Scheduler.js"
import * as Webhooks from "../src/webhooks/Webhooks.js"
import { TaskStore } from "../src/tasks/Store.js"
import { MediaStore } from "../src/platform/MediaStore.js"
import * as Harness from "./harness.js"

const e4 = Registry.entries.find((e) => e.endpoints.includes("E4"))!

/** What the stand-in vendor saw, and the gates its calls wait on. */
const state = {
  submitGate: Effect.runSync(Deferred.make<void>()),
  downloadGate: Effect.runSync(Deferred.make<void>()),
  /** When set, a poll waits on it (then answers Completed). */
  pollGate: null as Deferred.Deferred<void> | null,
  pollsStarted: 0,
  submitsStarted: 0,
  /** Submits that got past the wait: the vendor created a job. */
  submitsAccepted: 0,
  downloadsStarted: 0,
  downloadsDone: 0,
  interrupted: 0
}

const vendor: VendorAdapter.VendorAdapter = {
  vendor: "vendor-b",
  mode: "live",
  submit: () =>
    Effect.gen(function*() {
      state.submitsStarted++
      yield* Deferred.await(state.submitGate)
      state.submitsAccepted++
      return { ref: `job-${state.submitsAccepted}`, status: "pending" as const }
    }).pipe(Effect.onInterrupt(() => Effect.sync(() => state.interrupted++))),
  poll: () =>
    Effect.gen(function*() {
      state.pollsStarted++
      if (state.pollGate !== null) yield* Deferred.await(state.pollGate)
      return { _tag: "Completed", media: [{ _tag: "Url", url: "https://cdn.vendor.example/x.mp4" }] } as const
    }).pipe(Effect.onInterrupt(() => Effect.sync(() => state.interrupted++))),
  download: () =>
    Effect.gen(function*() {
      state.downloadsStarted++
      yield* Deferred.await(state.downloadGate)
      state.downloadsDone++
      return { contentType: "video/mp4", body: Stream.make(new Uint8Array([0, 0, 0, 24, 102, 116, 121, 112])) }
    }).pipe(Effect.onInterrupt(() => Effect.sync(() => state.interrupted++)))
}

const waitFor = (condition: () => boolean) =>
  Effect.gen(function*() {
    for (let i = 0; i < 100_000 && !condition(); i++) yield* Effect.yieldNow()
    assert.isTrue(condition(), "condition not reached")
  })

const row = (id: string) => Effect.map(Effect.flatMap(TaskStore, (s) => s.findById(id)), Option.getOrThrow)

/** Another replica takes the task over (as after this one's lease ran out while it was paused). */
const steal = (id: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql`UPDATE tasks SET lease_owner = 'other-replica', version = version + 1 WHERE id = ${id}`)

/** A gateway of its own per test, so no task of one test is due in the next. */
const gateway = () => layer(Harness.layer({ live: Effect.succeed(new Map([["vendor-b", vendor]])) }))

describe("leases", () => {
  gateway()((it) => {
    it.effect("a slow submit keeps a short lease alive by heartbeat; nobody else can claim the task", () =>
      Effect.gen(function*() {
        state.submitsStarted = state.submitsAccepted = state.interrupted = 0
        const store = yield* TaskStore
        const created = yield* Harness.send(Harness.post(e4.path, { prompt: "slow" }))
        const id = created.json.task_info.id
        const working = yield* Effect.fork(Harness.work)
        yield* waitFor(() => state.submitsStarted === 1)
        const start = yield* Clock.currentTimeMillis
        const first = yield* row(id)
        assert.strictEqual(first.submitState, "submitting")
        // A short lease, not one covering the whole vendor call.
        assert.isAtMost(first.leaseUntil!, start + Scheduler.leaseMs)

        // Two minutes of a vendor that does not answer: the lease moves along, never 30 s ahead.
        for (let tick = 1; tick <= 12; tick++) {
          yield* TestClock.adjust(Scheduler.heartbeatMs)
          const now = yield* Clock.currentTimeMillis
          const expected = now + Scheduler.leaseMs
          for (let i = 0; i < 100_000 && (yield* row(id)).leaseUntil !== expected; i++) yield* Effect.yieldNow()
          const held = yield* row(id)
          assert.strictEqual(held.leaseUntil, expected)
          const stolen = yield* store.claimDue("other-replica", now, Scheduler.leaseMs, 100)
          assert.isFalse(stolen.some((t) => t.id === id))
        }

        yield* Deferred.succeed(state.submitGate, undefined)
        yield* Fiber.join(working)
        const done = yield* row(id)
        assert.strictEqual(done.submitState, "submitted")
        assert.isNull(done.leaseOwner)
        assert.strictEqual(state.submitsAccepted, 1)
        assert.strictEqual(state.interrupted, 0)
      }))
  })

  gateway()((it) => {
    it.effect("a lost lease interrupts a submit before the vendor accepts it; the new owner's row is untouched", () =>
      Effect.gen(function*() {
        state.submitGate = Effect.runSync(Deferred.make<void>())
        state.submitsStarted = state.submitsAccepted = state.interrupted = 0
        const created = yield* Harness.send(Harness.post(e4.path, { prompt: "paused replica" }))
        const id = created.json.task_info.id
        const working = yield* Effect.fork(Harness.work)
        yield* waitFor(() => state.submitsStarted === 1)
        yield* steal(id)
        const stolen = yield* row(id)

        // The next heartbeat finds the lease gone and stops the step.
        yield* TestClock.adjust(Scheduler.heartbeatMs)
        yield* Fiber.join(working)
        assert.strictEqual(state.interrupted, 1)
        yield* Deferred.succeed(state.submitGate, undefined)
        yield* Effect.yieldNow()
        assert.strictEqual(state.submitsAccepted, 0)
        const after = yield* row(id)
        assert.deepStrictEqual(after, stolen)
        assert.strictEqual(after.submitState, "submitting")
        assert.strictEqual(after.leaseOwner, "other-replica")
      }))
  })

  gateway()((it) => {
    it.effect("a lost lease interrupts a mirror: the task is not completed and no media is written", () =>
      Effect.gen(function*() {
        state.submitGate = Effect.runSync(Deferred.make<void>())
        yield* Deferred.succeed(state.submitGate, undefined)
        state.downloadsStarted = state.downloadsDone = state.interrupted = 0
        const created = yield* Harness.send(Harness.post(e4.path, { prompt: "mirror" }))
        const id = created.json.task_info.id
        yield* Harness.work
        assert.strictEqual((yield* row(id)).submitState, "submitted")
        yield* TestClock.adjust("1 minute")
        const working = yield* Effect.fork(Harness.work)
        yield* waitFor(() => state.downloadsStarted === 1)
        yield* steal(id)
        const stolen = yield* row(id)

        yield* TestClock.adjust(Scheduler.heartbeatMs)
        yield* Fiber.join(working)
        assert.strictEqual(state.interrupted, 1)
        yield* Deferred.succeed(state.downloadGate, undefined)
        assert.strictEqual(state.downloadsDone, 0)
        assert.deepStrictEqual(yield* row(id), stolen)
        const sql = yield* SqlClient.SqlClient
        const media = yield* sql`SELECT key FROM media WHERE task_id = ${id}`
        assert.strictEqual(media.length, 0)

        // The new owner (here: its lease lapses and this worker claims it again) mirrors from the start.
        yield* TestClock.adjust("31 seconds")
        yield* Harness.work
        const done = yield* row(id)
        assert.strictEqual(done.status, "completed")
        assert.strictEqual(state.downloadsDone, 1)
        assert.strictEqual((yield* sql`SELECT key FROM media WHERE task_id = ${id}`).length, 1)
      }))
  })

  gateway()((it) => {
    it.effect("a stale copy that ends after another replica completed the task leaves that task's media in place", () =>
      Effect.gen(function*() {
        state.submitGate = Effect.runSync(Deferred.make<void>())
        state.downloadGate = Effect.runSync(Deferred.make<void>())
        yield* Deferred.succeed(state.submitGate, undefined)
        state.downloadsStarted = state.downloadsDone = state.interrupted = 0
        const sql = yield* SqlClient.SqlClient
        const media = yield* MediaStore
        const created = yield* Harness.send(Harness.post(e4.path, { prompt: "stale copy" }))
        const id = created.json.task_info.id
        yield* Harness.work
        yield* TestClock.adjust("1 minute")
        // This worker (paused, say) is copying the result when another replica takes the task
        // over, copies the same result under the same key and completes the task.
        const working = yield* Effect.fork(Harness.work)
        yield* waitFor(() => state.downloadsStarted === 1)
        const bytes = new Uint8Array([0, 0, 0, 24, 102, 116, 121, 112])
        const copy = yield* media.write(id, 0, "video/mp4", Stream.make(bytes), null)
        yield* media.record([copy])
        const key = copy.key
        yield* sql`UPDATE tasks SET status = 'completed', result = ${JSON.stringify([{ media: key }])},
          lease_owner = NULL, lease_until = NULL, version = version + 1 WHERE id = ${id}`

        // This worker's copy ends before its next heartbeat: it cannot complete the task, and it
        // must not take the other replica's media away either (same key).
        yield* Deferred.succeed(state.downloadGate, undefined)
        yield* Fiber.join(working)
        assert.strictEqual(state.downloadsDone, 1)
        assert.strictEqual((yield* row(id)).status, "completed")
        assert.strictEqual((yield* media.lookup(key))._tag, "Found")
        const read = yield* Harness.send(Harness.get(`${e4.path}/${id}`))
        const url = new URL(read.json.videos[0])
        const served = yield* Harness.send(Harness.get(`${url.pathname}${url.search}`, undefined))
        assert.strictEqual(served.status, 200)
      }))
  })

  gateway()((it) => {
    it.effect("a result's media rows commit with its completion: a completion that fails records none, the next one records them", () =>
      Effect.gen(function*() {
        state.submitGate = Effect.runSync(Deferred.make<void>())
        state.downloadGate = Effect.runSync(Deferred.make<void>())
        yield* Deferred.succeed(state.submitGate, undefined)
        yield* Deferred.succeed(state.downloadGate, undefined)
        state.downloadsStarted = state.downloadsDone = state.interrupted = 0
        const sql = yield* SqlClient.SqlClient
        const created = yield* Harness.send(Harness.post(e4.path, { prompt: "refused completion" }))
        const id: string = created.json.task_info.id
        yield* Harness.work
        yield* TestClock.adjust("1 minute")
        // The database refuses the completing write (as a full disk or a lost connection would).
        yield* sql`CREATE TRIGGER refuse_completion BEFORE UPDATE OF status ON tasks WHEN NEW.status = 'completed'
          BEGIN SELECT RAISE(ABORT, 'completion refused by the test'); END`
        yield* Harness.work
        assert.strictEqual(state.downloadsDone, 1)
        const refused = yield* row(id)
        assert.strictEqual(refused.status, "pending")
        assert.strictEqual(refused.attempts, 1)
        assert.strictEqual((yield* sql`SELECT key FROM media WHERE task_id = ${id}`).length, 0)

        // Once the database takes it, the retried step copies again and records the copy with the completion.
        yield* sql`DROP TRIGGER refuse_completion`
        yield* TestClock.adjust("10 minutes")
        yield* Harness.work
        assert.strictEqual(state.downloadsDone, 2)
        const done = yield* row(id)
        assert.strictEqual(done.status, "completed")
        const media = yield* sql<{ readonly key: string }>`SELECT key FROM media WHERE task_id = ${id}`
        assert.deepStrictEqual(media.map((m) => m.key), [`${id}/0.mp4`])
        const read = yield* Harness.send(Harness.get(`${e4.path}/${id}`))
        const url = new URL(read.json.videos[0])
        const served = yield* Harness.send(Harness.get(`${url.pathname}${url.search}`, undefined))
        assert.strictEqual(served.status, 200)
      }))
  })

  /** A task submitted, then due for its first poll: a worker pass is running it, held in the poll by `gate`. */
  const pollRunning = (prompt: string) =>
    Effect.gen(function*() {
      state.submitGate = Effect.runSync(Deferred.make<void>())
      state.downloadGate = Effect.runSync(Deferred.make<void>())
      state.pollGate = null
      yield* Deferred.succeed(state.submitGate, undefined)
      state.pollsStarted = state.downloadsStarted = state.downloadsDone = state.interrupted = 0
      const created = yield* Harness.send(Harness.post(e4.path, { prompt }))
      const id: string = created.json.task_info.id
      yield* Harness.work
      assert.strictEqual((yield* row(id)).submitState, "submitted")
      yield* TestClock.adjust("1 minute")
      const gate = yield* Deferred.make<void>()
      state.pollGate = gate
      const working = yield* Effect.fork(Harness.work)
      yield* waitFor(() => state.pollsStarted === 1)
      return { id, gate, working }
    })

  gateway()((it) => {
    it.effect("a poll runs without a heartbeat; one that outlived its lease while another replica took the task writes nothing", () =>
      Effect.gen(function*() {
        const { gate, id, working } = yield* pollRunning("slow poll")
        const claimed = yield* row(id)
        // Past two heartbeats: a poll renews nothing (it only reads at the vendor).
        yield* TestClock.adjust(Scheduler.heartbeatMs * 2)
        for (let i = 0; i < 100; i++) yield* Effect.yieldNow()
        assert.strictEqual((yield* row(id)).leaseUntil, claimed.leaseUntil)
        yield* steal(id)
        const stolen = yield* row(id)

        // The vendor answers Completed; the mirror's renewal finds the task taken: no copy, no write.
        yield* Deferred.succeed(gate, undefined)
        yield* Fiber.join(working)
        assert.strictEqual(state.interrupted, 0)
        assert.strictEqual(state.downloadsStarted, 0)
        assert.deepStrictEqual(yield* row(id), stolen)
      }))
  })

  gateway()((it) => {
    it.effect("a mirror after a poll that outlived its lease renews the lease before it starts", () =>
      Effect.gen(function*() {
        const { gate, id, working } = yield* pollRunning("late mirror")
        // The poll takes longer than the lease; nobody else claimed the task meanwhile.
        yield* TestClock.adjust(Scheduler.leaseMs + 1_000)
        yield* Deferred.succeed(gate, undefined)
        yield* waitFor(() => state.downloadsStarted === 1)
        const now = yield* Clock.currentTimeMillis
        const held = yield* row(id)
        assert.strictEqual(held.leaseUntil, now + Scheduler.leaseMs)
        const stolen = yield* (yield* TaskStore).claimDue("other-replica", now, Scheduler.leaseMs, 100)
        assert.isFalse(stolen.some((t) => t.id === id))
        yield* Deferred.succeed(state.downloadGate, undefined)
        yield* Fiber.join(working)
        assert.strictEqual((yield* row(id)).status, "completed")
        assert.strictEqual(state.downloadsDone, 1)
      }))
  })

  gateway()((it) => {
    it.effect("a mirror whose lease ran out and was taken during the poll does not start", () =>
      Effect.gen(function*() {
        const { gate, id, working } = yield* pollRunning("taken mirror")
        yield* TestClock.adjust(Scheduler.leaseMs + 1_000)
        yield* steal(id)
        const stolen = yield* row(id)
        yield* Deferred.succeed(gate, undefined)
        yield* Fiber.join(working)
        assert.strictEqual(state.downloadsStarted, 0)
        assert.deepStrictEqual(yield* row(id), stolen)
        const sql = yield* SqlClient.SqlClient
        assert.strictEqual((yield* sql`SELECT key FROM media WHERE task_id = ${id}`).length, 0)
      }))
  })

  gateway()((it) => {
    it.effect("stopping the workers releases this process's task, kept-response and delivery leases at once", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const scheduler = yield* Scheduler.Scheduler
        const responses = yield* ResponsesService.ResponsesService
        const webhooks = yield* Webhooks.Webhooks
        const now = yield* Clock.currentTimeMillis
        const later = now + 3_600_000
        const created = yield* Harness.send(Harness.post(e4.path, { prompt: "held" }))
        const taskId = created.json.task_info.id
        yield* sql`UPDATE tasks SET next_run_at = ${later} WHERE id = ${taskId}`
        // The workers first: on SQLite they drop every lease when they start (one process owns it).
        const scope = yield* Scope.make()
        yield* Layer.buildWithScope(
          Layer.mergeAll(Scheduler.layerWorker, ResponsesService.layerWorker, Webhooks.layerWorker),
          scope
        )
        // Rows leased to this process, not due again for an hour (so the loops leave them alone).
        yield* sql`UPDATE tasks SET lease_owner = ${scheduler.owner}, lease_until = ${now + 30_000} WHERE id = ${taskId}`
        yield* sql`INSERT INTO responses (id, tenant, entry_id, mode, status, background, body, next_poll_at, deadline_at,
            lease_owner, lease_until, created_at, updated_at, expires_at, version)
          VALUES ('resp_held', 'tenant', 'entry', 'live', 'in_progress', 1, '{}', ${later}, ${later},
            ${responses.owner}, ${now + 30_000}, ${now}, ${now}, ${later}, 0)`
        yield* sql`INSERT INTO webhook_deliveries (id, endpoint_id, tenant, event_id, type, payload, status, next_attempt_at,
            lease_owner, lease_until, created_at)
          VALUES ('dlv_held', 'ep', 'tenant', 'evt', 'task.completed', '{}', 'pending', ${later},
            ${webhooks.owner}, ${now + 30_000}, ${now})`
        // Someone else's lease stays.
        yield* sql`INSERT INTO webhook_deliveries (id, endpoint_id, tenant, event_id, type, payload, status, next_attempt_at,
            lease_owner, lease_until, created_at)
          VALUES ('dlv_other', 'ep', 'tenant', 'evt2', 'task.completed', '{}', 'pending', ${later},
            'other-replica', ${now + 30_000}, ${now})`

        yield* Effect.yieldNow()
        yield* Scope.close(scope, Exit.void)

        const owners = (table: "tasks" | "responses" | "webhook_deliveries", id: string) =>
          Effect.map(sql`SELECT lease_owner, lease_until FROM ${sql(table)} WHERE id = ${id}`, (rows) => rows[0])
        assert.deepStrictEqual(yield* owners("tasks", taskId), { lease_owner: null, lease_until: null })
        assert.deepStrictEqual(yield* owners("responses", "resp_held"), { lease_owner: null, lease_until: null })
        assert.deepStrictEqual(yield* owners("webhook_deliveries", "dlv_held"), { lease_owner: null, lease_until: null })
        assert.strictEqual((yield* owners("webhook_deliveries", "dlv_other"))!.lease_owner, "other-replica")
      }))
  })
})

/**
 * A worker keeps the tasks it polls in hand (tasks/Scheduler.ts, `keep`): a poll that finds its
 * task still running, unchanged, writes nothing while the worker's lease lasts past the next
 * poll; the task is polled again from memory, and its lease alone is renewed when it would run
 * short (written back only at shutdown, past the hand's bound, or for a cadence longer than a lease).
 * Nobody else claims a task in hand; a dead worker's tasks are claimed again once its leases run
 * out; a task cancelled meanwhile stays as the cancel left it; a database that refuses claims does
 * not stop the polls of the tasks in hand. Time is the TestClock. The claim's
 * indexes are checked on SQLite and, with `GATEWAY_TEST_DATABASE_URL`, on PostgreSQL.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { VendorAdapter } from "@genway/core"
import { Registry } from "@genway/registry"
import { assert, describe, it, layer } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/TestClock"
import * as Hand from "../src/platform/Hand.js"
import * as Progress from "../src/tasks/Progress.js"
import * as Scheduler from "../src/tasks/Scheduler.js"
import { TaskStore } from "../src/tasks/Store.js"
import * as Harness from "./harness.js"
import * as Pg from "./pg.js"

const e4 = Registry.entries.find((e) => e.endpoints.includes("E4"))!
const cadenceMs = 5_000

/** The stand-in vendor: every poll answers "still pending" (with `progress` when set), counted. */
const state = { polls: 0, progress: undefined as number | undefined, pollMs: 0 }

const vendor: VendorAdapter.VendorAdapter = {
  vendor: e4.vendor,
  mode: "live",
  submit: () => Effect.succeed({ ref: "job-1", status: "pending" as const }),
  poll: () =>
    Effect.zipLeft(
      Effect.sync((): VendorAdapter.PollOutcome => {
        state.polls++
        return state.progress === undefined
          ? { _tag: "Running", status: "pending" }
          : { _tag: "Running", status: "pending", progress: state.progress }
      }),
      Effect.suspend(() => (state.pollMs > 0 ? Effect.sleep(state.pollMs) : Effect.void))
    ),
  cancel: () => Effect.succeed({ canceled: true }),
  download: () => Effect.succeed({ contentType: "video/mp4", body: Stream.make(new Uint8Array([0, 0, 0, 24])) })
}

const row = (id: string) => Effect.map(Effect.flatMap(TaskStore, (s) => s.findById(id)), Option.getOrThrow)

/** The task was written back: due at `nextRunAt`, its lease given up, one version past `from`. */
const writtenBack = (id: string, nextRunAt: number, from: { readonly version: number }) =>
  Effect.map(row(id), (written) => {
    assert.strictEqual(written.nextRunAt, nextRunAt)
    assert.isNull(written.leaseOwner)
    assert.isNull(written.leaseUntil)
    assert.strictEqual(written.version, from.version + 1)
    return written
  })

/** A gateway polling every 5 s against the stand-in vendor. */
const gatewayLayer = () =>
  Harness.layer({
    live: Effect.succeed(new Map([[e4.vendor, vendor]])),
    settings: { pollIntervalMs: Option.some(cadenceMs) }
  })

/** A gateway of its own per test, so no task of one test is due in the next. */
const gateway = () => layer(gatewayLayer())

/** The stand-in vendor as new: no polls counted, no progress, answering at once. */
const resetVendor = () => {
  state.polls = 0
  state.progress = undefined
  state.pollMs = 0
}

/** A task created and submitted at 0, then claimed by its first poll at 5 s (and kept in hand). */
const firstPoll = (prompt: string) =>
  Effect.gen(function*() {
    resetVendor()
    const created = yield* Harness.send(Harness.post(e4.path, { prompt }))
    const id: string = created.json.task_info.id
    yield* Harness.work
    const submitted = yield* row(id)
    assert.strictEqual(submitted.submitState, "submitted")
    assert.strictEqual(submitted.nextRunAt, cadenceMs)
    assert.isNull(submitted.leaseOwner)
    yield* TestClock.adjust(cadenceMs)
    yield* Harness.work
    assert.strictEqual(state.polls, 1)
    return id
  })

describe("the hand: items by due time", () => {
  it("takes out what is due, earliest first, at most `limit`, and keeps the rest", () => {
    const hand = Hand.make<string>()
    const times = [50, 10, 40, 10, 30, 20, 60, 0, 45]
    times.forEach((t, i) => hand.add(`${t}/${i}`, t))
    assert.strictEqual(hand.size(), times.length)
    assert.deepStrictEqual(hand.takeDue(5, 10), ["0/7"])
    const next = hand.takeDue(40, 3)
    assert.deepStrictEqual(next.map((s) => Number(s.split("/")[0])), [10, 10, 20])
    assert.deepStrictEqual(hand.takeDue(40, 10).map((s) => Number(s.split("/")[0])), [30, 40])
    assert.deepStrictEqual(hand.takeDue(44, 10), [])
    hand.add("1/x", 1)
    assert.deepStrictEqual(hand.takeDue(100, 10), ["1/x", "45/8", "50/0", "60/6"])
    assert.strictEqual(hand.size(), 0)
  })

  it("sums the weights of what it holds; takes everything out in order", () => {
    const hand = Hand.make<string>()
    hand.add("b", 20, 5)
    hand.add("a", 10, 7)
    hand.add("c", 30)
    assert.strictEqual(hand.weight(), 12)
    assert.deepStrictEqual(hand.takeDue(15, 10), ["a"])
    assert.strictEqual(hand.weight(), 5)
    assert.deepStrictEqual(hand.takeAll(), ["b", "c"])
    assert.strictEqual(hand.weight(), 0)
    assert.strictEqual(hand.size(), 0)
  })

  it("orders a thousand random times", () => {
    const hand = Hand.make<number>()
    const times = Array.from({ length: 1_000 }, (_, i) => (i * 7_919) % 1_009)
    for (const t of times) hand.add(t, t)
    const out: Array<number> = []
    for (let now = 0; hand.size() > 0; now += 100) out.push(...hand.takeDue(now, 37))
    assert.deepStrictEqual(out, [...times].sort((a, b) => a - b))
  })
})

describe("a worker keeps the tasks it polls in hand", () => {
  gateway()((it) => {
    it.effect("polled again from memory without a write while the lease lasts; the lease renewed before it runs short", () =>
      Effect.gen(function*() {
        const store = yield* TaskStore
        const id = yield* firstPoll("kept")
        // Claimed at 5 s under a 30 s lease; still pending: kept, nothing written since the claim.
        const claimed = yield* row(id)
        assert.strictEqual(claimed.leaseUntil, cadenceMs + Scheduler.leaseMs)
        assert.isNotNull(claimed.leaseOwner)
        assert.strictEqual(claimed.nextRunAt, cadenceMs)
        // Its stored time is past, so a client's hint is the poll interval (this deployment's), not 1 s.
        const read = yield* Harness.send(Harness.get(`${e4.path}/${id}`))
        assert.strictEqual(read.headers["retry-after"], String(cadenceMs / 1000))

        // Polled every 5 s from the hand. While its next poll starts at least `keepMarginMs` before
        // the lease ends, nothing is written; at the poll where it would not (25 s: the next at 30 s,
        // the lease ending at 35 s), the lease alone is renewed for 30 s from then, and so on: the
        // version never moves, the task is never written back nor claimed again, and no other
        // worker can claim it although its stored `next_run_at` is long past.
        let leaseUntil = claimed.leaseUntil!
        for (let poll = 2; poll <= 13; poll++) {
          const at = poll * cadenceMs
          yield* TestClock.adjust(cadenceMs)
          yield* Harness.work
          assert.strictEqual(state.polls, poll)
          if (at + cadenceMs + Scheduler.keepMarginMs > leaseUntil) leaseUntil = at + Scheduler.leaseMs
          assert.deepStrictEqual(yield* row(id), { ...claimed, leaseUntil }, `at ${at} ms`)
          const other = yield* store.claimDue("other-replica", at, Scheduler.leaseMs, 100)
          assert.isFalse(other.some((t) => t.id === id))
        }
        // Renewed at 25, 45 and 65 s.
        assert.strictEqual(leaseUntil, 65_000 + Scheduler.leaseMs)
      }))
  })

  gateway()((it) => {
    it.effect("a held task taken up with its lease nearly gone is left to the lease; the next claim takes it afresh", () =>
      Effect.gen(function*() {
        const id = yield* firstPoll("late pool")
        const claimed = yield* row(id)
        // Due at 10 s, taken up only at 31 s (a pool that was busy): 4 s of lease left, under half
        // the margin. Not polled by this worker; the row is left as the claim wrote it.
        yield* TestClock.adjust(26_000)
        yield* Harness.work
        assert.strictEqual(state.polls, 1)
        assert.deepStrictEqual(yield* row(id), claimed)
        // Past the lease (35 s): dropped and claimed again, by this worker as by any other.
        yield* TestClock.adjust(5_000)
        yield* Harness.work
        assert.strictEqual(state.polls, 2)
        const again = yield* row(id)
        assert.strictEqual(again.leaseUntil, 36_000 + Scheduler.leaseMs)
      }))
  })

  gateway()((it) => {
    it.effect("at shutdown the held tasks are written back with their next poll time, their leases given up", () =>
      Effect.gen(function*() {
        const id = yield* firstPoll("shutdown")
        const claimed = yield* row(id)
        const scheduler = yield* Scheduler.Scheduler
        yield* scheduler.writeBackHand
        const written = yield* writtenBack(id, 2 * cadenceMs, claimed)
        // Nothing is left in hand: the next pass at 10 s claims it from the database.
        yield* TestClock.adjust(cadenceMs)
        yield* Harness.work
        assert.strictEqual(state.polls, 2)
        assert.strictEqual((yield* row(id)).version, written.version + 1)
      }))
  })

  gateway()((it) => {
    it.effect("a poll that ends late keeps its task, the lease renewed from then; one that ends after another worker took it over writes nothing", () =>
      Effect.gen(function*() {
        const store = yield* TaskStore
        const id = yield* firstPoll("slow vendor")
        const claimed = yield* row(id)
        // The next poll (at 10 s) answers 22 s later, at 32 s: 10 s from then is past the lease (35
        // s), so the lease is renewed to 62 s and the task kept; its next time (15 s) is past, so
        // the next pass polls it.
        state.pollMs = 22_000
        yield* TestClock.adjust(cadenceMs)
        const working = yield* Effect.fork(Harness.work)
        for (let i = 0; i < 100_000 && state.polls < 2; i++) yield* Effect.yieldNow()
        assert.strictEqual(state.polls, 2)
        yield* TestClock.adjust(22_000)
        yield* Fiber.join(working)
        assert.deepStrictEqual(yield* row(id), { ...claimed, leaseUntil: 32_000 + Scheduler.leaseMs })

        // The next poll (at 32 s) answers 40 s later, at 72 s; its lease ended at 62 s and another
        // worker claimed the task at 63 s. The late answer renews nothing and writes nothing.
        state.pollMs = 40_000
        const late = yield* Effect.fork(Harness.work)
        for (let i = 0; i < 100_000 && state.polls < 3; i++) yield* Effect.yieldNow()
        assert.strictEqual(state.polls, 3)
        yield* TestClock.adjust(31_000)
        const taken = (yield* store.claimDue("other-replica", 63_000, Scheduler.leaseMs, 100)).filter((t) => t.id === id)
        assert.strictEqual(taken.length, 1)
        const theirs = yield* row(id)
        assert.strictEqual(theirs.leaseOwner, "other-replica")
        yield* TestClock.adjust(9_000)
        yield* Fiber.join(late)
        assert.deepStrictEqual(yield* row(id), theirs)
      }))
  })

  gateway()((it) => {
    it.effect("a poll that reports progress keeps its task in hand and writes the progress alone, behind it", () =>
      Effect.gen(function*() {
        const id = yield* firstPoll("progress")
        const claimed = yield* row(id)
        const sql = yield* SqlClient.SqlClient
        const progress = yield* Progress.ProgressWriter
        const percent = () => Effect.map(sql<{ readonly percent: number }>`SELECT percent FROM task_progress WHERE task_id = ${id}`, (rows) => rows.map((r) => Number(r.percent)))
        for (const [poll, value] of [[2, 40], [3, 55]] as const) {
          state.progress = value
          yield* TestClock.adjust(cadenceMs)
          yield* Harness.work
          assert.strictEqual(state.polls, poll)
          // Read at once in this process; in the table once written (at the turn's end, here flushed).
          assert.strictEqual((yield* progress.latest(id))?.percent, value)
          yield* progress.flush
          assert.deepStrictEqual(yield* percent(), [value])
          assert.deepStrictEqual(yield* row(id), claimed)
        }
        // The listing shows it while the task runs.
        const listed = yield* Harness.send(Harness.get(`/v1/tasks?limit=100`))
        const mine = listed.json.data.find((t: { task_info: { id: string } }) => t.task_info.id === id)
        assert.deepStrictEqual(mine.progress, { percent: 55, source: "vendor" })
      }))
  })

  gateway()((it) => {
    it.effect("a worker gone with tasks in hand: once its lease runs out another claims them; its stale copy neither polls nor writes", () =>
      Effect.gen(function*() {
        const store = yield* TaskStore
        const id = yield* firstPoll("orphaned")
        const claimed = yield* row(id)
        // Just before the lease ends: still this worker's.
        const early = yield* store.claimDue("other-replica", claimed.leaseUntil! - 1, Scheduler.leaseMs, 100)
        assert.isFalse(early.some((t) => t.id === id))
        // Just after: the lease is dropped and the task claimed, due since 5 s, in one claim.
        yield* TestClock.adjust(Scheduler.leaseMs)
        const late = (yield* store.claimDue("other-replica", claimed.leaseUntil! + 1, Scheduler.leaseMs, 100)).filter((t) => t.id === id)
        assert.strictEqual(late.length, 1)
        assert.strictEqual(late[0]!.leaseOwner, "other-replica")
        const taken = yield* row(id)
        assert.isAbove(taken.version, claimed.version)

        // The first worker was only paused: its hand still holds the task, but with its lease
        // gone it does not poll it, and writes nothing; the copy is dropped.
        yield* Harness.work
        assert.strictEqual(state.polls, 1)
        assert.deepStrictEqual(yield* row(id), taken)
        yield* TestClock.adjust(cadenceMs)
        yield* Harness.work
        assert.strictEqual(state.polls, 1, "the stale copy was dropped from the hand")
        assert.deepStrictEqual(yield* row(id), taken)
      }))
  })

  gateway()((it) => {
    it.effect("a task cancelled while in hand stays cancelled; the worker drops it at its next write", () =>
      Effect.gen(function*() {
        const id = yield* firstPoll("cancelled")
        const cancel = yield* Harness.send(Harness.post(`${e4.path}/${id}/cancel`, {}))
        assert.strictEqual(cancel.status, 200)
        const cancelled = yield* row(id)
        assert.strictEqual(cancelled.status, "failed")
        // Polled from the hand until its lease would run out (reads at the vendor), never written.
        for (let i = 0; i < 8; i++) {
          yield* TestClock.adjust(cadenceMs)
          yield* Harness.work
          assert.deepStrictEqual(yield* row(id), cancelled)
        }
        assert.strictEqual(state.polls, 5, "polled while the lease lasted, then dropped")
      }))
  })
  gateway()((it) => {
    it.effect("while the database refuses claims, the tasks in hand are still polled; claims resume with it", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const id = yield* firstPoll("database down")
        const claimed = yield* row(id)
        // From now on no lease can be taken or dropped (as when the database refuses writes); a
        // task created meanwhile is stored, due at once, and every claim fails on it.
        yield* sql`CREATE TRIGGER refuse_claims BEFORE UPDATE OF lease_owner ON tasks BEGIN SELECT RAISE(ABORT, 'claims refused'); END`
        const created = yield* Harness.send(Harness.post(e4.path, { prompt: "during the outage" }))
        assert.strictEqual(created.status, 202)
        const waiting: string = created.json.task_info.id
        const claimAttempt = yield* Effect.either(Effect.flatMap(TaskStore, (s) => s.claimDue("probe", 2 * cadenceMs, Scheduler.leaseMs, 10)))
        assert.strictEqual(claimAttempt._tag, "Left", "claims fail while the trigger stands")
        // At 10 and 15 s the claim fails; the held task is polled from the hand all the same.
        for (let poll = 2; poll <= 3; poll++) {
          yield* TestClock.adjust(cadenceMs)
          yield* Harness.work
          assert.strictEqual(state.polls, poll)
          assert.deepStrictEqual(yield* row(id), claimed)
          assert.isNull((yield* row(waiting)).leaseOwner)
        }
        // The database takes writes again: the waiting task is claimed and submitted, then both
        // are polled at 20 s.
        yield* sql`DROP TRIGGER refuse_claims`
        yield* Harness.work
        assert.strictEqual((yield* row(waiting)).submitState, "submitted")
        yield* TestClock.adjust(cadenceMs)
        yield* Harness.work
        assert.strictEqual(state.polls, 5)
      }))
  })
})

describe("the hand's bound", () => {
  // Room for one task of the test's size, not two (a 600-character prompt: about 1.5 KB apiece).
  const bound = 3_000
  layer(gatewayLayer().pipe(Layer.provide(Layer.succeed(Scheduler.MaxHandBytes, bound))))((it) => {
    it.effect("past its bound a poll writes its task back, as when the lease runs short", () =>
      Effect.gen(function*() {
        resetVendor()
        const ids: Array<string> = []
        for (const p of ["a", "b"]) {
          const created = yield* Harness.send(Harness.post(e4.path, { prompt: p.repeat(600) }))
          ids.push(created.json.task_info.id)
        }
        yield* Harness.work
        const weights = yield* Effect.forEach(ids, (id) => Effect.map(row(id), Scheduler.heldBytes))
        for (const w of weights) assert.isTrue(w <= bound && w * 2 > bound, `one task weighs ${w} bytes`)
        // Both polled at 5 s: the first kept (the row as claimed), the other written back.
        yield* TestClock.adjust(cadenceMs)
        yield* Harness.work
        assert.strictEqual(state.polls, 2)
        const rows = yield* Effect.forEach(ids, row)
        const held = rows.filter((r) => r.leaseOwner !== null)
        const back = rows.filter((r) => r.leaseOwner === null)
        assert.strictEqual(held.length, 1)
        assert.strictEqual(back.length, 1)
        assert.strictEqual(held[0]!.nextRunAt, cadenceMs)
        assert.strictEqual(back[0]!.nextRunAt, 2 * cadenceMs)
        // At 10 s both are polled again: one from the hand, one claimed from the database.
        yield* TestClock.adjust(cadenceMs)
        yield* Harness.work
        assert.strictEqual(state.polls, 4)
        assert.deepStrictEqual(yield* row(held[0]!.id), held[0])
      }))
  })
})

/** The claim through the new indexes: unleased due tasks, and leases that ran out dropped first. */
const claimsThroughIndexes = (store: Context.Tag.Service<TaskStore>, sql: SqlClient.SqlClient) =>
  Effect.gen(function*() {
    const ids: Array<string> = []
    for (let i = 0; i < 4; i++) {
      const task = Pg.sandboxTask(e4, 200 + i)
      ids.push(task.id)
      yield* store.create(task, 0)
    }
    const mine = <T extends { readonly id: string }>(tasks: ReadonlyArray<T>) => tasks.filter((t) => ids.includes(t.id))
    const first = mine(yield* store.claimDue("worker-1", 0, 30_000, 100))
    assert.strictEqual(first.length, 4)
    // Held (due long ago, leased): nobody claims them until the lease ends.
    assert.strictEqual(mine(yield* store.claimDue("worker-2", 29_999, 30_000, 100)).length, 0)
    // Two are given back meanwhile, due at 10 s.
    for (const t of first.slice(0, 2)) yield* store.reschedule(t, 10_000)
    assert.strictEqual(mine(yield* store.claimDue("worker-2", 9_999, 30_000, 100)).length, 0)
    const given = mine(yield* store.claimDue("worker-2", 10_000, 30_000, 100))
    assert.deepStrictEqual(given.map((t) => t.id).sort(), first.slice(0, 2).map((t) => t.id).sort())
    // Past the first lease: the other two, at once.
    const orphans = mine(yield* store.claimDue("worker-3", 30_001, 30_000, 100))
    assert.deepStrictEqual(orphans.map((t) => t.id).sort(), first.slice(2).map((t) => t.id).sort())
    for (const t of orphans) assert.strictEqual(t.leaseOwner, "worker-3")
    // The planner reads the claimable tasks through their partial index.
    const plan = yield* sql.onDialectOrElse({
      pg: () => Effect.succeed([] as ReadonlyArray<string>),
      orElse: () =>
        Effect.map(
          sql<{ readonly detail: string }>`EXPLAIN QUERY PLAN SELECT id FROM tasks
            WHERE status IN ('pending', 'processing') AND lease_owner IS NULL AND next_run_at <= 0 ORDER BY next_run_at LIMIT 5`,
          (rows) => rows.map((r) => r.detail)
        )
    })
    if (plan.length > 0) assert.isTrue(plan.some((d) => d.includes("tasks_claimable")), plan.join("; "))
  })

describe("claims through the claimable and leased indexes", () => {
  layer(Harness.layer())((it) => {
    it.effect("SQLite: held tasks are skipped until their lease ends, given-back ones are due at their time", () =>
      Effect.gen(function*() {
        yield* claimsThroughIndexes(yield* TaskStore, yield* SqlClient.SqlClient)
      }))
  })

  describe.skipIf(!Pg.available("hand.test.ts"))("PostgreSQL", () => {
    it.scoped("held tasks are skipped until their lease ends, given-back ones are due at their time", () =>
      Effect.gen(function*() {
        const { replica } = yield* Pg.privateSchema
        const ctx = yield* Layer.build(replica(Harness.tempDir()))
        yield* claimsThroughIndexes(Context.get(ctx, TaskStore), Context.get(ctx, SqlClient.SqlClient))
      }))
  })
})

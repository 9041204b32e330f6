/**
 * Polls that find their tasks still running are rescheduled together, in one statement
 * (`TaskStore.reschedule`): each still gets its own outcome, a task changed meanwhile is left
 * alone, and the others run again at their own times. The leases of tasks kept in hand are renewed
 * together the same way (`TaskStore.renewHeld`): only under the same owner, at the same version,
 * unfinished. On SQLite, and on PostgreSQL when `GATEWAY_TEST_DATABASE_URL` is set (skipped
 * otherwise, saying so).
 */
import { Registry } from "@genway/registry"
import { assert, describe, it, layer } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as SqlClient from "@effect/sql/SqlClient"
import { TaskStore } from "../src/tasks/Store.js"
import * as Harness from "./harness.js"
import * as Pg from "./pg.js"

const entry = Registry.entries.find((e) => e.endpoints.includes("E4"))!

const rescheduleTogether = (store: Context.Tag.Service<TaskStore>) =>
  Effect.gen(function*() {
    const ids: Array<string> = []
    for (let i = 0; i < 5; i++) {
      const task = Pg.sandboxTask(entry, i)
      ids.push(task.id)
      yield* store.create(task, 0)
    }
    const claimed = (yield* store.claimDue("worker-1", 0, 30_000, 100)).filter((t) => ids.includes(t.id))
    assert.strictEqual(claimed.length, 5)
    // Another worker changed the last one since it was claimed.
    const changed = Option.getOrThrow(yield* store.update(claimed[4]!, { status: "processing" }, 1))

    // Whole milliseconds are stored (a drawn poll delay has a fraction; PostgreSQL's column is BIGINT).
    const outcomes = yield* Effect.all(claimed.map((t, i) => store.reschedule(t, 1_000 + i + (i === 0 ? 0.4 : 0))), { concurrency: "unbounded" })

    for (let i = 0; i < 4; i++) {
      const stored = Option.getOrThrow(yield* store.findById(claimed[i]!.id))
      assert.deepStrictEqual(Option.getOrThrow(outcomes[i]!), stored)
      assert.strictEqual(stored.nextRunAt, 1_000 + i)
      assert.strictEqual(stored.attempts, 0)
      assert.isNull(stored.leaseOwner)
      assert.isNull(stored.leaseUntil)
      assert.strictEqual(stored.version, claimed[i]!.version + 1)
      assert.strictEqual(stored.status, "pending")
    }
    assert.isTrue(Option.isNone(outcomes[4]!))
    assert.deepStrictEqual(Option.getOrThrow(yield* store.findById(changed.id)), changed)

    // Due again at their own times: at 1,002 the first three.
    const due = (yield* store.claimDue("worker-2", 1_002, 30_000, 100)).filter((t) => ids.includes(t.id))
    assert.deepStrictEqual(due.map((t) => t.id).sort(), claimed.slice(0, 3).map((t) => t.id).sort())
  })

const renewTogether = (store: Context.Tag.Service<TaskStore>) =>
  Effect.gen(function*() {
    const ids: Array<string> = []
    for (let i = 0; i < 6; i++) {
      const task = Pg.sandboxTask(entry, 50 + i)
      ids.push(task.id)
      yield* store.create(task, 0)
    }
    const claimed = (yield* store.claimDue("worker-1", 0, 30_000, 100)).filter((t) => ids.includes(t.id))
    assert.strictEqual(claimed.length, 6)
    // Since the claim: one task changed (a cancel, say), one finished; and one is asked for by a
    // worker that does not hold it (as after another worker took it over).
    const changed = Option.getOrThrow(yield* store.update(claimed[3]!, { status: "processing" }, 1))
    const finished = Option.getOrThrow(yield* store.update(claimed[4]!, { status: "completed", finishedAt: 1 }, 1))
    const asked = claimed.map((t, i) => (i === 5 ? { task: t, owner: "worker-2" } : { task: t, owner: "worker-1" }))

    // Whole milliseconds are stored.
    const outcomes = yield* Effect.all(asked.map(({ owner, task }, i) => store.renewHeld(task, owner, 40_000 + i + (i === 0 ? 0.4 : 0))), {
      concurrency: "unbounded"
    })

    for (let i = 0; i < 3; i++) {
      const stored = Option.getOrThrow(yield* store.findById(claimed[i]!.id))
      assert.deepStrictEqual(Option.getOrThrow(outcomes[i]!), stored)
      assert.strictEqual(stored.leaseUntil, 40_000 + i)
      assert.strictEqual(stored.leaseOwner, "worker-1")
      // Nothing else moves: the version (so the worker's next compare-and-set applies), the next run.
      assert.strictEqual(stored.version, claimed[i]!.version)
      assert.strictEqual(stored.nextRunAt, claimed[i]!.nextRunAt)
    }
    for (const i of [3, 4, 5]) assert.isTrue(Option.isNone(outcomes[i]!), `task ${i} was renewed`)
    assert.deepStrictEqual(Option.getOrThrow(yield* store.findById(changed.id)), changed)
    assert.deepStrictEqual(Option.getOrThrow(yield* store.findById(finished.id)), finished)
    assert.strictEqual(Option.getOrThrow(yield* store.findById(claimed[5]!.id)).leaseUntil, 30_000)

    // Renewed, they stay out of other workers' claims past the first lease; the unfinished ones not
    // renewed (the changed one, the one asked for by a stranger) do not.
    const other = (yield* store.claimDue("worker-3", 30_001, 30_000, 100)).filter((t) => ids.includes(t.id))
    assert.deepStrictEqual(other.map((t) => t.id).sort(), [claimed[3]!.id, claimed[5]!.id].sort())
  })

describe("reschedules written together", () => {
  layer(Harness.layer())((it) => {
    it.effect("SQLite: each poll gets its own outcome; a task changed meanwhile stays as it is", () =>
      Effect.flatMap(TaskStore, rescheduleTogether))

    it.effect("SQLite: lease renewals, each with its own outcome: only the owner's, at its version, unfinished", () =>
      Effect.flatMap(TaskStore, renewTogether))

    it.effect("SQLite: when the statement fails every waiting poll gets the error, and the next reschedules are written", () =>
      Effect.gen(function*() {
        const store = yield* TaskStore
        const sql = yield* SqlClient.SqlClient
        const task = Pg.sandboxTask(entry, 9)
        yield* store.create(task, 0)
        const [claimed] = (yield* store.claimDue("worker-3", 0, 30_000, 100)).filter((t) => t.id === task.id)
        yield* sql`ALTER TABLE tasks RENAME TO tasks_away`
        const failed = yield* Effect.all([store.reschedule(claimed!, 5_000), store.reschedule(claimed!, 6_000)], {
          concurrency: "unbounded",
          mode: "either"
        })
        yield* sql`ALTER TABLE tasks_away RENAME TO tasks`
        for (const outcome of failed) assert.strictEqual(outcome._tag === "Left" && outcome.left._tag, "SqlError")
        const written = yield* store.reschedule(claimed!, 7_000)
        assert.strictEqual(Option.getOrThrow(written).nextRunAt, 7_000)
        assert.strictEqual(Option.getOrThrow(yield* store.findById(task.id)).nextRunAt, 7_000)
      }))
  })

  layer(Harness.layer())((it) => {
    // On SQLite a step that changes a task without changing its state runs as a member of the
    // group commit (tasks/Store.ts, `update`): steps that meet share commits. Written alone, each
    // committed on its own: at least one WAL frame per step (36 for these 12).
    it.effect("SQLite: steps that change no state and meet share their commits (fewer WAL frames than steps)", () =>
      Effect.gen(function*() {
        const store = yield* TaskStore
        const sql = yield* SqlClient.SqlClient
        const n = 12
        const ids: Array<string> = []
        for (let i = 0; i < n; i++) {
          const task = Pg.sandboxTask(entry, 100 + i)
          ids.push(task.id)
          yield* store.create(task, 0)
        }
        const claimed = (yield* store.claimDue("worker-4", 0, 30_000, 100)).filter((t) => ids.includes(t.id))
        assert.strictEqual(claimed.length, n)
        yield* sql`PRAGMA wal_checkpoint(TRUNCATE)`
        const updated = yield* Effect.all(claimed.map((t) => store.update(t, { attempts: t.attempts + 1 }, 1)), { concurrency: "unbounded" })
        const [wal] = yield* sql<{ readonly log: number }>`PRAGMA wal_checkpoint(PASSIVE)`
        for (const [i, t] of claimed.entries()) {
          const stored = Option.getOrThrow(yield* store.findById(t.id))
          assert.deepStrictEqual(Option.getOrThrow(updated[i]!), stored)
          assert.strictEqual(stored.attempts, t.attempts + 1)
        }
        assert.isTrue(wal!.log < n, `${wal!.log} WAL frames for ${n} steps: each was committed on its own`)
      }))
  })

  describe.skipIf(!Pg.available("reschedule.test.ts"))("PostgreSQL", () => {
    it.scoped("each poll gets its own outcome; a task changed meanwhile stays as it is", () =>
      Effect.gen(function*() {
        const { replica } = yield* Pg.privateSchema
        const ctx = yield* Layer.build(replica(Harness.tempDir()))
        yield* rescheduleTogether(Context.get(ctx, TaskStore))
      }))

    it.scoped("lease renewals, each with its own outcome: only the owner's, at its version, unfinished", () =>
      Effect.gen(function*() {
        const { replica } = yield* Pg.privateSchema
        const ctx = yield* Layer.build(replica(Harness.tempDir()))
        yield* renewTogether(Context.get(ctx, TaskStore))
      }))
  })
})

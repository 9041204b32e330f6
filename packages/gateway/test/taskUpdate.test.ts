/**
 * A task update returns the task as it now is, built rather than read back (tasks/Store.ts,
 * `update`): after each kind of step a worker takes, the row read back is that task, field for
 * field. On SQLite, and on PostgreSQL when
 * `GATEWAY_TEST_DATABASE_URL` is set (skipped otherwise, saying so).
 */
import { Registry } from "@genway/registry"
import { TaskInfo } from "@genway/core"
import { assert, describe, it, layer } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { type Task, type TaskPatch, TaskStore } from "../src/tasks/Store.js"
import * as Harness from "./harness.js"
import * as Pg from "./pg.js"

const entry = Registry.entries.find((e) => e.endpoints.includes("E4"))!

const steps = (store: Context.Tag.Service<TaskStore>) =>
  Effect.gen(function*() {
    /** Applies `patch` and checks the row read back against the task the update returned. */
    const step = (task: Task, patch: TaskPatch, now: number, note?: string) =>
      Effect.gen(function*() {
        const updated = Option.getOrThrow(yield* store.update(task, patch, now, note))
        const stored = Option.getOrThrow(yield* store.findById(task.id))
        assert.deepStrictEqual(stored, updated)
        assert.strictEqual(stored.version, task.version + 1)
        return stored
      })
    const claim = (id: string, now: number) =>
      Effect.map(store.claimDue("worker-u", now, 30_000, 100), (rows) => rows.find((t) => t.id === id)!)

    const failing = Pg.sandboxTask(entry, 1)
    yield* store.create(failing, 0)
    let task = yield* claim(failing.id, 0)
    task = yield* step(task, { submitState: "submitting", leaseUntil: 40_000 }, 10)
    assert.strictEqual(task.status, "pending")
    task = yield* step(task, {
      status: "processing",
      submitState: "submitted",
      upstreamRef: "job-1",
      submittedAt: 20,
      attempts: 0,
      nextRunAt: 5_020,
      leaseOwner: null,
      leaseUntil: null
    }, 20, "submitted")
    assert.strictEqual(task.updatedAt, 20)
    task = yield* step(task, { attempts: 1, nextRunAt: 9_000, leaseOwner: null, leaseUntil: null }, 30, "retry: busy")
    assert.strictEqual(task.updatedAt, 20, "a step that keeps the status keeps updated_at")
    task = yield* claim(failing.id, 9_000)
    const error = new TaskInfo.TaskError({ code: 3001, title: "Execution error", detail: "the vendor failed it" })
    task = yield* step(task, { status: "failed", error, finishedAt: 9_100, leaseOwner: null, leaseUntil: null }, 9_100, "failed: 3001")
    assert.deepStrictEqual(task.error, { code: 3001, title: "Execution error", detail: "the vendor failed it" })
    assert.deepStrictEqual([task.upstreamRef, task.submittedAt, task.finishedAt], ["job-1", 20, 9_100])

    const completing = Pg.sandboxTask(entry, 2)
    yield* store.create(completing, 0)
    let done = yield* claim(completing.id, 0)
    done = yield* step(done, { status: "processing", submitState: "submitted", upstreamRef: "job-2", submittedAt: 5, nextRunAt: 50, leaseOwner: null, leaseUntil: null }, 5, "submitted")
    done = yield* claim(completing.id, 50)
    done = yield* step(done, {
      status: "completed",
      result: [{ media: `${completing.id}/0.mp4` }, { url: "https://cdn.vendor.example/1.mp4" }],
      reportedSeconds: 5.5,
      finishedAt: 60,
      leaseOwner: null,
      leaseUntil: null
    }, 60, "completed with 2 videos")
    assert.deepStrictEqual(done.result, [{ media: `${completing.id}/0.mp4` }, { url: "https://cdn.vendor.example/1.mp4" }])
    assert.deepStrictEqual([done.reportedSeconds, done.error, done.attempts], [5.5, null, 0])

    // A stale update (the version moved on) writes nothing.
    assert.isTrue(Option.isNone(yield* store.update({ ...done, version: done.version - 1 }, { attempts: 7 }, 70)))
    assert.strictEqual(Option.getOrThrow(yield* store.findById(completing.id)).attempts, 0)
  })

describe("task updates", () => {
  layer(Harness.layer())((it) => {
    it.effect("SQLite: each step's row reads back as the task the update returned", () => Effect.flatMap(TaskStore, steps))
  })

  describe.skipIf(!Pg.available("taskUpdate.test.ts"))("PostgreSQL", () => {
    it.scoped("each step's row reads back as the task the update returned", () =>
      Effect.gen(function*() {
        const { replica } = yield* Pg.privateSchema
        const ctx = yield* Layer.build(replica(Harness.tempDir()))
        yield* steps(Context.get(ctx, TaskStore))
      }))
  })
})

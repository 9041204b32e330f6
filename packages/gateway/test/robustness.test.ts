/**
 * Edge cases found in review: a submit in flight keeps its task from other workers, a failed
 * result copy fails the task at once, idempotent retries with inline images, odd request paths.
 */
import { TaskInfo, VendorAdapter } from "@genway/core"
import { Registry } from "@genway/registry"
import { assert, describe, layer } from "@effect/vitest"
import * as Clock from "effect/Clock"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as TestClock from "effect/TestClock"
import { SampleMedia } from "@genway/core"
import { TaskStore } from "../src/tasks/Store.js"
import * as TaskBodies from "../src/tasks/Bodies.js"
import * as Harness from "./harness.js"

const e4 = Registry.entries.find((e) => e.endpoints.includes("E4"))!
const e8 = Registry.entries.find((e) => e.endpoints.includes("E8"))!

/** A vendor-b stand-in whose submit waits for a gate, and whose results cannot be downloaded. */
const gate = Effect.runSync(Deferred.make<void>())
let submits = 0
const slowVendor: VendorAdapter.VendorAdapter = {
  vendor: "vendor-b",
  mode: "live",
  submit: () => Effect.as(Effect.zipRight(Effect.sync(() => submits++), Deferred.await(gate)), { ref: "job-1", status: "pending" as const }),
  poll: () => Effect.succeed({ _tag: "Completed", media: [{ _tag: "Url", url: "https://cdn.vendor.example/x.mp4" }] }),
  download: () =>
    Effect.fail(new VendorAdapter.Rejected({
      error: new TaskInfo.TaskError({ code: 400, title: "Invalid request", detail: "the result was withheld by moderation" })
    }))
}

describe("robustness", () => {
  layer(Harness.layer({ live: Effect.succeed(new Map([["vendor-b", slowVendor]])) }))((it) => {
    it.effect("a submit in flight keeps its lease: no other worker can claim the task and submit again", () =>
      Effect.gen(function*() {
        const created = yield* Harness.send(Harness.post(e4.path, { prompt: "slow" }))
        const id = created.json.task_info.id
        const working = yield* Effect.fork(Harness.work)
        // Wait until the submit is in flight, then let the claim's own lease run out.
        while (submits === 0) yield* Effect.yieldNow()
        yield* TestClock.adjust("31 seconds")
        const store = yield* TaskStore
        const now = yield* Clock.currentTimeMillis
        const stolen = yield* store.claimDue("other-replica", now, 30_000, 100)
        assert.isFalse(stolen.some((t) => t.id === id))
        yield* Deferred.succeed(gate, undefined)
        yield* Fiber.join(working)
        const task = Option.getOrThrow(yield* store.findById(id))
        assert.strictEqual(task.submitState, "submitted")
        assert.strictEqual(submits, 1)

        // The vendor completes, but its result cannot be fetched: the task fails with the reason.
        yield* TestClock.adjust("10 seconds")
        yield* Harness.work
        const done = yield* Harness.send(Harness.get(`${e4.path}/${id}`))
        assert.strictEqual(done.json.task_info.status, "failed")
        assert.strictEqual(done.json.task_info.error.code, 400)
        assert.match(done.json.task_info.error.detail, /moderation/)
      }))

    it.effect("an idempotent retry of a body with a spooled image returns the first task", () =>
      Effect.gen(function*() {
        const image = Buffer.from(SampleMedia.png(1400, 1400, 7)).toString("base64")
        assert.isAbove(image.length, TaskBodies.spoolThreshold)
        const body = { image, prompt: "big" }
        const headers = { "idempotency-key": "big-1" }
        const a = yield* Harness.send(Harness.post(e8.path, body, Harness.tokenA, headers))
        const b = yield* Harness.send(Harness.post(e8.path, body, Harness.tokenA, headers))
        assert.strictEqual(a.status, 202)
        assert.strictEqual(b.status, 202)
        assert.strictEqual(b.json.task_info.id, a.json.task_info.id)
      }))

    it.effect("a request path that is not a valid URL is a JSON 404 with a request id", () =>
      Effect.gen(function*() {
        const r = yield* Harness.send(Harness.get("//%5B"))
        assert.strictEqual(r.status, 404)
        assert.strictEqual(r.json.error.code, 404)
        assert.isString(r.headers["x-request-id"])
        const media = yield* Harness.send(Harness.get("/media/%E0%A4%A"))
        assert.strictEqual(media.status, 404)
        assert.strictEqual(media.json.error.code, 404)
      }))
  })
})

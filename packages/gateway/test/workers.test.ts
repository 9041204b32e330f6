/**
 * The running workers (`Scheduler.loop`, a `WorkPool`): a submit that hangs holds its own slot
 * only; a task created after it is submitted, polled and completed meanwhile. Time is the
 * TestClock; the vendor stand-in's submit of the "slow" prompt waits on a gate the test opens.
 */
import type { VendorAdapter } from "@genway/core"
import { Registry } from "@genway/registry"
import { assert, describe, layer } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/TestClock"
import { Scheduler } from "../src/tasks/Scheduler.js"
import { TaskStore } from "../src/tasks/Store.js"
import * as Harness from "./harness.js"

const e4 = Registry.entries.find((e) => e.endpoints.includes("E4"))!

const gate = Effect.runSync(Deferred.make<void>())
const submitted: Array<string> = []
const vendor: VendorAdapter.VendorAdapter = {
  vendor: "vendor-b",
  mode: "live",
  submit: (task) =>
    Effect.gen(function*() {
      const prompt = (task.body as { prompt: string }).prompt
      if (prompt === "slow") yield* Deferred.await(gate)
      submitted.push(prompt)
      return { ref: `job-${prompt}`, status: "pending" as const }
    }),
  poll: () => Effect.succeed({ _tag: "Completed", media: [{ _tag: "Url", url: "https://cdn.vendor.example/x.mp4" }] }),
  download: () => Effect.succeed({ contentType: "video/mp4", body: Stream.make(new Uint8Array([0, 0, 0, 24, 102, 116, 121, 112])) })
}

const status = (id: string) =>
  Effect.map(Effect.flatMap(TaskStore, (s) => s.findById(id)), (t) => Option.getOrThrow(t).status)

describe("workers", () => {
  layer(Harness.layer({ live: Effect.succeed(new Map([["vendor-b", vendor]])) }))((it) => {
    it.effect("a submit that hangs holds its own slot only: a task created after it completes meanwhile", () =>
      Effect.gen(function*() {
        const scheduler = yield* Scheduler
        const loop = yield* Effect.fork(scheduler.loop)
        const slow = (yield* Harness.send(Harness.post(e4.path, { prompt: "slow" }))).json.task_info.id
        yield* TestClock.adjust("1 second")
        assert.deepStrictEqual(submitted, [])
        assert.strictEqual(yield* status(slow), "pending")

        const quick = (yield* Harness.send(Harness.post(e4.path, { prompt: "quick" }))).json.task_info.id
        for (let i = 0; i < 60 && (yield* status(quick)) !== "completed"; i++) yield* TestClock.adjust("1 second")
        assert.strictEqual(yield* status(quick), "completed")
        assert.deepStrictEqual(submitted, ["quick"])

        // The hung submit was never given up on, nor submitted twice.
        yield* Deferred.succeed(gate, undefined)
        for (let i = 0; i < 60 && (yield* status(slow)) !== "completed"; i++) yield* TestClock.adjust("1 second")
        assert.strictEqual(yield* status(slow), "completed")
        assert.deepStrictEqual(submitted, ["quick", "slow"])
        yield* Fiber.interrupt(loop)
      }))
  })
})

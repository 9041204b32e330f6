import { assert, describe, it } from "@effect/vitest"
import { VendorAdapter } from "@genway/core"
import * as Effect from "effect/Effect"
import * as Logger from "effect/Logger"
import { Outcome, Protocols } from "../src/index.js"
import { Fixtures } from "../src/testing/index.js"

describe("Outcome", () => {
  it("task errors carry their code's title unless given one", () => {
    assert.deepStrictEqual({ ...Outcome.taskError(400, "bad size") }, { code: 400, title: "Invalid request", detail: "bad size" })
    assert.deepStrictEqual({ ...Outcome.taskError(3001, "boom") }, { code: 3001, title: "Execution error", detail: "boom" })
    assert.strictEqual(Outcome.rejected(3001, "x", "Content filtered").error.title, "Content filtered")
  })

  it("a retry carries the vendor's hint only when there is one", () => {
    assert.isFalse("retryAfter" in Outcome.retryable("busy"))
    assert.strictEqual(Outcome.retryable("busy", "2 seconds").retryAfter, "2 seconds")
  })

  it("reported seconds: numbers or numeric strings, summed; none when any is missing or unreadable", () => {
    assert.strictEqual(Outcome.reportedSeconds(["5"]), 5)
    assert.strictEqual(Outcome.reportedSeconds([5.5, "4.5"]), 10)
    assert.isUndefined(Outcome.reportedSeconds([]))
    assert.isUndefined(Outcome.reportedSeconds(["5", undefined]))
    assert.isUndefined(Outcome.reportedSeconds(["five"]))
    assert.isUndefined(Outcome.reportedSeconds([""]))
    assert.isUndefined(Outcome.reportedSeconds([0]))
    assert.isUndefined(Outcome.reportedSeconds([null]))
    const media = [{ _tag: "Url", url: "https://example.test/v.mp4" }] as const
    assert.deepStrictEqual(Outcome.completed(media), { _tag: "Completed", media })
    assert.deepStrictEqual(Outcome.completed(media, 6), { _tag: "Completed", media, reportedSeconds: 6 })
  })

  it.effect("an undocumented state keeps the task running, with a warning naming it", () =>
    Effect.gen(function*() {
      const logs: Array<string> = []
      const capture = Logger.replace(
        Logger.defaultLogger,
        Logger.make(({ annotations, logLevel, message }) => void logs.push(`${logLevel.label} ${String(message)} ${JSON.stringify([...annotations])}`))
      )
      const outcome = yield* Outcome.unknownState("vendor-x", "t1", "RECALIBRATING").pipe(Effect.provide(capture))
      assert.deepStrictEqual(outcome, { _tag: "Running", status: "processing" })
      assert.lengthOf(logs, 1)
      assert.include(logs[0]!, "WARN vendor-x reported an unknown task state")
      assert.include(logs[0]!, "RECALIBRATING")
    }))
})

describe("Protocols.route", () => {
  const entry = (protocol: string) =>
    Fixtures.taskEntry({ vendor: "vendor-x", model: "m", upstream: { protocol, operation: "op", model: "m" } })
  const protocol: Protocols.TaskProtocol = {
    submit: (task) => Effect.succeed({ ref: `ref-${task.taskId}`, status: "pending" }),
    poll: () => Effect.succeed({ _tag: "Running", status: "processing" })
  }

  it.effect("hands each task to the protocol its entry names", () =>
    Effect.gen(function*() {
      const routed = Protocols.route("vendor-x", { videos: protocol })
      const task = Fixtures.upstreamTask(entry("videos"), {}, "m", "t1")
      assert.deepStrictEqual(yield* routed.submit(task), { ref: "ref-t1", status: "pending" })
      assert.deepStrictEqual(yield* routed.poll(Fixtures.submitted(task, "ref-t1")), { _tag: "Running", status: "processing" })
    }))

  it.effect("a protocol the vendor does not serve fails the task (3001)", () =>
    Effect.gen(function*() {
      const routed = Protocols.route("vendor-x", { videos: protocol })
      const error = yield* Effect.flip(routed.submit(Fixtures.upstreamTask(entry("toString"), {}, "m")))
      assert.instanceOf(error, VendorAdapter.Rejected)
      assert.deepStrictEqual({ ...(error as VendorAdapter.Rejected).error }, {
        code: 3001,
        title: "Execution error",
        detail: "vendor-x does not serve protocol \"toString\" as a task"
      })
    }))
})

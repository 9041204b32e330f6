/**
 * A result the adapter already holds whole (`MediaDownload.bytes`: a vendor's inline image, the
 * sandbox's video) is stored from those bytes in one write, not by reading `body`: here `body`
 * fails if it is read at all, and the task still completes with the exact bytes stored. Time is
 * the TestClock.
 */
import { VendorAdapter } from "@genway/core"
import { Registry } from "@genway/registry"
import { assert, describe, layer } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/TestClock"
import { MediaStore } from "../src/platform/MediaStore.js"
import { Scheduler } from "../src/tasks/Scheduler.js"
import { TaskStore } from "../src/tasks/Store.js"
import * as Harness from "./harness.js"

const e4 = Registry.entries.find((e) => e.endpoints.includes("E4"))!

const video = new Uint8Array([0, 0, 0, 24, 102, 116, 121, 112, 109, 112, 52, 50])
let bodyRead = 0
const vendor: VendorAdapter.VendorAdapter = {
  vendor: "vendor-b",
  mode: "live",
  submit: () => Effect.succeed({ ref: "job-inline", status: "pending" as const }),
  poll: () => Effect.succeed({ _tag: "Completed", media: [{ _tag: "Bytes", bytes: video, contentType: "video/mp4" }] }),
  download: (source) =>
    Effect.succeed({
      contentType: source.contentType ?? "video/mp4",
      body: Stream.suspend(() => {
        bodyRead++
        return Stream.fail(new VendorAdapter.Retryable({ reason: "the body was read: the whole bytes should have been used" }))
      }),
      ...(source._tag === "Bytes" ? { bytes: source.bytes } : {})
    })
}

describe("a result held in memory", () => {
  layer(Harness.layer({ live: Effect.succeed(new Map([["vendor-b", vendor]])) }))((it) => {
    it.effect("is stored from its bytes in one write; its body is never read", () =>
      Effect.gen(function*() {
        const scheduler = yield* Scheduler
        const tasks = yield* TaskStore
        const loop = yield* Effect.fork(scheduler.loop)
        const id = (yield* Harness.send(Harness.post(e4.path, { prompt: "inline" }))).json.task_info.id as string
        const task = () => Effect.map(tasks.findById(id), Option.getOrThrow)
        for (let i = 0; i < 60 && (yield* task()).status !== "completed"; i++) yield* TestClock.adjust("1 second")
        const done = yield* task()
        assert.strictEqual(done.status, "completed")
        assert.strictEqual(bodyRead, 0)
        const item = done.result?.[0]
        assert.isTrue(item !== undefined && "media" in item)
        const media = yield* MediaStore
        const found = yield* media.lookup((item as { readonly media: string }).media)
        assert.strictEqual(found._tag, "Found")
        if (found._tag !== "Found") return
        assert.strictEqual(found.bytes, video.length)
        assert.strictEqual(found.contentType, "video/mp4")
        const stored = Chunk.toReadonlyArray(yield* Stream.runCollect(media.read(found.file))).flatMap((c) => [...c])
        assert.deepStrictEqual(stored, [...video])
        yield* Fiber.interrupt(loop)
      }))
  })
})

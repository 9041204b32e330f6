/**
 * A result the adapter already holds whole (`MediaDownload.bytes`: a vendor's inline image, the
 * sandbox's video) is stored from those bytes, not by reading `body`: here `body` fails if it is
 * read at all, and the task still completes with the exact bytes stored — in its database row when
 * it is at most `GATEWAY_MEDIA_INLINE_BYTES` long, else in a file written in one write. Time is the
 * TestClock.
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
import * as fs from "node:fs"
import * as path from "node:path"
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

describe.each([
  ["kept in its row (at most GATEWAY_MEDIA_INLINE_BYTES)", {}, true],
  ["written to a file in one write (longer than GATEWAY_MEDIA_INLINE_BYTES)", { mediaInlineBytes: video.length - 1 }, false]
] as const)("a result held in memory, %s", (_, stored, inline) => {
  const dataDir = Harness.tempDir()
  layer(Harness.layer({ live: Effect.succeed(new Map([["vendor-b", vendor]])), settings: { dataDir, ...stored } }))((it) => {
    it.effect("is stored from its bytes; its body is never read", () =>
      Effect.gen(function*() {
        bodyRead = 0
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
        const key = (item as { readonly media: string }).media
        const media = yield* MediaStore
        const found = yield* media.lookup(key)
        assert.strictEqual(found._tag, "Found")
        if (found._tag !== "Found") return
        assert.strictEqual(found.bytes, video.length)
        assert.strictEqual(found.contentType, "video/mp4")
        // In its row, or in a file: never both.
        assert.strictEqual(found.inline !== undefined, inline)
        assert.strictEqual(fs.existsSync(path.join(dataDir, "media", ...key.split("/"))), !inline)
        const stored = Chunk.toReadonlyArray(yield* Stream.runCollect(media.read(found))).flatMap((c) => [...c])
        assert.deepStrictEqual(stored, [...video])
        const ranged = Chunk.toReadonlyArray(yield* Stream.runCollect(media.read(found, { start: 4, end: 7 }))).flatMap((c) => [...c])
        assert.deepStrictEqual(ranged, [...video.subarray(4, 8)])
        yield* Fiber.interrupt(loop)
      }))
  })
})

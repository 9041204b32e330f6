/**
 * The data directory's object store (`media/Blobs.ts`, `local`): an object given whole (bytes in
 * memory: a result sent inline, a spooled input) and one given as a stream land alike — the same
 * bytes, private to the gateway's user, nothing temporary left beside them, a second write
 * replacing the first — and a write that cannot land fails with `MediaError`, leaving nothing.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import * as fs from "node:fs"
import * as path from "node:path"
import * as Blobs from "../src/media/Blobs.js"
import * as Harness from "./harness.js"

const read = (blobs: Blobs.Blobs, name: string) =>
  Effect.map(Stream.runCollect(blobs.get(name)), (chunks) => Buffer.concat([...Chunk.toReadonlyArray(chunks)]).toString("utf8"))

const bytesOf = (text: string) => new Uint8Array(Buffer.from(text, "utf8"))

describe("Blobs.local", () => {
  for (const [form, body] of [
    ["whole bytes", (text: string) => bytesOf(text)],
    ["a stream", (text: string) => Stream.make(bytesOf(text.slice(0, 3)), bytesOf(text.slice(3)))]
  ] as const) {
    it.effect(`${form}: written, private, nothing temporary left; written again, replaced`, () =>
      Effect.gen(function*() {
        const root = Harness.tempDir()
        const blobs = yield* Blobs.local(root)
        const written = yield* blobs.put("media/task-1/0.mp4", body("first object"))
        assert.strictEqual(written, "first object".length)
        assert.strictEqual(yield* read(blobs, "media/task-1/0.mp4"), "first object")
        const dir = path.join(root, "media", "task-1")
        assert.deepStrictEqual(fs.readdirSync(dir), ["0.mp4"])
        assert.strictEqual(fs.statSync(path.join(dir, "0.mp4")).mode & 0o077, 0)
        assert.strictEqual(fs.statSync(dir).mode & 0o077, 0)
        assert.strictEqual(yield* blobs.put("media/task-1/0.mp4", body("second")), "second".length)
        assert.strictEqual(yield* read(blobs, "media/task-1/0.mp4"), "second")
        assert.deepStrictEqual(fs.readdirSync(dir), ["0.mp4"])
      }))

    it.effect(`${form}: writes of one object at once each use a temporary name of their own`, () =>
      Effect.gen(function*() {
        const root = Harness.tempDir()
        const blobs = yield* Blobs.local(root)
        // Two writers sharing a temporary name would rename one file twice: the second would fail.
        const texts = Array.from({ length: 8 }, (_, i) => `object ${i}`)
        const sizes = yield* Effect.forEach(texts, (text) => blobs.put("media/task-4/0.mp4", body(text)), { concurrency: "unbounded" })
        assert.deepStrictEqual(sizes, texts.map((t) => t.length))
        assert.include(texts, yield* read(blobs, "media/task-4/0.mp4"))
        assert.deepStrictEqual(fs.readdirSync(path.join(root, "media", "task-4")), ["0.mp4"])
      }))

    it.effect(`${form}: a write that cannot land fails with MediaError and leaves nothing`, () =>
      Effect.gen(function*() {
        const root = Harness.tempDir()
        const blobs = yield* Blobs.local(root)
        // The object's folder cannot be made: a file holds its name.
        fs.writeFileSync(path.join(root, "media", "task-2"), "not a folder")
        const exit = yield* Effect.exit(blobs.put("media/task-2/0.mp4", body("lost object")))
        assert.isTrue(exit._tag === "Failure")
        if (exit._tag === "Failure") {
          const error = exit.cause._tag === "Fail" ? exit.cause.error : undefined
          assert.instanceOf(error, Blobs.MediaError)
        }
        assert.deepStrictEqual(fs.readdirSync(path.join(root, "media")), ["task-2"])
        assert.isTrue(fs.statSync(path.join(root, "media", "task-2")).isFile())
      }))
  }

  it.effect("whole bytes: a write whose rename fails removes its temporary file", () =>
    Effect.gen(function*() {
      const root = Harness.tempDir()
      const blobs = yield* Blobs.local(root)
      // The object's name is a non-empty folder: the temporary file is written, the rename fails.
      fs.mkdirSync(path.join(root, "media", "task-3", "0.mp4", "inside"), { recursive: true })
      const exit = yield* Effect.exit(blobs.put("media/task-3/0.mp4", bytesOf("lost object")))
      assert.isTrue(exit._tag === "Failure")
      assert.deepStrictEqual(fs.readdirSync(path.join(root, "media", "task-3")), ["0.mp4"])
    }))
})

import { FetchHttpClient } from "@effect/platform"
import { assert, describe, it } from "@effect/vitest"
import { SampleMedia, type VendorAdapter } from "@genway/core"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Logger from "effect/Logger"
import * as Redacted from "effect/Redacted"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/TestClock"
import { Adapter } from "../src/index.js"
import { Emulator } from "../src/testing/index.js"
import { i2v, kf2v, t2i, t2v, task } from "./fixtures.js"

const setup = (options: Emulator.EmulatorOptions = {}, apiKey?: string) =>
  Effect.gen(function*() {
    const emulator = yield* Emulator.make(options)
    const adapter = yield* Adapter.make({ baseUrl: emulator.baseUrl, apiKey: Redacted.make(apiKey ?? emulator.apiKey) })
    return { emulator, adapter }
  })

const polled = (t: VendorAdapter.UpstreamTask, ref: string) => ({ ...t, upstreamRef: ref })

const bytesOf = (body: Stream.Stream<Uint8Array, unknown>) =>
  Effect.map(Stream.runCollect(body), (chunks) => Buffer.concat(Chunk.toArray(chunks)))

const live = <A, E>(effect: Effect.Effect<A, E, any>) => Effect.provide(effect, FetchHttpClient.layer) as Effect.Effect<A, E, never>

describe("vendor-b adapter against the emulator", () => {
  it.scoped("submits a nested body with the async header and bearer key, then polls without the header", () =>
    live(Effect.gen(function*() {
      const { adapter, emulator } = yield* setup()
      const t = task(t2v, { prompt: "a cat", negative_prompt: "blur", size: "1280*720", duration: 5, audio: null })
      const submitted = yield* adapter.submit(t)
      assert.strictEqual(submitted.status, "pending")
      yield* adapter.poll(polled(t, submitted.ref))
      const [create, query] = yield* emulator.requests
      assert.strictEqual(create!.method, "POST")
      assert.strictEqual(create!.path, "/api/v1/services/aigc/video-generation/video-synthesis")
      assert.strictEqual(create!.headers["authorization"], `Bearer ${emulator.apiKey}`)
      assert.strictEqual(create!.headers["x-dashscope-async"], "enable")
      assert.isUndefined(create!.headers["traceparent"])
      assert.deepStrictEqual(create!.body, {
        model: "upstream-vid2.5-t2v-preview",
        input: { prompt: "a cat", negative_prompt: "blur" },
        parameters: { size: "1280*720", duration: 5 }
      })
      assert.strictEqual(query!.method, "GET")
      assert.strictEqual(query!.path, `/api/v1/tasks/${submitted.ref}`)
      assert.strictEqual(query!.headers["authorization"], `Bearer ${emulator.apiKey}`)
      assert.isUndefined(query!.headers["x-dashscope-async"])
      assert.strictEqual(yield* emulator.acceptedSubmits, 1)
    })))

  it.scoped("chooses the create path from the operation", () =>
    live(Effect.gen(function*() {
      const { adapter, emulator } = yield* setup()
      yield* adapter.submit(task(kf2v, { first_frame_url: "https://img.example/a.png", last_frame_url: "https://img.example/b.png" }))
      yield* adapter.submit(task(t2i, { prompt: "a fox", size: "1280*1280" }))
      yield* adapter.submit(task(i2v, { prompt: "go", image: "https://img.example/a.png" }))
      const paths = (yield* emulator.requests).map((r) => r.path)
      assert.deepStrictEqual(paths, [
        "/api/v1/services/aigc/image2video/video-synthesis",
        "/api/v1/services/aigc/image-generation/generation",
        "/api/v1/services/aigc/video-generation/video-synthesis"
      ])
      assert.deepStrictEqual((yield* emulator.requests)[1]!.body, {
        model: "upstream-vid2.6-t2i",
        input: { messages: [{ role: "user", content: [{ text: "a fox" }] }] },
        parameters: { size: "1280*1280" }
      })
    })))

  it.scoped("maps PENDING, RUNNING and SUCCEEDED; downloads the MP4 through a redirect", () =>
    live(Effect.gen(function*() {
      const { adapter } = yield* setup({ completeAfterPolls: 3, redirectMedia: true })
      const t = task(t2v, { prompt: "a cat" })
      const { ref } = yield* adapter.submit(t)
      assert.deepStrictEqual(yield* adapter.poll(polled(t, ref)), { _tag: "Running", status: "pending" })
      assert.deepStrictEqual(yield* adapter.poll(polled(t, ref)), { _tag: "Running", status: "processing" })
      const done = yield* adapter.poll(polled(t, ref))
      assert(done._tag === "Completed")
      assert.strictEqual(done.media.length, 1)
      const media = yield* adapter.download(done.media[0]!)
      assert.strictEqual(media.contentType, "video/mp4")
      assert.deepStrictEqual(new Uint8Array(yield* bytesOf(media.body)), SampleMedia.mp4())
    })))

  it.scoped("the emulator hands out result URLs on another origin when told (mediaOrigin)", () =>
    live(Effect.gen(function*() {
      const { adapter } = yield* setup({ completeAfterPolls: 1, mediaOrigin: "http://media.example.test:9" })
      const t = task(t2v, { prompt: "a cat" })
      const { ref } = yield* adapter.submit(t)
      const done = yield* adapter.poll(polled(t, ref))
      assert(done._tag === "Completed" && done.media[0]!._tag === "Url")
      assert.match(done.media[0].url, new RegExp(`^http://media\\.example\\.test:9/media/${ref}/0\\.mp4\\?`))
    })))

  it.scoped("cancels a PENDING task (polls then report it failed); a RUNNING one is not canceled", () =>
    live(Effect.gen(function*() {
      const { adapter } = yield* setup({ completeAfterPolls: 5 })
      const t = task(t2v, { prompt: "a cat" })
      const queued = yield* adapter.submit(t)
      assert.deepStrictEqual(yield* adapter.cancel!(polled(t, queued.ref)), { canceled: true })
      const after = yield* adapter.poll(polled(t, queued.ref))
      assert.strictEqual(after._tag, "Failed")
      const running = yield* adapter.submit(t)
      yield* adapter.poll(polled(t, running.ref))
      yield* adapter.poll(polled(t, running.ref))
      const refused = yield* adapter.cancel!(polled(t, running.ref))
      assert.isFalse(refused.canceled)
      assert.match(refused.reason ?? "", /PENDING/)
    })))

  it.scoped("reads image results from choices[].message.content[].image and from results[].url", () =>
    live(Effect.gen(function*() {
      for (const imageResults of ["choices", "results"] as const) {
        const { adapter } = yield* setup({ completeAfterPolls: 1, imageResults })
        const t = task(t2i, { prompt: "a fox", size: "96*64", n: 2 })
        const { ref } = yield* adapter.submit(t)
        const done = yield* adapter.poll(polled(t, ref))
        assert(done._tag === "Completed")
        assert.strictEqual(done.media.length, 2)
        const media = yield* adapter.download(done.media[1]!)
        assert.strictEqual(media.contentType, "image/png")
        const png = yield* bytesOf(media.body)
        assert.strictEqual(png.readUInt32BE(16), 96)
        assert.strictEqual(png.readUInt32BE(20), 64)
      }
    })))

  it.scoped("a failed task carries 400 for the invalid-request family and 3001 otherwise, message inside output", () =>
    live(Effect.gen(function*() {
      const { adapter, emulator } = yield* setup({ completeAfterPolls: 1 })
      yield* emulator.inject("submit", { _tag: "FailTask", code: "DataInspectionFailed", message: "Output data may contain inappropriate content." })
      const a = task(t2v, { prompt: "p" })
      const moderated = yield* adapter.poll(polled(a, (yield* adapter.submit(a)).ref))
      assert.deepStrictEqual(moderated, {
        _tag: "Failed",
        error: { code: 400, title: "Invalid request", detail: "Output data may contain inappropriate content. (DataInspectionFailed)" }
      } as never)
      yield* emulator.inject("submit", { _tag: "FailTask", code: "InternalError.Algo", message: "Algorithm process error." })
      const b = task(t2v, { prompt: "p" })
      const crashed = yield* adapter.poll(polled(b, (yield* adapter.submit(b)).ref))
      assert(crashed._tag === "Failed")
      assert.strictEqual(crashed.error.code, 3001)
      assert.include(crashed.error.detail, "Algorithm process error.")
    })))

  it.scoped("maps SUSPENDED, CANCELED and UNKNOWN; an unlisted state is logged and kept running", () =>
    live(Effect.gen(function*() {
      const logs: Array<string> = []
      const logger = Logger.make(({ annotations, logLevel, message }) => {
        logs.push(`${logLevel.label} ${String(message)} ${JSON.stringify([...annotations])}`)
      })
      const { adapter, emulator } = yield* setup()
      const t = task(t2v, { prompt: "p" })
      const { ref } = yield* adapter.submit(t)
      yield* emulator.inject("poll", { _tag: "ReportStatus", status: "SUSPENDED" })
      assert.deepStrictEqual(yield* adapter.poll(polled(t, ref)), { _tag: "Running", status: "processing" })
      yield* emulator.inject("poll", { _tag: "ReportStatus", status: "CANCELED" })
      const canceled = yield* adapter.poll(polled(t, ref))
      assert(canceled._tag === "Failed")
      assert.strictEqual(canceled.error.code, 3001)
      yield* emulator.inject("poll", { _tag: "ReportStatus", status: "RECALIBRATING" })
      const odd = yield* adapter.poll(polled(t, ref)).pipe(Effect.provide(Logger.replace(Logger.defaultLogger, logger)))
      assert.deepStrictEqual(odd, { _tag: "Running", status: "processing" })
      assert.strictEqual(logs.length, 1)
      assert.include(logs[0]!, "WARN")
      assert.include(logs[0]!, "RECALIBRATING")
      const unknown = yield* adapter.poll(polled(t, "no-such-task"))
      assert(unknown._tag === "Failed")
      assert.strictEqual(unknown.error.code, 3001)
    })))

  it.scoped("a 400 on submit is Rejected with code 400 and the vendor's message", () =>
    live(Effect.gen(function*() {
      const { adapter, emulator } = yield* setup()
      yield* emulator.inject("submit", {
        _tag: "HttpError",
        status: 400,
        code: "DataInspectionFailed",
        message: "Input data may contain inappropriate content."
      })
      const error = yield* Effect.flip(adapter.submit(task(t2v, { prompt: "p" })))
      assert(error._tag === "Rejected")
      assert.strictEqual(error.error.code, 400)
      assert.include(error.error.detail, "Input data may contain inappropriate content.")
      assert.strictEqual(yield* emulator.acceptedSubmits, 0)
    })))

  // A 429 on submit, 503 and malformed answers on poll, unknown states and leaks: adapter-kit's ContractCases (Contract.test.ts).
  it.scoped("a poll without an answer in time is Retryable", () =>
    live(Effect.gen(function*() {
      const { adapter, emulator } = yield* setup()
      const t = task(t2v, { prompt: "p" })
      const { ref } = yield* adapter.submit(t)
      yield* emulator.inject("poll", { _tag: "Slow", delay: "1 minute" })
      const fiber = yield* Effect.fork(Effect.flip(adapter.poll(polled(t, ref))))
      yield* emulator.awaitRequests(2)
      yield* TestClock.adjust("31 seconds")
      const error = yield* Fiber.join(fiber)
      assert(error._tag === "Retryable")
      assert.include(error.reason, "no answer in time")
    })))

  it.scoped("a submit that times out is OutcomeUnknown; a refused connection is Retryable", () =>
    live(Effect.gen(function*() {
      const { adapter, emulator } = yield* setup()
      yield* emulator.inject("submit", { _tag: "Slow", delay: "1 minute" })
      const fiber = yield* Effect.fork(Effect.flip(adapter.submit(task(t2v, { prompt: "p" }))))
      yield* emulator.awaitRequests(1)
      yield* TestClock.adjust("31 seconds")
      assert.strictEqual((yield* Fiber.join(fiber))._tag, "OutcomeUnknown")
      const closed = yield* Effect.scoped(Emulator.make())
      const offline = yield* Adapter.make({ baseUrl: closed.baseUrl, apiKey: Redacted.make(closed.apiKey) })
      assert.strictEqual((yield* Effect.flip(offline.submit(task(t2v, { prompt: "p" }))))._tag, "Retryable")
    })))

  it.scoped("a refused key is Rejected 3001 and no error carries the key or the vendor URL", () =>
    live(Effect.gen(function*() {
      const { adapter, emulator } = yield* setup({}, "sk-wrong-secret")
      const error = yield* Effect.flip(adapter.submit(task(t2v, { prompt: "p" })))
      assert(error._tag === "Rejected")
      assert.strictEqual(error.error.code, 3001)
      for (const text of [JSON.stringify(error), String(error)]) {
        assert.notInclude(text, "sk-wrong-secret")
        assert.notInclude(text, emulator.baseUrl)
        assert.notInclude(text, "127.0.0.1")
      }
    })))

  it.scoped("an expired media URL is Rejected 3001; a 503 on download is Retryable", () =>
    live(Effect.gen(function*() {
      const { adapter, emulator } = yield* setup()
      const gone = yield* Effect.flip(adapter.download({ _tag: "Url", url: `${emulator.baseUrl.replace("/api/v1", "")}/media/none/0.mp4` }))
      assert(gone._tag === "Rejected")
      assert.strictEqual(gone.error.code, 3001)
      yield* emulator.inject("download", { _tag: "Unavailable" })
      const busy = yield* Effect.flip(adapter.download({ _tag: "Url", url: `${emulator.baseUrl.replace("/api/v1", "")}/media/none/0.mp4` }))
      assert.strictEqual(busy._tag, "Retryable")
    })))
})

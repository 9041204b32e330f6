import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import * as HttpClient from "@effect/platform/HttpClient"
import { assert, describe, it } from "@effect/vitest"
import { SampleMedia, VendorAdapter } from "@genway/core"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Redacted from "effect/Redacted"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/TestClock"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import { Adapter } from "../src/index.js"
import { Emulator } from "../src/testing/index.js"
import { millis, submitted, task } from "./fixtures.js"

const setup = (options: Emulator.EmulatorOptions = {}, adapterOptions: Adapter.AdapterOptions = {}) =>
  Effect.gen(function*() {
    const emulator = yield* Emulator.make(options)
    const adapter = yield* Adapter.make(
      { baseUrl: emulator.baseUrl, apiKey: Redacted.make(emulator.apiKey) },
      adapterOptions
    )
    return { emulator, adapter }
  }).pipe(Effect.provide(FetchHttpClient.layer))

const pngDataUrl = () => `data:image/png;base64,${Buffer.from(SampleMedia.png(16, 9, 3)).toString("base64")}`

const collect = (body: Stream.Stream<Uint8Array, VendorAdapter.AdapterError>) =>
  Stream.runFold(body, Buffer.alloc(0), (acc, chunk) => Buffer.concat([acc, chunk]))

/** No error may carry the key or the internal base URL. */
const assertClean = (error: unknown, emulator: Emulator.Emulator) => {
  const text = JSON.stringify(error) + String(error)
  assert.notInclude(text, emulator.apiKey)
  assert.notInclude(text, emulator.baseUrl)
}

describe("vendor-a videos: protocol", () => {
  it.scoped("creates with multipart fields, bearer auth, the upstream model and SPEC defaults", () =>
    Effect.gen(function*() {
      const { adapter, emulator } = yield* setup()
      const result = yield* adapter.submit(task({ prompt: "a red kite over the sea", model: "reel-2" }))
      assert.match(result.ref, /^video_/)
      assert.strictEqual(result.status, "pending")
      assert.strictEqual(millis(result.pollAfter), 1000)

      const [request] = yield* emulator.requests
      assert.strictEqual(request!.kind, "submit")
      assert.strictEqual(request!.method, "POST")
      assert.strictEqual(request!.path, "/v1/videos")
      assert.strictEqual(request!.headers["authorization"], `Bearer ${emulator.apiKey}`)
      assert.match(request!.headers["content-type"]!, /^multipart\/form-data; boundary=/)
      assert.deepStrictEqual(request!.fields, {
        prompt: "a red kite over the sea",
        model: "upstream-video-model",
        seconds: "8",
        size: "1280x720"
      })
      assert.strictEqual(yield* emulator.acceptedSubmits, 1)
    }))

  it.scoped("sends a data-URL image as the input_reference file, decoded, with its media type", () =>
    Effect.gen(function*() {
      const { adapter, emulator } = yield* setup()
      const image = pngDataUrl()
      yield* adapter.submit(task({ prompt: "animate this", image, seconds: "4", size: "720x1280" }))
      const [request] = yield* emulator.requests
      const fields = request!.fields!
      assert.strictEqual(fields["seconds"], "4")
      assert.strictEqual(fields["size"], "720x1280")
      const file = fields["input_reference"]
      assert.isTrue(typeof file === "object")
      if (typeof file === "object") {
        assert.strictEqual(file.type, "image/png")
        assert.strictEqual(file.filename, "input_reference.png")
        assert.deepStrictEqual(Buffer.from(file.bytes), Buffer.from(SampleMedia.png(16, 9, 3)))
      }
    }))

  it.scoped("refuses an image URL without contacting the vendor", () =>
    Effect.gen(function*() {
      const { adapter, emulator } = yield* setup()
      const error = yield* Effect.flip(adapter.submit(task({ prompt: "p", image: "https://images.example.test/a.png" })))
      assert.strictEqual(error._tag, "Rejected")
      if (error._tag === "Rejected") {
        assert.strictEqual(error.error.code, 400)
        assert.include(error.error.detail, "image URLs are not supported by this vendor; send a data URL")
      }
      assert.lengthOf(yield* emulator.requests, 0)
    }))

  it.scoped("maps queued → pending, in_progress → processing, completed → the content URL, with poll hints", () =>
    Effect.gen(function*() {
      const { adapter, emulator } = yield* setup({ completeOnPoll: 3, pollAfterMs: 2500 })
      const t = task({ prompt: "p" })
      const { ref } = yield* adapter.submit(t)
      const first = yield* adapter.poll(submitted(t, ref))
      assert.deepStrictEqual({ ...first, pollAfter: millis((first as { pollAfter?: number }).pollAfter) }, {
        _tag: "Running",
        status: "pending",
        pollAfter: 2500,
        progress: 0
      })
      const second = yield* adapter.poll(submitted(t, ref))
      assert.strictEqual(second._tag, "Running")
      if (second._tag === "Running") {
        assert.strictEqual(second.status, "processing")
        // The vendor's own `progress` is passed on.
        assert.strictEqual(second.progress, 50)
      }
      const third = yield* adapter.poll(submitted(t, ref))
      assert.deepStrictEqual(third, {
        _tag: "Completed",
        media: [{ _tag: "Url", url: `${emulator.baseUrl}/videos/${ref}/content`, contentType: "video/mp4" }],
        // The video's own `seconds` (the SPEC default 8 was sent).
        reportedSeconds: 8
      })
      const polls = (yield* emulator.requests).filter((r) => r.kind === "poll")
      assert.lengthOf(polls, 3)
      assert.strictEqual(polls[0]!.path, `/v1/videos/${ref}`)
      assert.strictEqual(polls[0]!.headers["authorization"], `Bearer ${emulator.apiKey}`)
    }))

  it.scoped("a completed video's own seconds are reported, not the request's", () =>
    Effect.gen(function*() {
      const { adapter } = yield* setup({ completeOnPoll: 1, reportedSeconds: "12" })
      const t = task({ prompt: "p", seconds: "4" })
      const { ref } = yield* adapter.submit(t)
      const outcome = yield* adapter.poll(submitted(t, ref))
      assert(outcome._tag === "Completed")
      assert.strictEqual(outcome.reportedSeconds, 12)
    }))

  it.scoped("downloads the MP4 with the key; the vendor refuses it without", () =>
    Effect.gen(function*() {
      const { adapter, emulator } = yield* setup({ completeOnPoll: 1 })
      const t = task({ prompt: "p" })
      const { ref } = yield* adapter.submit(t)
      const outcome = yield* adapter.poll(submitted(t, ref))
      assert.strictEqual(outcome._tag, "Completed")
      if (outcome._tag !== "Completed") return
      const media = yield* adapter.download(outcome.media[0]!)
      assert.strictEqual(media.contentType, "video/mp4")
      assert.deepStrictEqual(yield* collect(media.body), Buffer.from(SampleMedia.mp4()))
      const download = (yield* emulator.requests).find((r) => r.kind === "download")!
      assert.strictEqual(download.headers["authorization"], `Bearer ${emulator.apiKey}`)

      const source = outcome.media[0]!
      const anonymous = yield* HttpClient.get(source._tag === "Url" ? source.url : "").pipe(
        Effect.provide(FetchHttpClient.layer)
      )
      assert.strictEqual(anonymous.status, 401)
    }))
})

describe("vendor-a videos: failures", () => {
  it.scoped("a failed video is 400 for the moderation/invalid family, 3001 otherwise", () =>
    Effect.gen(function*() {
      const { adapter, emulator } = yield* setup()
      const t = task({ prompt: "p" })
      const a = yield* adapter.submit(t)
      const b = yield* adapter.submit(t)
      yield* emulator.inject("poll", { _tag: "FailTask", code: "moderation_blocked", message: "Blocked by moderation." })
      const moderated = yield* adapter.poll(submitted(t, a.ref))
      assert.deepStrictEqual(moderated._tag === "Failed" ? { ...moderated.error } : moderated, {
        code: 400,
        title: "Invalid request",
        detail: "Blocked by moderation. (moderation_blocked)"
      })
      yield* emulator.inject("poll", { _tag: "FailTask", code: "internal_error", message: "Generation crashed." })
      const crashed = yield* adapter.poll(submitted(t, b.ref))
      assert.strictEqual(crashed._tag === "Failed" ? crashed.error.code : -1, 3001)
    }))

  // A 429 on submit, 503 and malformed answers on poll, unknown states and leaks: adapter-kit's ContractCases (Contract.test.ts).
  it.scoped("429 on poll is Retryable with Retry-After", () =>
    Effect.gen(function*() {
      const { adapter, emulator } = yield* setup()
      const t = task({ prompt: "p" })
      const { ref } = yield* adapter.submit(t)
      yield* emulator.inject("poll", { _tag: "RateLimited", retryAfterSeconds: 3 })
      const limited = yield* Effect.flip(adapter.poll(submitted(t, ref)))
      assert.strictEqual(limited._tag, "Retryable")
      if (limited._tag === "Retryable") assert.strictEqual(millis(limited.retryAfter), 3000)
      assertClean(limited, emulator)
    }))

  it.scoped("a 503 on download is Retryable", () =>
    Effect.gen(function*() {
      const { adapter, emulator } = yield* setup()
      const t = task({ prompt: "p" })
      const { ref } = yield* adapter.submit(t)
      yield* emulator.inject("download", { _tag: "Unavailable", retryAfterSeconds: 1 })
      const failed = yield* Effect.flip(
        adapter.download({ _tag: "Url", url: `${emulator.baseUrl}/videos/${ref}/content` })
      )
      assert.strictEqual(failed._tag, "Retryable")
    }))

  it.scoped("a slow create times out as OutcomeUnknown, a slow poll as Retryable", () =>
    Effect.gen(function*() {
      const { adapter, emulator } = yield* setup({}, { timeouts: { submit: "10 seconds", poll: "5 seconds" } })
      yield* emulator.inject("submit", { _tag: "Slow", delayMs: 60_000 })
      const submitting = yield* Effect.fork(adapter.submit(task({ prompt: "p" })))
      yield* emulator.awaitRequests(1)
      yield* TestClock.adjust("10 seconds")
      const lost = yield* Effect.flip(Fiber.join(submitting))
      assert.strictEqual(lost._tag, "OutcomeUnknown")

      const t = task({ prompt: "p" })
      const { ref } = yield* adapter.submit(t)
      yield* emulator.inject("poll", { _tag: "Slow", delayMs: 60_000 })
      const polling = yield* Effect.fork(adapter.poll(submitted(t, ref)))
      yield* emulator.awaitRequests(3)
      yield* TestClock.adjust("5 seconds")
      assert.strictEqual((yield* Effect.flip(Fiber.join(polling)))._tag, "Retryable")
    }))

  it.scoped("a refused connection on create is Retryable: the request never left", () =>
    Effect.gen(function*() {
      const port = yield* Effect.async<number>((resume) => {
        const server = http.createServer()
        server.listen(0, "127.0.0.1", () => {
          const { port } = server.address() as AddressInfo
          server.close(() => resume(Effect.succeed(port)))
        })
      })
      const adapter = yield* Adapter.make({ baseUrl: `http://127.0.0.1:${port}/v1`, apiKey: Redacted.make("k") }).pipe(
        Effect.provide(FetchHttpClient.layer)
      )
      const error = yield* Effect.flip(adapter.submit(task({ prompt: "p" })))
      assert.strictEqual(error._tag, "Retryable")
    }))

  it.scoped("an invalid create is Rejected 400 with the vendor's message; a bad key is 3001 and leaks nothing", () =>
    Effect.gen(function*() {
      const { adapter, emulator } = yield* setup()
      yield* emulator.inject("submit", { _tag: "HttpError", status: 400, code: "invalid_value", message: "size is not supported." })
      const invalid = yield* Effect.flip(adapter.submit(task({ prompt: "p" })))
      assert.deepStrictEqual(invalid._tag === "Rejected" ? { ...invalid.error } : invalid, {
        code: 400,
        title: "Invalid request",
        detail: "size is not supported."
      })

      const wrongKey = yield* Adapter.make({ baseUrl: emulator.baseUrl, apiKey: Redacted.make("sk-wrong-key") }).pipe(
        Effect.provide(FetchHttpClient.layer)
      )
      const denied = yield* Effect.flip(wrongKey.submit(task({ prompt: "p" })))
      assert.strictEqual(denied._tag === "Rejected" ? denied.error.code : -1, 3001)
      assert.notInclude(JSON.stringify(denied), "sk-wrong-key")
      assertClean(denied, emulator)
    }))

  it.scoped("a protocol the adapter does not serve is Rejected 3001", () =>
    Effect.gen(function*() {
      const { adapter } = yield* setup()
      const error = yield* Effect.flip(adapter.submit(task({ prompt: "p" }, "responses")))
      assert.strictEqual(error._tag === "Rejected" ? error.error.code : -1, 3001)
    }))
})

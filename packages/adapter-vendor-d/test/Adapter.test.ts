import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import * as HttpClient from "@effect/platform/HttpClient"
import { assert, describe, it } from "@effect/vitest"
import { SampleMedia, type VendorAdapter } from "@genway/core"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Redacted from "effect/Redacted"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/TestClock"
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

const pngBase64 = (seed: number) => Buffer.from(SampleMedia.png(16, 9, seed)).toString("base64")

const collect = (body: Stream.Stream<Uint8Array, VendorAdapter.AdapterError>) =>
  Stream.runFold(body, Buffer.alloc(0), (acc, chunk) => Buffer.concat([acc, chunk]))

/** No error may carry the key or the internal base URL. */
const assertClean = (error: unknown, emulator: Emulator.Emulator) => {
  const text = JSON.stringify(error) + String(error)
  assert.notInclude(text, emulator.apiKey)
  assert.notInclude(text, emulator.baseUrl)
}

const errorOf = (outcome: VendorAdapter.PollOutcome) => (outcome._tag === "Failed" ? { ...outcome.error } : outcome)

describe("vendor-d long-running: protocol", () => {
  it.scoped("creates with the nested body, the key header and the upstream model", () =>
    Effect.gen(function*() {
      const { adapter, emulator } = yield* setup()
      const result = yield* adapter.submit(
        task({ prompt: "waves at dusk", aspect_ratio: "9:16", duration: 6, resolution: "1080P", negative_prompt: "blur" })
      )
      assert.match(result.ref, /^models\/upstream-film-fast\/operations\/[0-9a-z]+$/)
      assert.strictEqual(result.status, "processing")

      const [request] = yield* emulator.requests
      assert.strictEqual(request!.kind, "submit")
      assert.strictEqual(request!.method, "POST")
      assert.strictEqual(request!.path, "/v1beta/models/upstream-film-fast:predictLongRunning")
      assert.strictEqual(request!.headers["x-goog-api-key"], emulator.apiKey)
      assert.isUndefined(request!.headers["authorization"])
      assert.match(request!.headers["content-type"]!, /^application\/json/)
      assert.deepStrictEqual(request!.body, {
        instances: [{ prompt: "waves at dusk" }],
        parameters: { aspectRatio: "9:16", durationSeconds: 6, resolution: "1080p", negativePrompt: "blur", sampleCount: 1 }
      })
      assert.strictEqual(yield* emulator.acceptedSubmits, 1)
    }))

  it.scoped("sends first and last frames inline with sniffed media types, from data URLs or raw Base64", () =>
    Effect.gen(function*() {
      const { adapter, emulator } = yield* setup()
      yield* adapter.submit(
        task({ prompt: "p", image: `data:image/png;base64,${pngBase64(1)}`, last_frame: pngBase64(2) })
      )
      const [request] = yield* emulator.requests
      assert.deepStrictEqual((request!.body as { instances: unknown }).instances, [{
        prompt: "p",
        image: { bytesBase64Encoded: pngBase64(1), mimeType: "image/png" },
        lastFrame: { bytesBase64Encoded: pngBase64(2), mimeType: "image/png" }
      }])
    }))

  it.scoped("places fields outside its table where the entry's upstream lists say", () =>
    Effect.gen(function*() {
      const { adapter, emulator } = yield* setup()
      yield* adapter.submit(task({ prompt: "p", seed: 42 }, "long-running", { parameters: ["seed"] }))
      const [request] = yield* emulator.requests
      assert.deepStrictEqual((request!.body as { parameters: unknown }).parameters, { seed: 42, sampleCount: 1 })
    }))

  it.scoped("refuses an image URL without contacting the vendor", () =>
    Effect.gen(function*() {
      const { adapter, emulator } = yield* setup()
      const error = yield* Effect.flip(adapter.submit(task({ prompt: "p", image: "https://images.example.test/a.png" })))
      assert.strictEqual(error._tag === "Rejected" ? error.error.code : -1, 400)
      assert.lengthOf(yield* emulator.requests, 0)
    }))

  it.scoped("maps not done → processing and done with samples → their URIs", () =>
    Effect.gen(function*() {
      const { adapter, emulator } = yield* setup({ completeOnPoll: 3 })
      const t = task({ prompt: "p" })
      const { ref } = yield* adapter.submit(t)
      assert.deepStrictEqual(yield* adapter.poll(submitted(t, ref)), { _tag: "Running", status: "processing" })
      assert.deepStrictEqual(yield* adapter.poll(submitted(t, ref)), { _tag: "Running", status: "processing" })
      const done = yield* adapter.poll(submitted(t, ref))
      assert.strictEqual(done._tag, "Completed")
      if (done._tag === "Completed") {
        assert.lengthOf(done.media, 1)
        const media = done.media[0]!
        assert.strictEqual(media._tag, "Url")
        if (media._tag === "Url") assert.match(media.url, new RegExp(`^${emulator.baseUrl}/files/[0-9a-f]+:download\\?alt=media$`))
      }
      const polls = (yield* emulator.requests).filter((r) => r.kind === "poll")
      assert.lengthOf(polls, 3)
      assert.strictEqual(polls[0]!.path, `/v1beta/${ref}`)
      assert.strictEqual(polls[0]!.headers["x-goog-api-key"], emulator.apiKey)
    }))

  it.scoped("downloads the MP4 with the key, follows the redirect, and keeps the key off the storage host", () =>
    Effect.gen(function*() {
      const { adapter, emulator } = yield* setup({ completeOnPoll: 1 })
      const t = task({ prompt: "p" })
      const { ref } = yield* adapter.submit(t)
      const done = yield* adapter.poll(submitted(t, ref))
      if (done._tag !== "Completed") return assert.fail(`expected Completed, got ${done._tag}`)
      const media = yield* adapter.download(done.media[0]!)
      assert.strictEqual(media.contentType, "video/mp4")
      assert.deepStrictEqual(yield* collect(media.body), Buffer.from(SampleMedia.mp4()))

      const requests = yield* emulator.requests
      const download = requests.find((r) => r.kind === "download")!
      const blob = requests.find((r) => r.kind === "blob")!
      assert.strictEqual(download.headers["x-goog-api-key"], emulator.apiKey)
      assert.isUndefined(blob.headers["x-goog-api-key"])

      const source = done.media[0]!
      const anonymous = yield* HttpClient.get(source._tag === "Url" ? source.url : "").pipe(
        Effect.provide(FetchHttpClient.layer)
      )
      assert.strictEqual(anonymous.status, 403)
    }))
})

describe("vendor-d long-running: failures", () => {
  it.scoped("a failed operation is 400 for INVALID_ARGUMENT, 3001 otherwise; a filtered one is 400 content filter", () =>
    Effect.gen(function*() {
      const { adapter, emulator } = yield* setup({ completeOnPoll: 5 })
      const t = task({ prompt: "p" })
      const [a, b, c] = [yield* adapter.submit(t), yield* adapter.submit(t), yield* adapter.submit(t)]
      yield* emulator.inject("poll", { _tag: "FailTask", code: 3, message: "The prompt was rejected." })
      assert.deepStrictEqual(errorOf(yield* adapter.poll(submitted(t, a.ref))), {
        code: 400,
        title: "Invalid request",
        detail: "The prompt was rejected."
      })
      yield* emulator.inject("poll", { _tag: "FailTask" })
      assert.strictEqual((errorOf(yield* adapter.poll(submitted(t, b.ref))) as { code: number }).code, 3001)
      yield* emulator.inject("poll", { _tag: "ContentFilter", reasons: ["Unsafe content."] })
      assert.deepStrictEqual(errorOf(yield* adapter.poll(submitted(t, c.ref))), {
        code: 400,
        title: "Content filtered",
        detail: "the vendor's content filter blocked the video: Unsafe content."
      })
    }))

  // A 429 on submit, 503 and malformed answers on poll, unknown states and leaks: adapter-kit's ContractCases (Contract.test.ts).
  it.scoped("429 RESOURCE_EXHAUSTED on poll is Retryable after RetryInfo.retryDelay (fractional seconds)", () =>
    Effect.gen(function*() {
      const { adapter, emulator } = yield* setup()
      const t = task({ prompt: "p" })
      const { ref } = yield* adapter.submit(t)
      yield* emulator.inject("poll", { _tag: "RateLimited", retryDelaySeconds: 1.5 })
      const limited = yield* Effect.flip(adapter.poll(submitted(t, ref)))
      assert.strictEqual(limited._tag === "Retryable" ? millis(limited.retryAfter) : -1, 1500)
      assertClean(limited, emulator)
    }))

  it.scoped("dropped polls and downloads are Retryable", () =>
    Effect.gen(function*() {
      const { adapter, emulator } = yield* setup({ completeOnPoll: 1 })
      const t = task({ prompt: "p" })
      const { ref } = yield* adapter.submit(t)
      yield* emulator.inject("poll", { _tag: "Drop" })
      assert.strictEqual((yield* Effect.flip(adapter.poll(submitted(t, ref))))._tag, "Retryable")
      const done = yield* adapter.poll(submitted(t, ref))
      if (done._tag !== "Completed") return assert.fail(`expected Completed, got ${done._tag}`)
      yield* emulator.inject("blob", { _tag: "Drop" })
      const error = yield* Effect.flip(adapter.download(done.media[0]!))
      assert.strictEqual(error._tag, "Retryable")
      assertClean(error, emulator)
    }))

  it.scoped("a slow create times out as OutcomeUnknown, a slow poll as Retryable", () =>
    Effect.gen(function*() {
      const { adapter, emulator } = yield* setup({}, { timeouts: { submit: "10 seconds", poll: "5 seconds" } })
      yield* emulator.inject("submit", { _tag: "Slow", delayMs: 60_000 })
      const submitting = yield* Effect.fork(adapter.submit(task({ prompt: "p" })))
      yield* emulator.awaitRequests(1)
      yield* TestClock.adjust("10 seconds")
      assert.strictEqual((yield* Effect.flip(Fiber.join(submitting)))._tag, "OutcomeUnknown")

      const t = task({ prompt: "p" })
      const { ref } = yield* adapter.submit(t)
      yield* emulator.inject("poll", { _tag: "Slow", delayMs: 60_000 })
      const polling = yield* Effect.fork(adapter.poll(submitted(t, ref)))
      yield* emulator.awaitRequests(3)
      yield* TestClock.adjust("5 seconds")
      assert.strictEqual((yield* Effect.flip(Fiber.join(polling)))._tag, "Retryable")
    }))

  it.scoped("HTTP errors: INVALID_ARGUMENT → 400; PERMISSION_DENIED, a bad key, NOT_FOUND → 3001; nothing leaks", () =>
    Effect.gen(function*() {
      const { adapter, emulator } = yield* setup()
      const code = (e: VendorAdapter.AdapterError) => (e._tag === "Rejected" ? e.error.code : e._tag)

      yield* emulator.inject("submit", { _tag: "HttpError", status: 400, message: "durationSeconds is out of range." })
      const invalid = yield* Effect.flip(adapter.submit(task({ prompt: "p" })))
      assert.deepStrictEqual(invalid._tag === "Rejected" ? { ...invalid.error } : invalid, {
        code: 400,
        title: "Invalid request",
        detail: "durationSeconds is out of range."
      })

      yield* emulator.inject("submit", { _tag: "HttpError", status: 403, message: "The caller does not have permission." })
      assert.strictEqual(code(yield* Effect.flip(adapter.submit(task({ prompt: "p" })))), 3001)

      const wrongKey = yield* Adapter.make({ baseUrl: emulator.baseUrl, apiKey: Redacted.make("AIza-wrong-key") }).pipe(
        Effect.provide(FetchHttpClient.layer)
      )
      const denied = yield* Effect.flip(wrongKey.submit(task({ prompt: "p" })))
      assert.strictEqual(code(denied), 3001)
      assert.notInclude(JSON.stringify(denied), "AIza-wrong-key")
      assertClean(denied, emulator)

      const t = task({ prompt: "p" })
      const gone = yield* Effect.flip(adapter.poll(submitted(t, "models/upstream-film-fast/operations/unknown")))
      assert.strictEqual(code(gone), 3001)
      assertClean(gone, emulator)

      const unsafe = yield* Effect.flip(adapter.poll(submitted(t, "https://elsewhere.example.test/x")))
      assert.strictEqual(code(unsafe), 3001)
      assert.lengthOf((yield* emulator.requests).filter((r) => r.kind === "poll"), 1)
    }))
})

import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import * as HttpClient from "@effect/platform/HttpClient"
import type * as HttpClientError from "@effect/platform/HttpClientError"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import type * as HttpClientResponse from "@effect/platform/HttpClientResponse"
import { assert, describe, it } from "@effect/vitest"
import { CallLimit, type Chat as CoreChat, SampleMedia } from "@genway/core"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Fiber from "effect/Fiber"
import * as HashMap from "effect/HashMap"
import * as Logger from "effect/Logger"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/TestClock"
import * as Tracer from "effect/Tracer"
import { Chat } from "../src/index.js"
import * as GenerateContent from "../src/internal/generateContent.js"
import { Emulator } from "../src/testing/index.js"

const model = "upstream-image-model"
const png = Buffer.from(SampleMedia.png(16, 16, 3)).toString("base64")

const request = (text: string, extra: Partial<CoreChat.ChatRequest> = {}): CoreChat.ChatRequest => ({
  model,
  messages: [{ role: "user", parts: [{ _tag: "Text", text }] }],
  ...extra
})

const setup = (options: Emulator.EmulatorOptions = {}, chatOptions: Chat.ChatOptions = {}) =>
  Effect.gen(function*() {
    const emulator = yield* Emulator.make(options)
    const chat = yield* Chat.make({ baseUrl: emulator.baseUrl, apiKey: Redacted.make(emulator.apiKey) }, chatOptions)
    return { emulator, chat }
  }).pipe(Effect.provide(FetchHttpClient.layer))

const collect = <A, E>(stream: Stream.Stream<A, E>) => Effect.map(Stream.runCollect(stream), Chunk.toReadonlyArray)

/**
 * Waits (in real time) until the TestClock has a backoff sleep pending, and returns its wake-up
 * time. Backoffs are short; the exchange's own time limits (a minute and more) are not counted.
 */
const pendingBackoff = Effect.gen(function*() {
  for (;;) {
    const now = yield* TestClock.currentTimeMillis
    const backoffs = Chunk.filter(yield* TestClock.sleeps(), (at) => at - now < 30_000)
    const first = Chunk.head(backoffs)
    if (Option.isSome(first)) return first.value
    yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 2)))
  }
})

describe("vendor-d generate-content: translation", () => {
  it("maps messages to contents, system messages to systemInstruction, data images to inlineData", () => {
    const body = GenerateContent.toUpstreamBody({
      model,
      messages: [
        { role: "system", parts: [{ _tag: "Text", text: "Draw in ink." }] },
        { role: "user", parts: [{ _tag: "Text", text: "a crane" }, { _tag: "Image", mimeType: "image/png", base64: png }] },
        { role: "assistant", parts: [{ _tag: "Image", mimeType: "image/png", base64: png }] },
        { role: "user", parts: [{ _tag: "Text", text: "" }, { _tag: "Text", text: "bigger" }] }
      ],
      temperature: 0.2,
      topP: 0.9,
      maxOutputTokens: 2000
    })
    assert.deepStrictEqual(Either.getOrThrow(body), {
      contents: [
        { role: "user", parts: [{ text: "a crane" }, { inlineData: { mimeType: "image/png", data: png } }] },
        { role: "model", parts: [{ inlineData: { mimeType: "image/png", data: png } }] },
        { role: "user", parts: [{ text: "bigger" }] }
      ],
      systemInstruction: { parts: [{ text: "Draw in ink." }] },
      generationConfig: { responseModalities: ["TEXT", "IMAGE"], temperature: 0.2, topP: 0.9, maxOutputTokens: 2000 }
    })
  })

  it("refuses a conversation with nothing but system text", () => {
    const body = GenerateContent.toUpstreamBody({ model, messages: [{ role: "system", parts: [{ _tag: "Text", text: "x" }] }] })
    assert.isTrue(Either.isLeft(body))
    const error = Either.getLeft(body).pipe(Option.getOrThrow)
    assert.strictEqual(error._tag, "ChatInvalid")
    assert.strictEqual(error.param, "messages")
  })

  it("maps usageMetadata: thoughts count as output, modalities as details, absent counts as null", () => {
    const usage = GenerateContent.usageOf({
      promptTokenCount: 300,
      candidatesTokenCount: 1300,
      thoughtsTokenCount: 20,
      totalTokenCount: 1620,
      cachedContentTokenCount: 100,
      promptTokensDetails: [{ modality: "TEXT", tokenCount: 42 }, { modality: "IMAGE", tokenCount: 258 }],
      candidatesTokensDetails: [{ modality: "IMAGE", tokenCount: 1290 }, { modality: "TEXT", tokenCount: 10 }]
    })
    assert.deepStrictEqual(usage, {
      promptTokens: 300,
      completionTokens: 1320,
      totalTokens: 1620,
      cacheReadTokens: 100,
      cacheCreationTokens: null,
      prompt: { text: 42, image: 258, audio: 0 },
      completion: { text: 10, image: 1290, audio: 0, reasoning: 20 }
    })
    assert.deepStrictEqual(GenerateContent.usageOf({ promptTokenCount: 5 }).prompt, { text: null, image: null, audio: null })
  })

  it("reads SSE data across chunk boundaries, CRLF split included", () => {
    const wire = "data: {\"a\":1}\r\n\r\n: comment\r\ndata: {\"b\":\r\ndata: 2}\r\n\r\nevent: x\ndata: last"
    const bytes = new TextEncoder().encode(wire)
    for (const size of [1, 2, 3, 7, bytes.length]) {
      const reader = GenerateContent.makeSseReader()
      const data: Array<string> = []
      for (let i = 0; i < bytes.length; i += size) data.push(...reader.feed(bytes.subarray(i, i + size)))
      data.push(...reader.end())
      assert.deepStrictEqual(data, ["{\"a\":1}", "{\"b\":\n2}", "last"], `chunk size ${size}`)
    }
  })

  it.effect("deltas from bytes: a finish without an image, a filter reason, or no finish at all fails the stream", () =>
    Effect.gen(function*() {
      const wire = (events: ReadonlyArray<unknown>) =>
        Stream.make(new TextEncoder().encode(events.map((e) => `data: ${typeof e === "string" ? e : JSON.stringify(e)}\r\n\r\n`).join("")))
      const run = (events: ReadonlyArray<unknown>) => Effect.flip(collect(GenerateContent.toDeltas(wire(events))))
      const text = { candidates: [{ content: { parts: [{ text: "hi" }] } }] }
      const image = { candidates: [{ content: { parts: [{ inlineData: { mimeType: "image/png", data: png } }] }, finishReason: "STOP" }] }
      const ok = yield* collect(GenerateContent.toDeltas(wire([text, image])))
      assert.deepStrictEqual(ok.map((d) => d.finishReason), [null, "STOP"])
      const talked = yield* run([text, { candidates: [{ content: { parts: [{ text: " there" }] }, finishReason: "STOP" }] }])
      assert.strictEqual(talked._tag, "ChatRefused")
      assert.strictEqual((talked as CoreChat.ChatRefused).code, "no_image")
      assert.include(talked.message, "\"hi there\"")
      const filtered = yield* run([text, { candidates: [{ finishReason: "IMAGE_SAFETY" }] }])
      assert.strictEqual((filtered as CoreChat.ChatRefused).code, "content_filter")
      assert.strictEqual((filtered as CoreChat.ChatRefused).reason, "IMAGE_SAFETY")
      const cut = yield* run([text])
      assert.strictEqual(cut._tag, "ChatUpstreamError")
      assert.strictEqual((cut as CoreChat.ChatUpstreamError).status, 502)
      const before: Array<CoreChat.ChatDelta> = []
      const late = yield* Effect.flip(Stream.runForEach(
        GenerateContent.toDeltas(wire([text, { candidates: [{ finishReason: "SAFETY" }] }])),
        (d) => Effect.sync(() => before.push(d))
      ))
      assert.strictEqual(before.length, 1, "the delta before the refusal, from the same bytes, is still emitted")
      assert.strictEqual(late._tag, "ChatRefused")
      const garbage = yield* run(["{not json"])
      assert.strictEqual(garbage._tag, "ChatUpstreamError")
    }))
})

describe("vendor-d generate-content: against the emulator", () => {
  it.scoped("complete: the request on the wire and the result", () =>
    Effect.gen(function*() {
      const { chat, emulator } = yield* setup({ imageSize: [20, 10] })
      const result = yield* chat.complete(request("a heron"))
      assert.strictEqual(result.finishReason, "STOP")
      assert.deepStrictEqual(result.parts.map((p) => p._tag), ["Text", "Image"])
      const image = result.parts[1] as Extract<CoreChat.OutputPart, { _tag: "Image" }>
      assert.strictEqual(image.mimeType, "image/png")
      assert.strictEqual(Buffer.from(image.base64, "base64").readUInt32BE(16), 20)
      assert.strictEqual(result.usage.completion.image, 1290)
      const [sent] = yield* emulator.requests
      assert.strictEqual(sent!.path, `/v1beta/models/${model}:generateContent`)
      assert.strictEqual(sent!.headers["x-goog-api-key"], emulator.apiKey)
      assert.deepStrictEqual(sent!.body, {
        contents: [{ role: "user", parts: [{ text: "a heron" }] }],
        generationConfig: { responseModalities: ["TEXT", "IMAGE"] }
      })
    }))

  it.scoped("stream: one delta per event, the last with the image and STOP", () =>
    Effect.gen(function*() {
      const { chat, emulator } = yield* setup()
      const deltas = yield* collect(Stream.unwrap(chat.stream(request("a heron"))))
      assert.deepStrictEqual(deltas.map((d) => d.finishReason), [null, null, "STOP"])
      assert.strictEqual(deltas[2]!.parts[0]!._tag, "Image")
      assert.strictEqual(deltas[2]!.usage!.completionTokens, 8 + 1290)
      const [sent] = yield* emulator.requests
      assert.strictEqual(sent!.path, `/v1beta/models/${model}:streamGenerateContent`)
      assert.deepStrictEqual(sent!.query, { alt: "sse" })
    }))

  it.scoped("while tracing, the key header is redacted in the client span; without a tracer no span is made", () =>
    Effect.gen(function*() {
      const { chat, emulator } = yield* setup()
      const base = yield* Effect.tracer
      const spans: Array<Tracer.Span> = []
      const recording = Tracer.make({
        span: (...args) => {
          const span = base.span(...args)
          spans.push(span)
          return span
        },
        context: (f, fiber) => base.context(f, fiber)
      })
      yield* chat.complete(request("a crane")).pipe(Effect.withTracer(recording))
      const client = spans.find((span) => span.kind === "client")
      assert.isDefined(client, "the exchange has a client span")
      const header = client!.attributes.get("http.request.header.x-goog-api-key")
      assert.isDefined(header, "the span lists the key header")
      assert.notInclude(String(header), emulator.apiKey)
      assert.notInclude(JSON.stringify([...client!.attributes.values()].map(String)), emulator.apiKey)

      const before = spans.length
      const answer = yield* chat.complete(request("a heron")).pipe(Effect.withTracer(recording), Effect.withTracerEnabled(false))
      assert.isAbove(answer.parts.length, 0)
      assert.strictEqual(spans.length, before, "no span without a tracer")
    }))

  it.scoped("a 429 is retried after the vendor's RetryInfo delay, then succeeds", () =>
    Effect.gen(function*() {
      const { chat, emulator } = yield* setup()
      yield* emulator.inject("generate", { _tag: "RateLimited", retryDelaySeconds: 2 })
      const fiber = yield* Effect.fork(chat.complete(request("x")))
      const wakeAt = yield* pendingBackoff
      const now = yield* TestClock.currentTimeMillis
      assert.strictEqual(wakeAt - now, 2000)
      yield* TestClock.adjust("1999 millis")
      assert.strictEqual((yield* emulator.requests).length, 1)
      yield* TestClock.adjust("1 millis")
      const result = yield* Fiber.join(fiber)
      assert.strictEqual(result.finishReason, "STOP")
      assert.strictEqual((yield* emulator.requests).length, 2)
    }))

  it.scoped("5xx before the first byte: jittered exponential backoff, a few attempts, then the status", () =>
    Effect.gen(function*() {
      const { chat, emulator } = yield* setup({}, { retry: { retries: 3, base: "1 second" } })
      yield* emulator.inject("stream", { _tag: "Unavailable" }, 10)
      const fiber = yield* Effect.fork(Effect.flip(collect(Stream.unwrap(chat.stream(request("x"))))))
      const waits: Array<number> = []
      for (let i = 0; i < 3; i++) {
        const wakeAt = yield* pendingBackoff
        waits.push(wakeAt - (yield* TestClock.currentTimeMillis))
        yield* TestClock.adjust(wakeAt - (yield* TestClock.currentTimeMillis))
      }
      const error = yield* Fiber.join(fiber)
      assert.strictEqual(error._tag, "ChatUpstreamError")
      assert.strictEqual((error as CoreChat.ChatUpstreamError).status, 503)
      assert.strictEqual((yield* emulator.requests).length, 4)
      waits.forEach((w, i) => {
        assert.isAtLeast(w, 0.8 * 1000 * 2 ** i)
        assert.isAtMost(w, 1.2 * 1000 * 2 ** i)
      })
    }))

  it.scoped("its log lines (a retry's warning, a missing model's error) name the vendor and the protocol", () =>
    Effect.gen(function*() {
      const lines: Array<{ readonly level: string; readonly message: string; readonly vendor: unknown; readonly protocol: unknown }> = []
      const capture = Logger.replace(Logger.defaultLogger, Logger.make(({ annotations, logLevel, message }) => {
        lines.push({
          level: logLevel.label,
          message: String(Array.isArray(message) ? message.join(" ") : message),
          vendor: Option.getOrUndefined(HashMap.get(annotations, "vendor")),
          protocol: Option.getOrUndefined(HashMap.get(annotations, "protocol"))
        })
      }))
      const { chat, emulator } = yield* setup()
      yield* emulator.inject("generate", { _tag: "RateLimited", retryDelaySeconds: 2 })
      const fiber = yield* Effect.fork(chat.complete(request("x")).pipe(Effect.provide(capture)))
      yield* pendingBackoff
      yield* TestClock.adjust("2 seconds")
      yield* Fiber.join(fiber)
      yield* emulator.inject("generate", { _tag: "HttpError", status: 404, message: `models/${model} is not found` })
      yield* Effect.flip(chat.complete(request("x")).pipe(Effect.provide(capture)))
      assert.deepStrictEqual(lines.map((l) => [l.level, l.vendor, l.protocol]), [
        ["WARN", "vendor-d", "generate-content"],
        ["ERROR", "vendor-d", "generate-content"]
      ])
      assert.include(lines[0]!.message, "retrying if allowed")
      assert.include(lines[1]!.message, "HTTP 404")
    }))

  it.scoped("a rate limit asking for a long wait is not retried: ChatRateLimited with the hint", () =>
    Effect.gen(function*() {
      const { chat, emulator } = yield* setup()
      yield* emulator.inject("generate", { _tag: "RateLimited", retryDelaySeconds: 45 })
      const error = yield* Effect.flip(chat.complete(request("x")))
      assert.strictEqual(error._tag, "ChatRateLimited")
      assert.strictEqual((error as CoreChat.ChatRateLimited).retryAfterMs, 45_000)
      assert.strictEqual((yield* emulator.requests).length, 1)
    }))

  it.scoped("vendor errors: 400 is the client's, credentials and missing models are the gateway's (502)", () =>
    Effect.gen(function*() {
      const { chat, emulator } = yield* setup()
      yield* emulator.inject("generate", { _tag: "HttpError", status: 400, message: "Unsupported MIME type: image/gif" })
      const invalid = yield* Effect.flip(chat.complete(request("x")))
      assert.strictEqual(invalid._tag, "ChatInvalid")
      assert.include(invalid.message, "Unsupported MIME type")
      yield* emulator.inject("generate", { _tag: "HttpError", status: 404, message: `models/${model} is not found` })
      const missing = yield* Effect.flip(chat.complete(request("x")))
      assert.strictEqual(missing._tag, "ChatUpstreamError")
      assert.strictEqual((missing as CoreChat.ChatUpstreamError).status, 502)

      const wrongKey = yield* Chat.make({ baseUrl: emulator.baseUrl, apiKey: Redacted.make("wrong-key") }).pipe(
        Effect.provide(FetchHttpClient.layer)
      )
      const refused = yield* Effect.flip(wrongKey.complete(request("x")))
      assert.strictEqual(refused._tag, "ChatUpstreamError")
      assert.include(refused.message, "credentials")
      assert.notInclude(JSON.stringify(refused) + refused.message, "wrong-key")
      assert.notInclude(JSON.stringify(invalid) + invalid.message, emulator.baseUrl)
    }))

  it.scoped("refusals name the vendor's reason", () =>
    Effect.gen(function*() {
      const { chat, emulator } = yield* setup()
      yield* emulator.inject("generate", { _tag: "Finish", reason: "IMAGE_SAFETY", message: "Unable to show the image." })
      const safety = (yield* Effect.flip(chat.complete(request("x")))) as CoreChat.ChatRefused
      assert.strictEqual(safety.code, "content_filter")
      assert.include(safety.message, "IMAGE_SAFETY")
      assert.include(safety.message, "Unable to show the image.")
      yield* emulator.inject("generate", { _tag: "Finish", reason: "NO_IMAGE" })
      const noImage = (yield* Effect.flip(chat.complete(request("x")))) as CoreChat.ChatRefused
      assert.strictEqual(noImage.code, "no_image")
      assert.include(noImage.message, "NO_IMAGE")
      yield* emulator.inject("generate", { _tag: "PromptBlocked" })
      const blocked = (yield* Effect.flip(chat.complete(request("x")))) as CoreChat.ChatRefused
      assert.strictEqual(blocked.code, "content_filter")
      assert.include(blocked.message, "blocked the prompt")
    }))

  it.scoped("a stream cut after its first event fails after that event", () =>
    Effect.gen(function*() {
      const { chat, emulator } = yield* setup()
      yield* emulator.inject("stream", { _tag: "CutStream", afterEvents: 1 })
      const seen: Array<CoreChat.ChatDelta> = []
      const error = yield* Effect.flip(Stream.runForEach(Stream.unwrap(chat.stream(request("x"))), (d) => Effect.sync(() => seen.push(d))))
      assert.strictEqual(seen.length, 1)
      assert.strictEqual(error._tag, "ChatUpstreamError")
      assert.strictEqual((error as CoreChat.ChatUpstreamError).status, 502)
    }))

  it.scoped("interrupting a stream closes the vendor's connection", () =>
    Effect.gen(function*() {
      const { chat, emulator } = yield* setup({ streamDelayMs: 200 })
      const first = yield* Stream.runHead(Stream.unwrap(chat.stream(request("x"))))
      assert.isTrue(Option.isSome(first))
      yield* emulator.awaitClientAborts(1)
      const [aborted] = yield* emulator.clientAborts
      assert.strictEqual(aborted!.kind, "stream")
    }), { timeout: 5000 })
})

/**
 * A client that records the time limit on the calling fiber (`CallLimit`) before each exchange,
 * then sends it through `inner`; marked as enforcing limits when `enforcing`.
 */
const recording = (inner: HttpClient.HttpClient, enforcing: boolean, seen: Array<CallLimit.CallLimit | undefined>) => {
  const client: HttpClient.HttpClient = HttpClient.makeWith<never, never, HttpClientError.HttpClientError, never>((request) =>
    Effect.flatMap(request, (r) =>
      Effect.withFiberRuntime<HttpClientResponse.HttpClientResponse, HttpClientError.HttpClientError>((fiber) => {
        seen.push(CallLimit.active(fiber.getFiberRef(CallLimit.current)))
        return inner.execute(r)
      })), Effect.succeed)
  return enforcing ? CallLimit.markEnforcing(client) : client
}

describe("vendor-d generate-content: time limits", () => {
  // `Http.within`: on the live clock, tracing off (as the gateway runs without an exporter).
  const live = <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.withTracerEnabled(effect, false)

  it.scopedLive("a client that enforces limits gets each call's limit on the calling fiber (no fiber forked to watch it); any other client none", () =>
    Effect.gen(function*() {
      const emulator = yield* Emulator.make()
      const inner = yield* HttpClient.HttpClient
      const config = { baseUrl: emulator.baseUrl, apiKey: Redacted.make(emulator.apiKey) }
      const timeouts = { open: "7 seconds", complete: "9 seconds" } as const
      for (const enforcing of [true, false]) {
        const seen: Array<CallLimit.CallLimit | undefined> = []
        const chat = yield* Chat.make(config, { timeouts }).pipe(Effect.provideService(HttpClient.HttpClient, recording(inner, enforcing, seen)))
        const before = Date.now()
        const deltas = yield* collect(Stream.unwrap(chat.stream(request("a heron"))))
        assert.strictEqual(deltas.at(-1)!.finishReason, "STOP")
        const answer = yield* chat.complete(request("a crane"))
        assert.strictEqual(answer.finishReason, "STOP")
        assert.strictEqual(seen.length, 2)
        if (!enforcing) {
          assert.deepStrictEqual(seen, [undefined, undefined])
          continue
        }
        const [open, whole] = seen
        // The stream's start is bounded by `open`, the whole answer by `complete`.
        assert.isAtLeast(open!.at, before + 7_000)
        assert.isAtMost(open!.at, Date.now() + 7_000)
        assert.isAtLeast(whole!.at, before + 9_000)
        assert.isAtMost(whole!.at, Date.now() + 9_000)
        // Over once the call returned: the stream's events are read without it.
        assert.isFalse(open!.active)
        assert.isFalse(whole!.active)
        assert.isFalse(open!.expired || whole!.expired)
      }
    }).pipe(Effect.provide(FetchHttpClient.layer), live))
})

describe("vendor-d emulator: generate-content", () => {
  it.scoped("checks the body's shape like the vendor", () =>
    Effect.gen(function*() {
      const emulator = yield* Emulator.make()
      const client = yield* HttpClient.HttpClient
      const generate = (body: unknown) =>
        client.execute(
          HttpClientRequest.post(`${emulator.baseUrl}/models/m:generateContent`).pipe(
            HttpClientRequest.setHeader("x-goog-api-key", emulator.apiKey),
            HttpClientRequest.bodyUnsafeJson(body)
          )
        ).pipe(Effect.flatMap((r) => Effect.map(r.json, (json) => ({ status: r.status, json: json as any }))))
      const contents = [{ role: "user", parts: [{ text: "p" }] }]
      assert.strictEqual((yield* generate({ contents, messages: [] })).status, 400)
      assert.strictEqual((yield* generate({ contents: [{ role: "assistant", parts: [{ text: "p" }] }] })).status, 400)
      assert.strictEqual((yield* generate({ contents: [{ role: "user", parts: [{ inlineData: { mimeType: "image/png", data: "AAAA" } }] }] })).status, 400)
      const textOnly = yield* generate({ contents })
      assert.strictEqual(textOnly.status, 200)
      assert.isUndefined(textOnly.json.candidates[0].content.parts.find((p: any) => p.inlineData !== undefined))
      const image = yield* generate({ contents, generationConfig: { responseModalities: ["TEXT", "IMAGE"] } })
      assert.strictEqual(image.json.candidates[0].finishReason, "STOP")
      assert.strictEqual(image.json.candidates[0].content.parts.find((p: any) => p.inlineData !== undefined).inlineData.mimeType, "image/png")
      assert.strictEqual(image.json.usageMetadata.totalTokenCount, image.json.usageMetadata.promptTokenCount + image.json.usageMetadata.candidatesTokenCount)
    }).pipe(Effect.provide(FetchHttpClient.layer)))
})

import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import { assert, describe, it } from "@effect/vitest"
import { Responses as CoreResponses } from "@genway/core"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as HashMap from "effect/HashMap"
import * as Logger from "effect/Logger"
import * as Redacted from "effect/Redacted"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/TestClock"
import { Responses } from "../src/index.js"
import { sseParser } from "../src/internal/responses.js"
import { Emulator } from "../src/testing/index.js"

const setup = (options: Emulator.EmulatorOptions = {}, upstreamOptions: Responses.ResponsesOptions = {}) =>
  Effect.gen(function*() {
    const emulator = yield* Emulator.make(options)
    const upstream = yield* Responses.make({ baseUrl: emulator.baseUrl, apiKey: Redacted.make(emulator.apiKey) }, upstreamOptions)
    return { emulator, upstream }
  }).pipe(Effect.provide(FetchHttpClient.layer))

const body = (extra: Record<string, unknown> = {}) => ({ model: "upstream-text-model", input: "tell me about kites", ...extra })

/** No error may carry the key or the internal base URL. */
const assertClean = (error: unknown, emulator: Emulator.Emulator) => {
  const text = JSON.stringify(error) + String(error)
  assert.notInclude(text, emulator.apiKey)
  assert.notInclude(text, emulator.baseUrl)
}

const expectedOrder = (deltas: number, terminal = "response.completed") => [
  ...Emulator.streamPrelude,
  ...Array.from({ length: deltas }, () => "response.output_text.delta"),
  "response.output_text.done",
  "response.content_part.done",
  "response.output_item.done",
  terminal
]

describe("vendor-a responses: protocol", () => {
  it.scoped("creates with the body as is and bearer auth; the object comes back as the vendor sent it", () =>
    Effect.gen(function*() {
      const { emulator, upstream } = yield* setup()
      const sent = body({ temperature: 0.5, metadata: { team: "kites" } })
      const response = yield* upstream.create(sent)
      assert.match(response.id, /^resp_/)
      assert.strictEqual(response.status, "completed")
      assert.strictEqual(response.model, "upstream-text-model")
      assert.isUndefined(response.output_text)
      assert.strictEqual(CoreResponses.outputTextOf(response), Emulator.answerText("tell me about kites"))
      assert.strictEqual(CoreResponses.withOutputText(response).output_text, Emulator.answerText("tell me about kites"))
      const [request] = yield* emulator.requests
      assert.strictEqual(request!.kind, "responses.create")
      assert.strictEqual(request!.path, "/v1/responses")
      assert.strictEqual(request!.headers["authorization"], `Bearer ${emulator.apiKey}`)
      assert.deepStrictEqual(request!.body, sent)
    }))

  it.scoped("streams every event in the vendor's order, ending with the terminal event", () =>
    Effect.gen(function*() {
      const { emulator, upstream } = yield* setup()
      const events = Chunk.toReadonlyArray(yield* Stream.runCollect(yield* upstream.stream(body({ stream: true }))))
      const text = Emulator.answerText("tell me about kites")
      const deltas = text.split(/(?<=\s)/).length
      assert.deepStrictEqual(events.map((e) => e.type), expectedOrder(deltas))
      assert.deepStrictEqual(events.map((e) => e.sequence_number), events.map((_, i) => i))
      assert.strictEqual(events.filter((e) => e.type === "response.output_text.delta").map((e) => e["delta"]).join(""), text)
      const final = CoreResponses.responseOf(events.at(-1)!)!
      assert.strictEqual(final.status, "completed")
      const [request] = yield* emulator.requests
      assert.strictEqual(request!.headers["accept"], "text/event-stream")
    }))

  it.scoped("passes events on as they arrive, and a consumer that stops cancels the upstream request", () =>
    Effect.gen(function*() {
      const { emulator, upstream } = yield* setup()
      yield* emulator.inject("responses.create", { _tag: "StallStream" })
      const stream = yield* upstream.stream(body({ stream: true }))
      // The vendor holds the rest back: these arrive only if nothing waits for the end.
      const first = yield* Stream.runCollect(Stream.take(stream, Emulator.streamPrelude.length + 1))
      assert.deepStrictEqual(Chunk.toReadonlyArray(first).map((e) => e.type), [...Emulator.streamPrelude, "response.output_text.delta"])
      yield* emulator.awaitAborted(1)
      assert.strictEqual(yield* emulator.abortedRequests, 1)
    }))

  it.scoped("a background response is queued, then advances on each retrieve; a forgotten one is not found", () =>
    Effect.gen(function*() {
      const { emulator, upstream } = yield* setup({ completeOnRetrieve: 2 })
      const queued = yield* upstream.create(body({ background: true }))
      assert.strictEqual(queued.status, "queued")
      assert.deepStrictEqual((yield* upstream.retrieve(queued.id)).status, "in_progress")
      const done = yield* upstream.retrieve(queued.id)
      assert.strictEqual(done.status, "completed")
      assert.strictEqual(CoreResponses.outputTextOf(done), Emulator.answerText("tell me about kites"))
      const retrieve = (yield* emulator.requests).filter((r) => r.kind === "responses.retrieve")
      assert.strictEqual(retrieve[0]!.path, `/v1/responses/${queued.id}`)
      yield* emulator.forget(queued.id)
      const lost = yield* Effect.flip(upstream.retrieve(queued.id))
      assert.strictEqual(lost._tag, "ResponseNotFound")
      assert.strictEqual(lost.status, 404)
    }))
})

describe("vendor-a responses: cancel, delete, resume", () => {
  it.scoped("cancels a background response, deletes one, and streams a background one again after a sequence number", () =>
    Effect.gen(function*() {
      const { emulator, upstream } = yield* setup({ completeOnRetrieve: 5 })
      const queued = yield* upstream.create(body({ background: true }))
      const cancelled = yield* upstream.cancel!(queued.id)
      assert.strictEqual(cancelled.status, "cancelled")
      const cancel = (yield* emulator.requests).at(-1)!
      assert.strictEqual(cancel.kind, "responses.cancel")
      assert.strictEqual(cancel.method, "POST")
      assert.strictEqual(cancel.path, `/v1/responses/${queued.id}/cancel`)
      assert.strictEqual(cancel.headers["authorization"], `Bearer ${emulator.apiKey}`)
      const refused = yield* Effect.flip(upstream.cancel!((yield* upstream.create(body())).id))
      assert.strictEqual(refused._tag, "UpstreamRejected")

      const background = yield* upstream.create(body({ background: true }))
      const all = Chunk.toReadonlyArray(yield* Stream.runCollect(yield* upstream.resume!(background.id, undefined)))
      assert.strictEqual(all.at(-1)!.type, "response.completed")
      const tail = Chunk.toReadonlyArray(yield* Stream.runCollect(yield* upstream.resume!(background.id, 5)))
      assert.deepStrictEqual(tail, all.slice(6))
      assert.deepStrictEqual((yield* emulator.requests).at(-1)!.query, { stream: "true", starting_after: "5" })

      yield* upstream.remove!(background.id)
      assert.notInclude(yield* emulator.storedResponses, background.id)
      const gone = yield* Effect.flip(upstream.remove!(background.id))
      assert.strictEqual(gone._tag, "ResponseNotFound")
      const lost = yield* Effect.flip(upstream.resume!(background.id, 0))
      assert.strictEqual(lost._tag, "ResponseNotFound")
      assertClean(lost, emulator)
    }))
})

describe("vendor-a responses: errors", () => {
  it.scoped("the vendor's 400 is the client's: status, message, param and code pass on", () =>
    Effect.gen(function*() {
      const { emulator, upstream } = yield* setup()
      const error = yield* Effect.flip(upstream.create({ ...body(), modality: "x" }))
      assert.strictEqual(error._tag, "UpstreamRejected")
      if (error._tag === "UpstreamRejected") {
        assert.strictEqual(error.status, 400)
        assert.strictEqual(error.param, "modality")
        assert.strictEqual(error.code, "invalid_value")
        assert.match(error.message, /Unknown parameter/)
      }
      assertClean(error, emulator)
    }))

  it.scoped("refused credentials are the gateway's problem: 502 without the key", () =>
    Effect.gen(function*() {
      const emulator = yield* Emulator.make()
      const upstream = yield* Responses.make({ baseUrl: emulator.baseUrl, apiKey: Redacted.make("wrong-key") }).pipe(
        Effect.provide(FetchHttpClient.layer)
      )
      const error = yield* Effect.flip(upstream.create(body()))
      assert.strictEqual(error._tag, "UpstreamAuthFailed")
      assert.strictEqual(error.status, 502)
      assert.notInclude(JSON.stringify(error) + String(error), "wrong-key")
      const streamed = yield* Effect.flip(upstream.stream(body({ stream: true })))
      assert.strictEqual(streamed._tag, "UpstreamAuthFailed")
    }))

  it.scoped("429 carries the vendor's wait: x-ratelimit-reset-requests or Retry-After; exhausted quota is a 503", () =>
    Effect.gen(function*() {
      const { emulator, upstream } = yield* setup()
      yield* emulator.inject("responses.create", { _tag: "RateLimited", resetRequests: "12ms" })
      const limited = yield* Effect.flip(upstream.create(body()))
      assert.strictEqual(limited._tag, "UpstreamRateLimited")
      if (limited._tag === "UpstreamRateLimited") {
        assert.strictEqual(limited.retryAfterMs, 12)
        assert.strictEqual(limited.code, "rate_limit_exceeded")
      }
      yield* emulator.inject("responses.create", { _tag: "RateLimited", retryAfterSeconds: 3 })
      const streamed = yield* Effect.flip(upstream.stream(body({ stream: true })))
      assert.strictEqual(streamed._tag, "UpstreamRateLimited")
      if (streamed._tag === "UpstreamRateLimited") assert.strictEqual(streamed.retryAfterMs, 3000)
      yield* emulator.inject("responses.create", { _tag: "HttpError", status: 429, code: "insufficient_quota" })
      const quota = yield* Effect.flip(upstream.create(body()))
      assert.strictEqual(quota._tag, "UpstreamUnavailable")
      assert.strictEqual(quota.status, 503)
    }))

  it.scoped("vendor failures are 502/503, a slow vendor 504", () =>
    Effect.gen(function*() {
      const { emulator, upstream } = yield* setup({}, { timeouts: { create: "30 seconds" } })
      yield* emulator.inject("responses.create", { _tag: "Unavailable", retryAfterSeconds: 1 })
      const overloaded = yield* Effect.flip(upstream.create(body()))
      assert.strictEqual(overloaded._tag, "UpstreamUnavailable")
      assert.strictEqual(overloaded.status, 503)
      if (overloaded._tag === "UpstreamUnavailable") assert.strictEqual(overloaded.retryAfterMs, 1000)
      yield* emulator.inject("responses.create", { _tag: "HttpError", status: 500 })
      assert.strictEqual((yield* Effect.flip(upstream.create(body()))).status, 502)
      yield* emulator.inject("responses.create", { _tag: "MalformedJson" })
      assert.strictEqual((yield* Effect.flip(upstream.create(body()))).status, 502)
      yield* emulator.inject("responses.create", { _tag: "Drop" })
      const dropped = yield* Effect.flip(upstream.create(body()))
      assert.strictEqual(dropped.status, 502)
      assertClean(dropped, emulator)

      yield* emulator.inject("responses.create", { _tag: "Slow", delayMs: 60_000 })
      const before = (yield* emulator.requests).length
      const creating = yield* Effect.fork(upstream.create(body()))
      yield* emulator.awaitRequests(before + 1)
      yield* TestClock.adjust("30 seconds")
      const slow = yield* Effect.flip(Fiber.join(creating))
      assert.strictEqual(slow._tag, "UpstreamUnavailable")
      assert.strictEqual(slow.status, 504)
    }))

  it.scoped("an object in a state the protocol does not define passes as sent, with a warning naming the state", () =>
    Effect.gen(function*() {
      const { emulator, upstream } = yield* setup()
      yield* emulator.inject("responses.create", { _tag: "UnknownStatus", status: "paused" })
      const warnings: Array<{ readonly message: unknown; readonly annotations: Record<string, unknown> }> = []
      const logger = Logger.make(({ annotations, logLevel, message }) => {
        if (logLevel._tag === "Warning") warnings.push({ message, annotations: Object.fromEntries(HashMap.toEntries(annotations)) })
      })
      const response = yield* upstream.create(body()).pipe(Effect.provide(Logger.replace(Logger.defaultLogger, logger)))
      assert.strictEqual(response.status, "paused")
      assert.match(response.id, /^resp_/)
      assert.strictEqual(warnings.length, 1)
      assert.include(String(warnings[0]!.message), "unknown response status")
      assert.strictEqual(warnings[0]!.annotations["status"], "paused")
      // A known state logs nothing.
      yield* upstream.create(body()).pipe(Effect.provide(Logger.replace(Logger.defaultLogger, logger)))
      assert.strictEqual(warnings.length, 1)
    }))

  it.scoped("mid-stream: the vendor's error event passes and ends the stream; a broken connection fails it", () =>
    Effect.gen(function*() {
      const { emulator, upstream } = yield* setup()
      yield* emulator.inject("responses.create", { _tag: "StreamError", code: "server_error", message: "boom" })
      const events = Chunk.toReadonlyArray(yield* Stream.runCollect(yield* upstream.stream(body({ stream: true }))))
      const last = events.at(-1)!
      assert.strictEqual(last.type, "error")
      assert.strictEqual(last["code"], "server_error")
      assert.strictEqual(last.sequence_number, events.length - 1)

      yield* emulator.inject("responses.create", { _tag: "CutStream" })
      const cut = yield* upstream.stream(body({ stream: true }))
      const error = yield* Effect.flip(Stream.runDrain(cut))
      assert.strictEqual(error._tag, "UpstreamUnavailable")
      assert.strictEqual(error.status, 502)
    }))
})

describe("vendor-a responses: SSE parsing", () => {
  it("assembles events split anywhere, with CRLF, comments and multi-line data", () => {
    const parser = sseParser()
    const text = ": keep-alive\r\nevent: response.created\r\ndata: {\"a\":\r\ndata: 1}\r\n\r\nevent: x\ndata: {}\n\n"
    const events = [...text].flatMap((c) => parser.feed(c) ?? [])
    assert.deepStrictEqual(events, [
      { event: "response.created", data: "{\"a\":\n1}" },
      { event: "x", data: "{}" }
    ])
  })

  it("refuses an event larger than its limit", () => {
    const parser = sseParser(10)
    assert.deepStrictEqual(parser.feed("data: 12345\n"), [])
    assert.isUndefined(parser.feed("data: 678901\n"))
  })
})

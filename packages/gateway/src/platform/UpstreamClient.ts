/**
 * The HTTP client towards vendors: one undici `Pool` per vendor origin (DESIGN.md §7, "one upstream
 * connection pool per vendor"), each call one `Effect.async` around `pool.dispatch` with a handler of
 * our own (`Exchange`). undici's `request` makes, per call, a promise, an async resource and a body
 * stream, and reading a JSON answer whole through that stream adds a second promise and the
 * stream's consuming machinery; the handler collects a JSON answer's chunks itself and makes a body
 * stream only for an answer that is streamed (measured against the bench's upstream, 16 calls at a
 * time, CPU per call: `request` and `arrayBuffer` 25–52 µs, a collecting handler 21–31 µs).
 *
 * `@effect/platform`'s general-purpose client does more per call than a gateway needs when no
 * trace is exported: it wraps each response for interruption, registers it with a
 * `FinalizationRegistry`, merges its layer's context into the caller's, rebuilds the response's
 * headers on every read, and goes through an `Agent` to reach the origin's pool. Measured on this
 * machine (one keep-alive connection, warm, CPU per call): a raw `Pool.request` 60 µs, the same in
 * `Effect.tryPromise` 95 µs, the platform's undici client 190–270 µs.
 *
 * What stays the same: the interface (`HttpClient`, so adapters and their tests do not change),
 * interruption (a call interrupted before its answer aborts the request; a body stream interrupted
 * is destroyed), errors (`RequestError` "Transport", `ResponseError` "Decode"), bodies read once and
 * kept (`text`, `json`), streams. With the tracer on (`OTEL_EXPORTER_OTLP_ENDPOINT` set), and for
 * bodies the lean path does not send (streams, form data), calls go through the platform's client,
 * which makes the client span and sends its `traceparent` to the vendor.
 *
 * A JSON answer (`application/json` or `…+json`, at most `wholeJsonBytes` long when its length is
 * given) is read whole before the exchange returns: every caller reads such a body whole anyway (the
 * adapters' `text`/`json`, the upstream instrumentation), and reading it within the exchange's own
 * wait saves the second wait a separate read costs — an `Effect.async` with its interruption
 * handling, a promise, a finalization registration. Its `text`, `json`, `arrayBuffer` and `stream`
 * then answer from the bytes in hand; a read that failed fails each of them as a body read does
 * (`ResponseError` "Decode"), so callers see the same errors, at the same step, as before.
 *
 * Time limits (`CallLimit`, set by adapter-kit's `Http.within`): on the lean path an exchange made
 * under a limit arms one timer that aborts the request at the limit, and a body read under it one
 * that destroys the body; either marks the limit expired, which `within` turns into its timeout
 * failure. No fiber watches the time (a forked fiber per call cost about a sixth of an E2 request's
 * CPU). A call that takes the platform's client under a limit is bounded by `Http.deadline`-style
 * forking until its answer's head.
 */
import * as NodeStream from "@effect/platform-node/NodeStream"
import * as Cookies from "@effect/platform/Cookies"
import * as Headers from "@effect/platform/Headers"
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientError from "@effect/platform/HttpClientError"
import type * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as HttpClientResponse from "@effect/platform/HttpClientResponse"
import * as IncomingMessage from "@effect/platform/HttpIncomingMessage"
import * as UrlParams from "@effect/platform/UrlParams"
import { CallLimit } from "@genway/core"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import * as Inspectable from "effect/Inspectable"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import { Readable } from "node:stream"
import * as Consumers from "node:stream/consumers"
import { errors, Pool, util } from "undici"
import type { Dispatcher } from "undici"
import * as MediaType from "./MediaType.js"

/** An answer's headers as undici's `request` gives them: names in lower case, a repeated name's values in an array. */
type AnswerHeaders = Record<string, string | Array<string>>


// A body nobody read is destroyed once its response is collected, so its connection goes back to
// the pool (as the platform's client does).
const unread = new FinalizationRegistry<Body>((body) => {
  if (!body.destroyed) body.destroy()
})

const noop = () => {}

/** The longest JSON answer (by its `Content-Length`) read whole within the exchange. */
const wholeJsonBytes = 16 * 1024 * 1024

/** Whether an answer is JSON to read within its exchange (see the module's comment). */
const readsWhole = (headers: AnswerHeaders): boolean => {
  const type = headers["content-type"]
  if (typeof type !== "string" || !MediaType.isJson(type)) return false
  const length = headers["content-length"]
  return length === undefined || (typeof length === "string" && Number(length) <= wholeJsonBytes)
}

/** The key under which a response says its body was read within its exchange. */
const bodyInHand = Symbol.for("@genway/gateway/upstream/bodyInHand")

/** A body read within its exchange: its bytes, or why the read failed. */
type Whole = { readonly bytes: Buffer } | { readonly failure: unknown }

/** UTF-8 text of a body, without a byte-order mark (as undici's `text()`). */
const utf8 = (bytes: Buffer): string =>
  bytes.length >= 3 && bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf ? bytes.toString("utf8", 3) : bytes.toString("utf8")

/** What an exchange cut by its time limit fails with (the adapter's `within` reports the timeout). */
const timeLimit = new Error("the exchange's time limit ended")

/**
 * One exchange (or body read) under `limit`: `undefined` without a limit; `"over"` when the limit
 * has already ended (marked expired); otherwise a timer that marks it expired and runs `cut` at the
 * limit, to be cleared when the exchange ends first.
 */
const armLimit = (limit: CallLimit.CallLimit | undefined, cut: () => void): ReturnType<typeof setTimeout> | "over" | undefined => {
  if (limit === undefined) return undefined
  const left = limit.at - Date.now()
  if (left <= 0) {
    limit.expired = true
    return "over"
  }
  return setTimeout(() => {
    limit.expired = true
    cut()
  }, left)
}

/** What a call, or a streamed body, cut before its end is aborted with (as undici's `request` does). */
const aborted = () => new errors.RequestAbortedError()

/**
 * A streamed answer's body: fed by its exchange, which pauses the connection while the reader lags
 * and resumes it on the next read. Destroyed before its end, it aborts the exchange (the connection
 * is closed, as undici's own body does). `text`, `arrayBuffer` and `formData` read it whole.
 */
class Body extends Readable {
  constructor(private readonly exchange: Exchange, private readonly contentType: string | undefined) {
    // undici's own body's buffer: the vendor's connection pauses no more often than it did.
    super({ highWaterMark: 64 * 1024 })
    this.on("error", noop)
  }
  override _read() {
    this.exchange.resumeBody()
  }
  override _destroy(error: Error | null, callback: (error?: Error | null) => void) {
    // Destroyed before its end without a reason, it fails its readers (as undici's body does)
    // rather than leaving one waiting for an end that will not come.
    const reason = error ?? (this.readableEnded ? null : aborted())
    if (reason !== null) this.exchange.cut(reason)
    callback(reason)
  }
  text(): Promise<string> {
    return Consumers.text(this)
  }
  arrayBuffer(): Promise<ArrayBuffer> {
    return Consumers.arrayBuffer(this)
  }
  formData(): Promise<FormData> {
    return new globalThis.Response(Readable.toWeb(this) as ReadableStream<Uint8Array>, {
      headers: { "content-type": this.contentType ?? "" }
    }).formData()
  }
}

/**
 * One call, as undici's dispatcher drives it (its handler interface): the answer is delivered once,
 * at its head for a streamed answer, at its end for a JSON answer read whole (see the module's
 * comment), or as a Transport error when the call fails before its head.
 */
class Exchange implements Dispatcher.DispatchHandler {
  /** The timer of the call's time limit (cleared when the answer is delivered). */
  timer: ReturnType<typeof setTimeout> | undefined
  private abort: ((reason: Error) => void) | undefined
  private reason: Error | undefined
  private resume: (() => void) | undefined
  private settled = false
  private delivered = false
  private headers: AnswerHeaders | undefined
  private status = 0
  private chunks: Array<Buffer> | undefined
  private body: Body | undefined
  // Let go of once used: a streamed body holds its exchange for as long as it lives, and the
  // callback holds the fiber that waited, whose result may be this very answer. Kept, it would keep
  // an unread answer reachable from its body, so the body would never be destroyed (`unread`) and
  // its connection never closed.
  private resumeEffect: ((effect: Effect.Effect<HttpClientResponse.HttpClientResponse, HttpClientError.RequestError>) => void) | undefined
  constructor(
    private readonly request: HttpClientRequest.HttpClientRequest,
    private readonly limit: CallLimit.CallLimit | undefined,
    resumeEffect: (effect: Effect.Effect<HttpClientResponse.HttpClientResponse, HttpClientError.RequestError>) => void
  ) {
    this.resumeEffect = resumeEffect
  }
  /** Aborts the call unless it has ended (interruption, its time limit, its body destroyed early). */
  cut(reason: Error) {
    if (this.settled) return
    if (this.abort === undefined) this.reason ??= reason
    else this.abort(reason)
  }
  /** The caller stopped waiting (interrupted): nothing is delivered any more, the call is cut. */
  drop() {
    this.delivered = true
    this.resumeEffect = undefined
    clearTimeout(this.timer)
    this.cut(aborted())
  }
  /** The body's reader wants more: the connection, paused while it lagged, reads on (a no-op otherwise). */
  resumeBody() {
    this.resume?.()
  }
  private deliver(effect: Effect.Effect<HttpClientResponse.HttpClientResponse, HttpClientError.RequestError>) {
    const resume = this.resumeEffect
    if (this.delivered || resume === undefined) return
    this.delivered = true
    this.resumeEffect = undefined
    clearTimeout(this.timer)
    resume(effect)
  }
  private answer(whole?: Whole) {
    return new Response(this.request, this.status, this.headers!, this.body, this.limit, whole)
  }
  onConnect(abort: (reason?: Error) => void) {
    if (this.reason !== undefined) abort(this.reason)
    else this.abort = abort
  }
  onHeaders(statusCode: number, rawHeaders: Array<Buffer>, resume: () => void): boolean {
    if (statusCode < 200) return true
    this.status = statusCode
    const headers = this.headers = util.parseHeaders(rawHeaders)
    if (readsWhole(headers)) {
      this.chunks = []
      return true
    }
    this.resume = resume
    const type = headers["content-type"]
    this.body = new Body(this, typeof type === "string" ? type : undefined)
    this.deliver(Effect.succeed(this.answer()))
    return true
  }
  onData(chunk: Buffer): boolean {
    if (this.chunks !== undefined) {
      this.chunks.push(chunk)
      return true
    }
    // false pauses the connection until the body's next read (`resumeBody`).
    return this.body!.push(chunk)
  }
  onComplete() {
    this.settled = true
    const chunks = this.chunks
    if (chunks === undefined) return void this.body!.push(null)
    this.deliver(Effect.succeed(this.answer({ bytes: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks) })))
  }
  onError(error: Error) {
    this.settled = true
    if (this.body !== undefined) return void this.body.destroy(error)
    if (this.chunks !== undefined) return this.deliver(Effect.succeed(this.answer({ failure: error })))
    this.deliver(Effect.fail(new HttpClientError.RequestError({ request: this.request, reason: "Transport", cause: error })))
  }
}

class Response extends Inspectable.Class implements HttpClientResponse.HttpClientResponse {
  readonly [HttpClientResponse.TypeId]: HttpClientResponse.TypeId = HttpClientResponse.TypeId
  readonly [IncomingMessage.TypeId]: IncomingMessage.TypeId = IncomingMessage.TypeId
  private cachedHeaders: Headers.Headers | undefined
  private textPromise: Promise<string> | undefined
  private textEffect: Effect.Effect<string, HttpClientError.ResponseError> | undefined
  private textRead: Effect.Effect<string> | undefined
  constructor(
    readonly request: HttpClientRequest.HttpClientRequest,
    readonly status: number,
    private readonly answerHeaders: AnswerHeaders,
    private readonly body: Body | undefined,
    private readonly limit?: CallLimit.CallLimit,
    private readonly whole?: Whole
  ) {
    super()
    if (body !== undefined) unread.register(this, body, this)
  }
  /** The body read within the exchange, as `read` gives it (or its read's failure). */
  private fromWhole<A>(whole: Whole, read: (bytes: Buffer) => A): Effect.Effect<A, HttpClientError.ResponseError> {
    return "bytes" in whole ? Effect.try({ try: () => read(whole.bytes), catch: (cause) => this.decodeError(cause) }) : Effect.fail(this.decodeError(whole.failure))
  }
  /** Whether the body was read within the exchange (observability/Upstream.ts reads this key). */
  get [bodyInHand](): boolean {
    return this.whole !== undefined
  }
  get headers(): Headers.Headers {
    return (this.cachedHeaders ??= Headers.fromInput(this.answerHeaders))
  }
  get cookies(): Cookies.Cookies {
    const header = this.answerHeaders["set-cookie"]
    return header === undefined ? Cookies.empty : Cookies.fromSetCookie(Array.isArray(header) ? header : [header])
  }
  get remoteAddress() {
    return Option.none<string>()
  }
  private decodeError(cause: unknown): HttpClientError.ResponseError {
    return new HttpClientError.ResponseError({ request: this.request, response: this, reason: "Decode", cause })
  }
  /**
   * The body as `read` gives it; an interrupted read destroys the body, and so does the time limit
   * of the exchange if it ends while the read runs (see `CallLimit`).
   */
  private consume<A>(read: (body: Body) => Promise<A>): Effect.Effect<A, HttpClientError.ResponseError> {
    return Effect.async<A, HttpClientError.ResponseError>((resume) => {
      unread.unregister(this)
      const body = this.body!
      const timer = armLimit(CallLimit.active(this.limit), () => body.destroy(timeLimit))
      if (timer === "over") {
        body.destroy()
        return resume(Effect.fail(this.decodeError(timeLimit)))
      }
      read(body).then(
        (a) => {
          clearTimeout(timer)
          resume(Effect.succeed(a))
        },
        (cause) => {
          clearTimeout(timer)
          resume(Effect.fail(this.decodeError(cause)))
        }
      )
      return Effect.sync(() => {
        clearTimeout(timer)
        body.destroy()
      })
    })
  }
  /**
   * Read once; every later read (the upstream instrumentation's, then the adapter's) gets the same
   * text: while the first read runs, by waiting for it; once it has ended, as a plain success (no
   * second wait on the body, no second time-limit timer).
   */
  get text(): Effect.Effect<string, HttpClientError.ResponseError> {
    // Decoded once, on the first read: every later read is the same plain success.
    const whole = this.whole
    if (whole !== undefined) return this.textEffect ??= "bytes" in whole ? Effect.succeed(utf8(whole.bytes)) : Effect.fail(this.decodeError(whole.failure))
    return this.textRead ?? (this.textEffect ??= this.consume((body) =>
      (this.textPromise ??= body.text().then((text) => {
        this.textRead = Effect.succeed(text)
        return text
      }))))
  }
  get json(): Effect.Effect<unknown, HttpClientError.ResponseError> {
    return Effect.flatMap(this.text, (text) =>
      Effect.try({ try: () => (text === "" ? null : JSON.parse(text)), catch: (cause) => this.decodeError(cause) }))
  }
  get urlParamsBody(): Effect.Effect<UrlParams.UrlParams, HttpClientError.ResponseError> {
    return Effect.flatMap(this.text, (text) =>
      Effect.try({ try: () => UrlParams.fromInput(new URLSearchParams(text)), catch: (cause) => this.decodeError(cause) }))
  }
  get arrayBuffer(): Effect.Effect<ArrayBuffer, HttpClientError.ResponseError> {
    if (this.whole !== undefined) {
      return this.fromWhole(this.whole, (bytes) => bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer)
    }
    return this.consume((body) => body.arrayBuffer())
  }
  get formData(): Effect.Effect<FormData, HttpClientError.ResponseError> {
    const whole = this.whole
    if (whole !== undefined) {
      return Effect.flatMap(this.fromWhole(whole, (bytes) => bytes), (bytes) =>
        Effect.tryPromise({
          try: () => new globalThis.Response(bytes, { headers: { "content-type": String(this.answerHeaders["content-type"]) } }).formData(),
          catch: (cause) => this.decodeError(cause)
        }))
    }
    return this.consume((body) => body.formData() as Promise<FormData>)
  }
  get stream(): Stream.Stream<Uint8Array, HttpClientError.ResponseError> {
    const whole = this.whole
    if (whole !== undefined) return "bytes" in whole ? Stream.succeed(new Uint8Array(whole.bytes)) : Stream.fail(this.decodeError(whole.failure))
    unread.unregister(this)
    return NodeStream.fromReadable<HttpClientError.ResponseError, Uint8Array>(() => this.body!, (cause): HttpClientError.ResponseError => this.decodeError(cause))
  }
  toJSON(): unknown {
    return IncomingMessage.inspect(this, { _id: "@effect/platform/HttpClientResponse", request: this.request.toJSON(), status: this.status })
  }
}

/**
 * The lean client over `fallback` (the platform's client, for traced calls and streamed or form
 * bodies). Pools are made on first use per origin and closed with the layer.
 */
export const make = (fallback: HttpClient.HttpClient, pools: Map<string, Pool> = new Map()): HttpClient.HttpClient => {
  const poolOf = (origin: string) => {
    let pool = pools.get(origin)
    if (pool === undefined) {
      pool = new Pool(origin)
      pools.set(origin, pool)
    }
    return pool
  }
  return CallLimit.markEnforcing(HttpClient.makeWith<never, never, HttpClientError.HttpClientError, never>(
    (requestEffect) =>
      Effect.flatMap(requestEffect, (request) =>
        Effect.withFiberRuntime<HttpClientResponse.HttpClientResponse, HttpClientError.HttpClientError>((fiber) => {
          const body = request.body
          const limit = CallLimit.active(fiber.getFiberRef(CallLimit.current))
          if (fiber.getFiberRef(FiberRef.currentTracerEnabled) || (body._tag !== "Empty" && body._tag !== "Uint8Array" && body._tag !== "Raw")) {
            return limit === undefined ? fallback.execute(request) : Effect.timeoutFail(fallback.execute(request), {
              duration: Math.max(0, limit.at - Date.now()),
              onTimeout: () => {
                limit.expired = true
                return new HttpClientError.RequestError({ request, reason: "Transport", cause: timeLimit })
              }
            })
          }
          const parsed = UrlParams.makeUrl(request.url, request.urlParams, request.hash)
          if (parsed._tag === "Left") {
            return Effect.fail(new HttpClientError.RequestError({ request, reason: "InvalidUrl", cause: parsed.left }))
          }
          const url = parsed.right
          return Effect.async<HttpClientResponse.HttpClientResponse, HttpClientError.RequestError>((resume) => {
            const exchange = new Exchange(request, limit, resume)
            const timer = armLimit(limit, () => exchange.cut(aborted()))
            if (timer === "over") return resume(Effect.fail(new HttpClientError.RequestError({ request, reason: "Transport", cause: timeLimit })))
            exchange.timer = timer
            let pool: Pool
            try {
              // A pool cannot be made for an origin that is not http(s): a Transport error, as a
              // refused connection is (not a defect).
              pool = poolOf(url.origin)
            } catch (cause) {
              clearTimeout(timer)
              return resume(Effect.fail(new HttpClientError.RequestError({ request, reason: "Transport", cause })))
            }
            // A dispatch that throws reports it to the exchange's onError (a Transport error).
            pool.dispatch({
              method: request.method,
              headers: request.headers,
              path: url.pathname + url.search,
              body: body._tag === "Empty" ? null : (body.body as Uint8Array | string),
              // Timeouts are the callers' (Effect.timeout and the like), as with the platform's client.
              headersTimeout: 60 * 60 * 1000,
              bodyTimeout: 0
            }, exchange)
            return Effect.sync(() => exchange.drop())
          })
        })
      ),
    Effect.succeed
  ))
}

/** The lean client over the `HttpClient` in context (the platform's undici client, for fallback). */
export const layer: Layer.Layer<HttpClient.HttpClient, never, HttpClient.HttpClient> = Layer.scoped(
  HttpClient.HttpClient,
  Effect.gen(function*() {
    const fallback = yield* HttpClient.HttpClient
    const pools = new Map<string, Pool>()
    yield* Effect.addFinalizer(() => Effect.promise(() => Promise.all([...pools.values()].map((p) => p.destroy())).then(() => pools.clear())))
    return make(fallback, pools)
  })
)

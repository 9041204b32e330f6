/**
 * vendor-a protocol "responses" (E2), synchronous: `POST {base}/responses` with the gateway's body
 * forwarded as is, answered with the response object or, for `stream: true`, with server-sent
 * events passed on one by one as they arrive; `GET {base}/responses/{id}` for background polling
 * (with `stream=true&starting_after=<n>`, a background response's events again);
 * `POST {base}/responses/{id}/cancel`; `DELETE {base}/responses/{id}`.
 * Vendor errors become the core's upstream failures, each with the status the gateway answers.
 */
import type * as Headers from "@effect/platform/Headers"
import type * as HttpClient from "@effect/platform/HttpClient"
import type * as HttpClientError from "@effect/platform/HttpClientError"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import type * as HttpClientResponse from "@effect/platform/HttpClientResponse"
import { Responses } from "@genway/core"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import type { VendorAConfig } from "../Config.js"
import { isOk, parseErrorBody, retryAfterOf, scrubber } from "./http.js"
import { Http } from "@genway/adapter-kit"

const VENDOR = "vendor-a"

// On the adapter's own log lines only: annotating every call instead changes two fiber-locals per call.
const logFields = { vendor: VENDOR, protocol: "responses" } as const

/** Time limits of the exchanges. */
export interface Timeouts {
  /** A whole non-streamed create (reasoning can take minutes). */
  readonly create: Duration.DurationInput
  /** A streamed create, until the answer's headers. */
  readonly open: Duration.DurationInput
  /** Silence between two pieces of a stream. */
  readonly idle: Duration.DurationInput
  /** A retrieve. */
  readonly retrieve: Duration.DurationInput
}

/** Defaults: 10 minutes for a create, 60 s to open a stream, 5 minutes of stream silence, 30 s for a retrieve. */
export const defaultTimeouts: Timeouts = { create: "10 minutes", open: "60 seconds", idle: "5 minutes", retrieve: "30 seconds" }

/** Largest event the parser holds (a final `response` object repeats the whole text). */
const maxEventChars = 16 * 1024 * 1024

/** One parsed server-sent event. */
export interface SseEvent {
  readonly event: string
  readonly data: string
}

/**
 * An incremental parser of `text/event-stream` (`event:` and `data:` fields, `:` comments, LF or
 * CRLF line ends). `feed` returns the events completed by a piece of text; `undefined` when the
 * pending event grew past the limit.
 */
export const sseParser = (maxChars = maxEventChars) => {
  let buffer = ""
  let data: Array<string> = []
  let event: string | undefined
  let pending = 0
  const feed = (text: string): Array<SseEvent> | undefined => {
    buffer += text
    const out: Array<SseEvent> = []
    let start = 0
    for (;;) {
      const end = buffer.indexOf("\n", start)
      if (end < 0) break
      const line = buffer.charCodeAt(end - 1) === 13 && end > start ? buffer.slice(start, end - 1) : buffer.slice(start, end)
      start = end + 1
      if (line === "") {
        if (data.length > 0) out.push({ event: event ?? "message", data: data.join("\n") })
        data = []
        event = undefined
        pending = 0
        continue
      }
      if (line.charCodeAt(0) === 58) continue
      const colon = line.indexOf(":")
      const field = colon < 0 ? line : line.slice(0, colon)
      const value = colon < 0 ? "" : line.charCodeAt(colon + 1) === 32 ? line.slice(colon + 2) : line.slice(colon + 1)
      if (field === "data") {
        data.push(value)
        pending += value.length
      } else if (field === "event") {
        event = value
      }
    }
    buffer = buffer.slice(start)
    return pending + buffer.length > maxChars ? undefined : out
  }
  return { feed }
}

/** The vendor-a "responses" protocol over the gateway's HTTP client. */
export const make = (config: VendorAConfig, client: HttpClient.HttpClient, timeouts: Timeouts): Responses.ResponsesUpstream => {
  const base = config.baseUrl
  const scrub = scrubber(config)
  const authorize = HttpClientRequest.bearerToken(config.apiKey)

  const unavailable = (status: 502 | 503 | 504, message: string, retryAfter?: Duration.Duration) =>
    new Responses.UpstreamUnavailable({
      status,
      message,
      ...(retryAfter !== undefined ? { retryAfterMs: Duration.toMillis(retryAfter) } : {})
    })

  const fromClientError = (error: HttpClientError.HttpClientError) =>
    error._tag === "RequestError"
      ? unavailable(502, `the gateway could not reach ${VENDOR}`)
      : unavailable(502, `${VENDOR}'s answer was cut off`)

  /** The failure for an answer with an error status. */
  const failureOf = (
    status: number,
    headers: Headers.Headers,
    text: string,
    retrievedId?: string
  ): Effect.Effect<never, Responses.UpstreamError> =>
    Effect.gen(function*() {
      const body = parseErrorBody(text)
      const label = `${VENDOR} answered HTTP ${status}${body?.code !== undefined ? ` (${body.code})` : ""}`
      const message = scrub(body?.message ?? label)
      const retryAfter = retryAfterOf(headers)
      if (status === 401 || status === 403) {
        yield* Effect.logError(`${label}: check VENDOR_A_API_KEY and the account's access to the model`).pipe(
          Effect.annotateLogs({ ...logFields, vendorMessage: message })
        )
        return yield* new Responses.UpstreamAuthFailed({
          status: 502,
          message: `${VENDOR} refused the gateway's credentials; the gateway's operator must fix its configuration`
        })
      }
      if (status === 429) {
        if (body?.code === "insufficient_quota") {
          yield* Effect.logError(`${label}: the vendor account has no quota left`).pipe(Effect.annotateLogs(logFields))
          return yield* unavailable(503, `the gateway's ${VENDOR} account has no quota left; try again later`)
        }
        return yield* new Responses.UpstreamRateLimited({
          status: 429,
          message,
          code: body?.code ?? "rate_limit_exceeded",
          ...(retryAfter !== undefined ? { retryAfterMs: Duration.toMillis(retryAfter) } : {})
        })
      }
      if (status === 404 && retrievedId !== undefined) return yield* new Responses.ResponseNotFound({ status: 404, id: retrievedId })
      if (status === 408 || status === 504) return yield* unavailable(504, `${VENDOR} did not answer in time`, retryAfter)
      if (status === 503) return yield* unavailable(503, `${VENDOR} is overloaded: ${message}`, retryAfter)
      if (status >= 500 || status < 400) return yield* unavailable(502, `${label}: ${message}`, retryAfter)
      return yield* new Responses.UpstreamRejected({ status, message, param: body?.param ?? null, code: body?.code ?? null })
    })

  const withTimeout = <A>(
    limit: Duration.DurationInput,
    effect: Effect.Effect<A, HttpClientError.HttpClientError | Responses.UpstreamError>
  ): Effect.Effect<A, Responses.UpstreamError> =>
    Http.within(client, effect, limit, () => unavailable(504, `${VENDOR} did not answer in time`)).pipe(
      Effect.catchTags({ RequestError: fromClientError, ResponseError: fromClientError })
    )

  // A plain function rather than a generator: it runs once per answer, on every E2 request.
  const decodeObject = (text: string): Effect.Effect<Responses.ResponseObject, Responses.UpstreamError> => {
    let parsed: unknown
    try {
      parsed = JSON.parse(text)
    } catch {
      parsed = undefined
    }
    const candidate = parsed as { readonly id?: unknown; readonly status?: unknown } | undefined
    if (typeof candidate !== "object" || candidate === null || typeof candidate.id !== "string" || typeof candidate.status !== "string") {
      return Effect.fail(unavailable(502, `${VENDOR} sent an unreadable response object`))
    }
    const object = parsed as Responses.ResponseObject
    if (!Responses.ResponseStatus.literals.includes(candidate.status as Responses.ResponseStatus)) {
      // Kept as sent: a state this gateway does not know is treated as not finished.
      return Effect.as(
        Effect.logWarning(`${VENDOR}: unknown response status`).pipe(
          Effect.annotateLogs({ ...logFields, status: scrub(candidate.status).slice(0, 100) })
        ),
        object
      )
    }
    return Effect.succeed(object)
  }

  const answer = (response: HttpClientResponse.HttpClientResponse, retrievedId?: string) =>
    Effect.flatMap(response.text, (text) =>
      isOk(response.status) ? decodeObject(text) : failureOf(response.status, response.headers, text, retrievedId))

  const post = (body: Readonly<Record<string, unknown>>, accept: string) =>
    authorize(
      HttpClientRequest.post(`${base}/responses`).pipe(
        HttpClientRequest.setHeader("accept", accept),
        HttpClientRequest.bodyUnsafeJson(body)
      )
    )

  const create = (body: Readonly<Record<string, unknown>>) =>
    withTimeout(timeouts.create, Effect.flatMap(client.execute(post(body, "application/json")), (r) => answer(r)))

  const retrieve = (id: string) =>
    withTimeout(
      timeouts.retrieve,
      Effect.flatMap(
        client.execute(authorize(HttpClientRequest.get(`${base}/responses/${encodeURIComponent(id)}`).pipe(HttpClientRequest.acceptJson))),
        (r) => answer(r, id)
      )
    )

  const brokenStream = unavailable(502, `${VENDOR}'s stream broke off`)

  /** The events of an open stream, parsed as they arrive; ends after the terminal event. */
  const events = (response: HttpClientResponse.HttpClientResponse): Stream.Stream<Responses.ResponseEvent, Responses.UpstreamError> => {
    const parser = sseParser()
    let finished = false
    const parsed = response.stream.pipe(
      Stream.mapError(() => brokenStream),
      Stream.decodeText(),
      Stream.timeoutFail(() => unavailable(504, `${VENDOR}'s stream went silent`), timeouts.idle),
      Stream.mapConcatEffect((text) => {
        const found = parser.feed(text)
        if (found === undefined) return Effect.fail(unavailable(502, `${VENDOR} sent an event larger than the gateway accepts`))
        const out: Array<Responses.ResponseEvent> = []
        for (const sse of found) {
          let data: unknown
          try {
            data = JSON.parse(sse.data)
          } catch {
            return Effect.fail(unavailable(502, `${VENDOR} sent an unreadable event`))
          }
          if (typeof data !== "object" || data === null || Array.isArray(data)) {
            return Effect.fail(unavailable(502, `${VENDOR} sent an unreadable event`))
          }
          const event = data as Record<string, unknown>
          const type = typeof event.type === "string" ? event.type : sse.event
          const sequence = typeof event.sequence_number === "number" ? event.sequence_number : out.length
          const typed = { ...event, type, sequence_number: sequence } as Responses.ResponseEvent
          // An `error` event is the vendor's own explanation of an early end.
          if (Responses.isTerminalEvent(typed) || type === "error") finished = true
          out.push(typed)
        }
        return Effect.succeed(out)
      }),
      Stream.takeUntil(Responses.isTerminalEvent)
    )
    const early = Stream.suspend(() =>
      finished ? Stream.empty : Stream.fail(unavailable(502, `${VENDOR}'s stream ended before the response finished`))
    )
    return Stream.concat(parsed, early)
  }

  const stream = (body: Readonly<Record<string, unknown>>) =>
    withTimeout(
      timeouts.open,
      Effect.flatMap(client.execute(post(body, "text/event-stream")), (response) =>
        isOk(response.status)
          ? Effect.succeed(events(response))
          : Effect.flatMap(response.text, (text) => failureOf(response.status, response.headers, text)))
    )

  const one = (id: string, suffix = "") => `${base}/responses/${encodeURIComponent(id)}${suffix}`

  const cancel = (id: string) =>
    withTimeout(
      timeouts.retrieve,
      Effect.flatMap(
        client.execute(authorize(HttpClientRequest.post(one(id, "/cancel")).pipe(HttpClientRequest.acceptJson))),
        (r) => answer(r, id)
      )
    )

  const remove = (id: string) =>
    withTimeout(
      timeouts.retrieve,
      Effect.flatMap(
        client.execute(authorize(HttpClientRequest.del(one(id)).pipe(HttpClientRequest.acceptJson))),
        (response) =>
          Effect.flatMap(response.text, (text) =>
            isOk(response.status) ? Effect.void : failureOf(response.status, response.headers, text, id))
      )
    )

  const resume = (id: string, startingAfter: number | undefined) =>
    withTimeout(
      timeouts.open,
      Effect.flatMap(
        client.execute(authorize(
          HttpClientRequest.get(one(id)).pipe(
            HttpClientRequest.setHeader("accept", "text/event-stream"),
            HttpClientRequest.setUrlParams({
              stream: "true",
              ...(startingAfter !== undefined ? { starting_after: String(startingAfter) } : {})
            })
          )
        )),
        (response) =>
          isOk(response.status)
            ? Effect.succeed(events(response))
            : Effect.flatMap(response.text, (text) => failureOf(response.status, response.headers, text, id))
      )
    )

  return { create, stream, retrieve, cancel, remove, resume }
}

/**
 * HTTP plumbing every adapter needs and no vendor shapes: one exchange read whole within a time
 * limit, transport failures classified by whether the request can have reached the vendor, the
 * `Retry-After` header, result downloads that follow redirects without carrying the vendor's key
 * off its origin, and scrubbing of secrets from vendor text. Vendor facts (paths, header names,
 * envelopes, status strings) are the caller's and come in as parameters.
 */
import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import type * as Headers from "@effect/platform/Headers"
import type * as HttpClient from "@effect/platform/HttpClient"
import type * as HttpClientError from "@effect/platform/HttpClientError"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import type * as HttpClientResponse from "@effect/platform/HttpClientResponse"
import { CallLimit, LiveTimer, VendorAdapter } from "@genway/core"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as FiberRef from "effect/FiberRef"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import * as Outcome from "./Outcome.js"

/** A complete HTTP answer (task APIs answer small JSON documents). */
export interface Answer {
  readonly status: number
  readonly headers: Headers.Headers
  readonly text: string
}

/** Whether a status is a success (2xx). */
export const isOk = (status: number): boolean => status >= 200 && status < 300

/** Whether a status means "try again later": 408, 429 and every 5xx. */
export const isTransientStatus = (status: number): boolean => status === 408 || status === 429 || status >= 500

/** Whether a value is a plain JSON object. */
export const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/** Parses a JSON object answer; `undefined` when the text is not a JSON object. */
export const parseObject = (text: string): Record<string, unknown> | undefined => {
  try {
    const value: unknown = JSON.parse(text)
    return isRecord(value) ? value : undefined
  } catch {
    return undefined
  }
}

/** A string field, when it is one. */
export const stringAt = (value: unknown, key: string): string | undefined => {
  if (!isRecord(value)) return undefined
  const v = value[key]
  return typeof v === "string" ? v : undefined
}

// ---------------------------------------------------------------------------------------------
// transport failures
// ---------------------------------------------------------------------------------------------

/**
 * Why an exchange produced no answer. `Unsendable`: the request could not be built or encoded, so
 * sending it again cannot help. `Lost`: the connection failed, broke off or stayed silent; `sent`
 * is false only when the request provably never left this process (connection refused, name not
 * resolved, host unreachable), since a timeout or a reset may hide a request the vendor accepted.
 */
export type NoAnswer =
  | { readonly _tag: "Unsendable" }
  | { readonly _tag: "Lost"; readonly reason: string; readonly sent: boolean }

// System errors that mean the request never left this machine: safe to retry even for a create.
const notSentCodes = new Set(["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "EHOSTUNREACH", "ENETUNREACH", "UND_ERR_CONNECT_TIMEOUT"])

/** The `code`s (`ECONNREFUSED`, …) along an error's cause chain; fetch and node:http nest them differently. */
export const errorCodes = (u: unknown, depth = 0): ReadonlyArray<string> => {
  if (depth > 6 || typeof u !== "object" || u === null) return []
  const record = u as { readonly code?: unknown; readonly cause?: unknown; readonly errors?: unknown }
  const own = typeof record.code === "string" ? [record.code] : []
  const nested = Array.isArray(record.errors) ? [record.cause, ...record.errors] : [record.cause]
  return [...own, ...nested.flatMap((n) => errorCodes(n, depth + 1))]
}

/** Classifies a client error: unsendable, or lost (and whether it can have been sent). */
export const noAnswer = (error: HttpClientError.HttpClientError): NoAnswer => {
  if (error._tag === "RequestError" && error.reason !== "Transport") return { _tag: "Unsendable" }
  const codes = errorCodes(error.cause)
  const notSent = error._tag === "RequestError" && codes.length > 0 && codes.every((c) => notSentCodes.has(c))
  const what = error._tag === "RequestError" ? "connection failed" : "answer cut off"
  return { _tag: "Lost", reason: codes.length > 0 ? `${what} (${codes[0]})` : what, sent: !notSent }
}

/**
 * `self`, or `onTimeout()` as its failure once `duration` has passed (`self` is then interrupted
 * first) — `Effect.timeoutFail` at a fraction of its cost. That one races two forked fibers, one
 * of them sleeping on the clock, and joins their fiber-locals back: on this machine about 50 µs of
 * CPU per call, a tenth of a gateway's whole work on an E2 request. Here, on the live clock,
 * `self` runs in one forked fiber, the limit is a plain timer, and the fiber-locals `self` changed
 * are joined back on success, as there. Under any other clock (`TestClock` in tests) this is
 * `Effect.timeoutFail` itself, so tests move time as before.
 */
export const deadline = <A, E, R, E2>(
  self: Effect.Effect<A, E, R>,
  duration: Duration.DurationInput,
  onTimeout: () => E2
): Effect.Effect<A, E | E2, R> =>
  Effect.clockWith((clock) => {
    const ms = Duration.toMillis(duration)
    if (!LiveTimer.usable(clock, ms)) return Effect.timeoutFail(self, { duration, onTimeout })
    return Effect.uninterruptibleMask((restore) =>
      Effect.flatMap(Effect.fork(restore(self)), (child) =>
        // `onInterrupt` as well as the canceler: an interruption pending before the wait begins
        // never reaches the canceler.
        Effect.onInterrupt(restore(Effect.async<A, E | E2>((resume) => {
          let done = false
          const timer = setTimeout(() => {
            if (done) return
            done = true
            resume(Effect.zipRight(Fiber.interrupt(child), Effect.failSync(onTimeout)))
          }, ms)
          child.addObserver((exit) => {
            if (done) return
            done = true
            clearTimeout(timer)
            resume(Exit.isSuccess(exit) ? Effect.zipRight(child.inheritAll, exit) : exit)
          })
          return Effect.sync(() => {
            done = true
            clearTimeout(timer)
          })
        })), () => Fiber.interrupt(child)))
    )
  })

/**
 * `self` — exchanges through `client` and the work on their answers — or `onTimeout()` as its
 * failure once `duration` has passed. With a client that enforces limits itself (`CallLimit`: the
 * gateway's upstream client) no fiber is forked: the limit goes on the fiber for the client, whose
 * timer aborts an exchange (or a body read) still running at the limit. With any other client,
 * another clock (`TestClock`) or tracing on (the gateway's client then uses the platform's), this
 * is `deadline`. Only what goes through the client is bounded: `self` must wait on nothing else.
 */
export const within = <A, E, R, E2>(
  client: HttpClient.HttpClient,
  self: Effect.Effect<A, E, R>,
  duration: Duration.DurationInput,
  onTimeout: () => E2
): Effect.Effect<A, E | E2, R> => {
  if (!CallLimit.isEnforcing(client)) return deadline(self, duration, onTimeout)
  return Effect.clockWith((clock) =>
    Effect.withFiberRuntime((fiber) => {
      const ms = Duration.toMillis(duration)
      if (!LiveTimer.usable(clock, ms) || fiber.getFiberRef(FiberRef.currentTracerEnabled)) {
        return deadline(self, duration, onTimeout)
      }
      // Set on the fiber, not restored afterwards (`Effect.locally` would cost a scoped acquire and
      // release, about 15 Effect steps per call): once `self` ends — succeeded, failed or
      // interrupted — the limit is inactive, and the one it was set in is in force again.
      const limit: CallLimit.CallLimit = {
        at: Date.now() + ms,
        expired: false,
        active: true,
        outer: CallLimit.active(fiber.getFiberRef(CallLimit.current))
      }
      // Set where no interruption can come between the setting and the handlers that end it.
      return Effect.uninterruptibleMask((restore) =>
        Effect.zipRight(FiberRef.set(CallLimit.current, limit), Effect.matchCauseEffect(restore(self), {
          onFailure: (cause): Effect.Effect<never, E | E2> => {
            limit.active = false
            return limit.expired && !Cause.isInterrupted(cause) ? Effect.fail(onTimeout()) : Effect.failCause(cause)
          },
          onSuccess: (a) => {
            limit.active = false
            return Effect.succeed(a)
          }
        })
      ))
    })
  )
}

/** Bounds an HTTP effect by `timeout` and turns client errors and the timeout into `NoAnswer`. */
export const guard = <A, R>(
  effect: Effect.Effect<A, HttpClientError.HttpClientError, R>,
  timeout: Duration.DurationInput
): Effect.Effect<A, NoAnswer, R> =>
  deadline(Effect.mapError(effect, noAnswer), timeout, (): NoAnswer => ({ _tag: "Lost", reason: "no answer in time", sent: true }))

/** Reads a whole answer. */
export const readAnswer = (
  response: HttpClientResponse.HttpClientResponse
): Effect.Effect<Answer, HttpClientError.ResponseError> =>
  Effect.map(response.text, (text): Answer => ({ status: response.status, headers: response.headers, text }))

/** Sends one request and reads the whole answer within `timeout`. */
export const exchange = (
  client: HttpClient.HttpClient,
  request: HttpClientRequest.HttpClientRequest,
  timeout: Duration.DurationInput
): Effect.Effect<Answer, NoAnswer> => guard(Effect.flatMap(client.execute(request), readAnswer), timeout)

/** How an adapter turns a `NoAnswer` into its outcome. */
export interface LostOptions {
  /** The vendor's name, for messages. */
  readonly vendor: string
  /** The step the exchange belongs to; only a `"submit"` can have created something upstream. */
  readonly phase: string
  /** Builds the refusal of an unsendable request; default `Outcome.rejected`. */
  readonly rejected?: (code: 3001, detail: string) => VendorAdapter.Rejected
}

/**
 * The outcome of an exchange without an answer: a create that may have reached the vendor is
 * `OutcomeUnknown` (never resent blindly), anything else that was lost is `Retryable`, and an
 * unsendable request fails the task.
 */
export const lost = (options: LostOptions) => (error: NoAnswer): VendorAdapter.AdapterError => {
  if (error._tag === "Unsendable") {
    return (options.rejected ?? Outcome.rejected)(3001, `the request to ${options.vendor} could not be encoded`)
  }
  return options.phase === "submit" && error.sent
    ? new VendorAdapter.OutcomeUnknown({ reason: `${options.vendor}: ${error.reason} after the create request was sent` })
    : new VendorAdapter.Retryable({ reason: `${options.vendor}: ${error.reason} during ${options.phase}` })
}

// ---------------------------------------------------------------------------------------------
// retry hints
// ---------------------------------------------------------------------------------------------

/** A header holding a non-negative number (`retry-after-ms`, a poll hint), when it holds one. */
export const numberHeader = (headers: Headers.Headers, name: string): number | undefined => {
  const value = headers[name]
  if (value === undefined || value.trim() === "") return undefined
  const n = Number(value)
  return Number.isFinite(n) && n >= 0 ? n : undefined
}

/** `Retry-After` (seconds or an HTTP date) as seen at `nowMillis`, when present and sensible. */
export const retryAfterAt = (headers: Headers.Headers, nowMillis: number): Duration.Duration | undefined => {
  const seconds = numberHeader(headers, "retry-after")
  if (seconds !== undefined) return Duration.millis(seconds * 1000)
  const value = headers["retry-after"]
  if (value === undefined || value.trim() === "") return undefined
  const at = Date.parse(value)
  return Number.isNaN(at) ? undefined : Duration.millis(Math.max(0, at - nowMillis))
}

/** `Retry-After` against the Effect clock. */
export const retryAfter = (headers: Headers.Headers): Effect.Effect<Duration.Duration | undefined> =>
  Effect.map(Clock.currentTimeMillis, (now) => retryAfterAt(headers, now))

// ---------------------------------------------------------------------------------------------
// secrets
// ---------------------------------------------------------------------------------------------

/**
 * Removes secrets and the internal base URL from vendor text before it reaches a client, a task
 * error or a log; the result is at most 1,000 characters.
 */
export const scrubber = (options: { readonly secrets: ReadonlyArray<string>; readonly baseUrl: string }) =>
(text: string): string => {
  let out = text
  for (const secret of options.secrets) {
    if (secret.length > 0) out = out.split(secret).join("[redacted]")
  }
  return out.split(options.baseUrl).join("").slice(0, 1000)
}

// ---------------------------------------------------------------------------------------------
// result downloads
// ---------------------------------------------------------------------------------------------

/** How an adapter fetches result media. */
export interface DownloadOptions {
  /** The vendor's name, for messages (never the URL: signed URLs are secrets too). */
  readonly vendor: string
  /** Limit until the answer's headers arrive; the body then streams without one. */
  readonly timeout: Duration.DurationInput
  /**
   * Result URLs that need the vendor's key: `authorize` is applied to requests for `origin` only,
   * so the key never follows a redirect elsewhere. Without it no credentials are sent (signed URLs
   * carry their own authority).
   */
  readonly key?: {
    readonly origin: string
    readonly authorize: (request: HttpClientRequest.HttpClientRequest) => HttpClientRequest.HttpClientRequest
  }
  /** The outcome of an error status; default `mediaFailure`. */
  readonly failure?: (answer: Answer) => Effect.Effect<never, VendorAdapter.AdapterError>
  /** Builds a refusal; default `Outcome.rejected`. */
  readonly rejected?: (code: 3001, detail: string) => VendorAdapter.Rejected
}

const redirectStatuses = new Set([301, 302, 303, 307, 308])
const maxRedirects = 5

/** The default outcome of an error status from result media: transient ones retry, others fail the task. */
export const mediaFailure = (vendor: string) => (answer: Answer): Effect.Effect<never, VendorAdapter.AdapterError> =>
  isTransientStatus(answer.status)
    ? Effect.flatMap(retryAfter(answer.headers), (after) =>
      Effect.fail(Outcome.retryable(`${vendor}: result media answered HTTP ${answer.status}`, after)))
    : Effect.fail(Outcome.rejected(3001, `The result media is no longer available from ${vendor} (HTTP ${answer.status}).`))

/**
 * Fetches result media and streams the body, following up to five redirects itself (a client
 * that follows them would carry the key along). Inline bytes are passed through, whole as `bytes` too.
 */
export const download = (
  client: HttpClient.HttpClient,
  source: VendorAdapter.MediaSource,
  options: DownloadOptions
): Effect.Effect<VendorAdapter.MediaDownload, VendorAdapter.AdapterError> => {
  if (source._tag === "Bytes") {
    return Effect.succeed(VendorAdapter.inlineDownload(source))
  }
  const { key, vendor } = options
  const rejected = options.rejected ?? Outcome.rejected
  const failure = options.failure ?? mediaFailure(vendor)
  const transport = lost({ vendor, phase: "download", rejected })
  const bounded = <A>(effect: Effect.Effect<A, HttpClientError.HttpClientError>) =>
    Effect.mapError(guard(effect, options.timeout), transport)

  const open = (url: URL): Effect.Effect<HttpClientResponse.HttpClientResponse, VendorAdapter.AdapterError> =>
    Effect.gen(function*() {
      const request = HttpClientRequest.get(url)
      const requestInit = yield* Effect.serviceOption(FetchHttpClient.RequestInit)
      return yield* bounded(
        client.execute(key !== undefined && url.origin === key.origin ? key.authorize(request) : request).pipe(
          // fetch would follow redirects itself; node:http never does.
          Effect.provideService(FetchHttpClient.RequestInit, { ...Option.getOrElse(requestInit, () => ({})), redirect: "manual" })
        )
      )
    })

  const fetchMedia = (url: string, hops: number): Effect.Effect<VendorAdapter.MediaDownload, VendorAdapter.AdapterError> =>
    Effect.gen(function*() {
      let target: URL
      try {
        target = new URL(url)
      } catch {
        return yield* rejected(3001, `${vendor} returned an unusable result address`)
      }
      if (target.protocol !== "http:" && target.protocol !== "https:") {
        return yield* rejected(3001, `${vendor} returned an unusable result address`)
      }
      const response = yield* open(target)
      const location = response.headers["location"]
      if (redirectStatuses.has(response.status) && location !== undefined) {
        if (hops >= maxRedirects) return yield* rejected(3001, `${vendor}'s result download redirected too often`)
        yield* Effect.ignore(response.text)
        return yield* fetchMedia(new URL(location, target).href, hops + 1)
      }
      if (isOk(response.status)) {
        const announced = response.headers["content-type"]
        const generic = announced === undefined || /^(application|binary)\/octet-stream/i.test(announced)
        return {
          contentType: generic ? source.contentType ?? announced ?? "application/octet-stream" : announced,
          body: Stream.mapError(response.stream, () => new VendorAdapter.Retryable({ reason: `${vendor}: download interrupted` }))
        }
      }
      const text = yield* bounded(response.text)
      return yield* failure({ status: response.status, headers: response.headers, text })
    })

  return fetchMedia(source.url, 0)
}

// ---------------------------------------------------------------------------------------------
// a vendor's HTTP access, by step
// ---------------------------------------------------------------------------------------------

/** The step of a task an exchange belongs to; only a submit can create something upstream. */
export type Phase = "submit" | "poll" | "download"

/** How long each step's exchange may take (downloads: until the answer's headers arrive). */
export type Timeouts = Readonly<Record<Phase, Duration.DurationInput>>

/** A vendor's HTTP access as its protocol modules see it. */
export interface Upstream {
  readonly baseUrl: string
  /** Sends an authorized request and reads the whole answer; transport failures are mapped by phase. */
  readonly exchange: (request: HttpClientRequest.HttpClientRequest, phase: Phase) => Effect.Effect<Answer, VendorAdapter.AdapterError>
  /** The outcome of an answer with an error status. */
  readonly failure: (answer: Answer, phase: Phase) => Effect.Effect<never, VendorAdapter.AdapterError>
  /** Fetches result media, following redirects, with the key only towards the vendor's own origin. */
  readonly download: (source: VendorAdapter.MediaSource) => Effect.Effect<VendorAdapter.MediaDownload, VendorAdapter.AdapterError>
  /** Removes the secrets and the base URL from vendor text before it reaches a task error or a log. */
  readonly scrub: (text: string) => string
}

/** What `upstream` needs to know of a vendor. */
export interface UpstreamOptions {
  readonly vendor: string
  /** `{base}`, without a trailing slash; its origin is the only one the key is sent to. */
  readonly baseUrl: string
  readonly client: HttpClient.HttpClient
  readonly timeouts: Timeouts
  /** Adds the vendor's credentials to a request. */
  readonly authorize: (request: HttpClientRequest.HttpClientRequest) => HttpClientRequest.HttpClientRequest
  /** Values to scrub from vendor text (the key). */
  readonly secrets: ReadonlyArray<string>
  /** The vendor's outcome of an error status, given the scrubber. */
  readonly failure: (
    answer: Answer,
    phase: Phase,
    scrub: (text: string) => string
  ) => Effect.Effect<never, VendorAdapter.AdapterError>
  /** Builds a refusal; default `Outcome.rejected`. */
  readonly rejected?: (code: 3001, detail: string) => VendorAdapter.Rejected
}

/** A vendor's HTTP access: authorized exchanges bounded per step, its error mapping, downloads, scrubbing. */
export const upstream = (options: UpstreamOptions): Upstream => {
  const { authorize, baseUrl, client, rejected, timeouts, vendor } = options
  const origin = new URL(baseUrl).origin
  const scrub = scrubber({ secrets: options.secrets, baseUrl })
  const failure = (answer: Answer, phase: Phase) => options.failure(answer, phase, scrub)
  return {
    baseUrl,
    scrub,
    failure,
    exchange: (request, phase) =>
      exchange(client, authorize(request), timeouts[phase]).pipe(
        Effect.mapError(lost({ vendor, phase, ...(rejected !== undefined ? { rejected } : {}) }))
      ),
    download: (source) =>
      download(client, source, {
        vendor,
        timeout: timeouts.download,
        key: { origin, authorize },
        failure: (answer) => failure(answer, "download"),
        ...(rejected !== undefined ? { rejected } : {})
      })
  }
}

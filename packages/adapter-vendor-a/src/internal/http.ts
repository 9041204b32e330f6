/**
 * vendor-a's HTTP conventions, shared by its protocols: bearer auth, the error envelope
 * `{"error": {"message", "type", "param", "code"}}`, retry hints, result downloads, and how a
 * failed exchange becomes an adapter outcome. The phase decides: a submit whose answer was lost
 * is `OutcomeUnknown` (the vendor may have created the job), a lost poll or download is `Retryable`.
 */
import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import type * as Headers from "@effect/platform/Headers"
import type * as HttpClient from "@effect/platform/HttpClient"
import type * as HttpClientError from "@effect/platform/HttpClientError"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import type * as HttpClientResponse from "@effect/platform/HttpClientResponse"
import { TaskInfo, VendorAdapter } from "@genway/core"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Stream from "effect/Stream"
import type { VendorAConfig } from "../Config.js"

/** Which step of a task an exchange belongs to. */
export type Phase = "submit" | "poll" | "download"

/** How long each kind of exchange may take (downloads: until the answer's headers arrive). */
export type Timeouts = Readonly<Record<Phase, Duration.DurationInput>>

/** Defaults: a create carries an image of up to 10 MB, polls are small. */
export const defaultTimeouts: Timeouts = { submit: "60 seconds", poll: "30 seconds", download: "60 seconds" }

/** A whole answer of the vendor. */
export interface Reply {
  readonly status: number
  readonly headers: Headers.Headers
  readonly text: string
}

/** vendor-a as seen by its protocol modules. */
export interface Upstream {
  readonly baseUrl: string
  /** Sends an authorized request and reads the whole answer; transport failures are mapped by phase. */
  readonly exchange: (request: HttpClientRequest.HttpClientRequest, phase: Phase) => Effect.Effect<Reply, VendorAdapter.AdapterError>
  /** The outcome of an answer with an error status. */
  readonly failure: (reply: Reply, phase: Phase) => Effect.Effect<never, VendorAdapter.AdapterError>
  /** Fetches result media, with the key only towards vendor-a's own origin. */
  readonly download: (source: VendorAdapter.MediaSource) => Effect.Effect<VendorAdapter.MediaDownload, VendorAdapter.AdapterError>
  /** Removes the key and the base URL from vendor text before it reaches a task error or a log. */
  readonly scrub: (text: string) => string
}

const VENDOR = "vendor-a"

/** Whether a status is a success. */
export const isOk = (status: number): boolean => status >= 200 && status < 300

/** A task error of the invalid-request family (400) or the execution family (3001). */
export const taskError = (code: 400 | 3001, detail: string): TaskInfo.TaskError =>
  new TaskInfo.TaskError({
    code: code === 400 ? TaskInfo.TaskErrorCode.InvalidRequest : TaskInfo.TaskErrorCode.ExecutionError,
    title: code === 400 ? "Invalid request" : "Generation failed",
    detail
  })

/** A refusal that fails the task. */
export const rejected = (code: 400 | 3001, detail: string) => new VendorAdapter.Rejected({ error: taskError(code, detail) })

// Errors that mean the request never left this machine: safe to retry even for a create.
const notSentCodes = new Set(["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "EHOSTUNREACH", "ENETUNREACH", "UND_ERR_CONNECT_TIMEOUT"])

const errorCodes = (u: unknown, depth = 0): ReadonlyArray<string> => {
  if (depth > 6 || typeof u !== "object" || u === null) return []
  const record = u as { readonly code?: unknown; readonly cause?: unknown; readonly errors?: unknown }
  const own = typeof record.code === "string" ? [record.code] : []
  const nested = Array.isArray(record.errors) ? [record.cause, ...record.errors] : [record.cause]
  return [...own, ...nested.flatMap((n) => errorCodes(n, depth + 1))]
}

/** A lost exchange: `OutcomeUnknown` for a create that may have reached the vendor, else `Retryable`. */
const lost = (phase: Phase, what: string, notSent = false): VendorAdapter.AdapterError =>
  phase === "submit" && !notSent
    ? new VendorAdapter.OutcomeUnknown({ reason: `${VENDOR}: ${what} after the create request was sent` })
    : new VendorAdapter.Retryable({ reason: `${VENDOR}: ${what} during ${phase}` })

const fromClientError = (phase: Phase, error: HttpClientError.HttpClientError): VendorAdapter.AdapterError => {
  if (error._tag === "RequestError" && error.reason !== "Transport") {
    return rejected(3001, `the request to ${VENDOR} could not be encoded`)
  }
  const codes = errorCodes(error.cause)
  const notSent = error._tag === "RequestError" && codes.length > 0 && codes.every((c) => notSentCodes.has(c))
  const what = error._tag === "RequestError" ? "connection failed" : "answer cut off"
  return lost(phase, codes.length > 0 ? `${what} (${codes[0]})` : what, notSent)
}

const parseGoDuration = (value: string): number | undefined => {
  // `x-ratelimit-reset-requests` values such as `12ms`, `1s`, `6m0s`.
  const parts = [...value.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h)/g)]
  if (parts.length === 0 || parts.map((p) => p[0]).join("") !== value.trim()) return undefined
  const unit: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }
  return parts.reduce((sum, p) => sum + Number(p[1]) * unit[p[2]!]!, 0)
}

const nonNegativeNumber = (value: string | undefined): number | undefined => {
  if (value === undefined || value.trim() === "") return undefined
  const n = Number(value)
  return Number.isFinite(n) && n >= 0 ? n : undefined
}

/** The vendor's poll hint: `openai-poll-after-ms`. */
export const pollAfterOf = (headers: Headers.Headers): Duration.Duration | undefined => {
  const ms = nonNegativeNumber(headers["openai-poll-after-ms"])
  return ms === undefined ? undefined : Duration.millis(ms)
}

/** When to try again: `retry-after-ms`, `Retry-After` (seconds or HTTP date), the poll hint, the rate-limit reset. */
export const retryAfterOf = (headers: Headers.Headers): Duration.Duration | undefined => {
  const ms = nonNegativeNumber(headers["retry-after-ms"])
  if (ms !== undefined) return Duration.millis(ms)
  const retryAfter = headers["retry-after"]
  if (retryAfter !== undefined) {
    const seconds = nonNegativeNumber(retryAfter)
    if (seconds !== undefined) return Duration.millis(seconds * 1000)
    const date = Date.parse(retryAfter)
    if (!Number.isNaN(date)) return Duration.millis(Math.max(0, date - Date.now()))
  }
  const pollAfter = pollAfterOf(headers)
  if (pollAfter !== undefined) return pollAfter
  const reset = headers["x-ratelimit-reset-requests"]
  const resetMs = reset === undefined ? undefined : parseGoDuration(reset)
  return resetMs === undefined ? undefined : Duration.millis(resetMs)
}

/** The fields of vendor-a's error envelope that matter here. */
export interface VendorError {
  readonly message?: string
  readonly type?: string
  readonly param?: string
  readonly code?: string
}

/** Reads `{"error": {...}}`; `undefined` when the body is not that envelope. */
export const parseErrorBody = (text: string): VendorError | undefined => {
  try {
    const parsed: unknown = JSON.parse(text)
    const error = typeof parsed === "object" && parsed !== null ? (parsed as { error?: unknown }).error : undefined
    if (typeof error !== "object" || error === null) return undefined
    const e = error as Record<string, unknown>
    const pick = (k: string) => (typeof e[k] === "string" ? { [k]: e[k] as string } : {})
    return { ...pick("message"), ...pick("type"), ...pick("param"), ...pick("code") }
  } catch {
    return undefined
  }
}

const redirectStatuses = new Set([301, 302, 303, 307, 308])
const maxRedirects = 5

/** Removes the key and the base URL from vendor text before it reaches a client, a task error or a log. */
export const scrubber = (config: VendorAConfig) => {
  const key = Redacted.value(config.apiKey)
  return (text: string): string => {
    const withoutKey = key.length > 0 ? text.split(key).join("[redacted]") : text
    return withoutKey.split(config.baseUrl).join("").slice(0, 1000)
  }
}

/** Builds vendor-a's HTTP access from its settings and the gateway's client. */
export const make = (config: VendorAConfig, client: HttpClient.HttpClient, timeouts: Timeouts): Upstream => {
  const baseUrl = config.baseUrl
  const origin = new URL(baseUrl).origin
  const scrub = scrubber(config)

  const authorize = HttpClientRequest.bearerToken(config.apiKey)

  const failure = (reply: Reply, phase: Phase): Effect.Effect<never, VendorAdapter.AdapterError> =>
    Effect.gen(function*() {
      const body = parseErrorBody(reply.text)
      const status = reply.status
      const label = `${VENDOR} answered HTTP ${status}${body?.code !== undefined ? ` (${body.code})` : ""}`
      const detail = scrub(body?.message ?? label)
      if (status === 408 || status === 429 || status >= 500) {
        const retryAfter = retryAfterOf(reply.headers)
        return yield* new VendorAdapter.Retryable({ reason: label, ...(retryAfter !== undefined ? { retryAfter } : {}) })
      }
      if (status === 401 || status === 403) {
        // The gateway's key or account, not the client's request: an execution error.
        yield* Effect.logError(`${label}: check VENDOR_A_API_KEY and the account's access to the model`)
        return yield* rejected(3001, `${VENDOR} refused the gateway's credentials for this model`)
      }
      if (status === 404) {
        return yield* rejected(
          3001,
          phase === "submit"
            ? `${VENDOR} does not offer the configured model or endpoint: ${detail}`
            : phase === "poll"
            ? `${VENDOR} no longer knows this task`
            : `${VENDOR} no longer has this result`
        )
      }
      return yield* rejected(400, detail)
    })

  const withTimeout = <A>(phase: Phase, effect: Effect.Effect<A, HttpClientError.HttpClientError | VendorAdapter.AdapterError>) =>
    effect.pipe(
      Effect.timeoutFail({ duration: timeouts[phase], onTimeout: () => lost(phase, "no answer in time") }),
      Effect.catchTags({
        RequestError: (e) => Effect.fail(fromClientError(phase, e)),
        ResponseError: (e) => Effect.fail(fromClientError(phase, e))
      })
    )

  const exchange = (request: HttpClientRequest.HttpClientRequest, phase: Phase) =>
    withTimeout(
      phase,
      client.execute(authorize(request)).pipe(
        Effect.flatMap((response) =>
          Effect.map(response.text, (text): Reply => ({ status: response.status, headers: response.headers, text }))
        )
      )
    )

  // Redirects are followed here, not by the client, so the key never leaves vendor-a's origin.
  const open = (url: URL): Effect.Effect<HttpClientResponse.HttpClientResponse, VendorAdapter.AdapterError> =>
    Effect.gen(function*() {
      const request = HttpClientRequest.get(url)
      const requestInit = yield* Effect.serviceOption(FetchHttpClient.RequestInit)
      return yield* withTimeout(
        "download",
        client.execute(url.origin === origin ? authorize(request) : request).pipe(
          Effect.provideService(FetchHttpClient.RequestInit, {
            ...Option.getOrElse(requestInit, () => ({})),
            redirect: "manual"
          })
        )
      )
    })

  const fetchMedia = (
    url: string,
    contentType: string | undefined,
    hops: number
  ): Effect.Effect<VendorAdapter.MediaDownload, VendorAdapter.AdapterError> =>
    Effect.gen(function*() {
      let target: URL
      try {
        target = new URL(url)
      } catch {
        return yield* rejected(3001, `${VENDOR} returned an unusable result address`)
      }
      if (target.protocol !== "http:" && target.protocol !== "https:") {
        return yield* rejected(3001, `${VENDOR} returned an unusable result address`)
      }
      const response = yield* open(target)
      const location = response.headers["location"]
      if (redirectStatuses.has(response.status) && location !== undefined) {
        if (hops >= maxRedirects) return yield* rejected(3001, `${VENDOR}'s result download redirected too often`)
        yield* Effect.ignore(response.text)
        return yield* fetchMedia(new URL(location, target).href, contentType, hops + 1)
      }
      if (isOk(response.status)) {
        const announced = response.headers["content-type"]
        const generic = announced === undefined || /^(application|binary)\/octet-stream/i.test(announced)
        return {
          contentType: generic ? contentType ?? announced ?? "application/octet-stream" : announced,
          body: Stream.mapError(response.stream, () => new VendorAdapter.Retryable({ reason: `${VENDOR}: download interrupted` }))
        }
      }
      const text = yield* withTimeout("download", response.text)
      return yield* failure({ status: response.status, headers: response.headers, text }, "download")
    })

  const download = (source: VendorAdapter.MediaSource) =>
    source._tag === "Bytes"
      ? Effect.succeed<VendorAdapter.MediaDownload>({ contentType: source.contentType, body: Stream.succeed(source.bytes) })
      : fetchMedia(source.url, source.contentType, 0)

  return { baseUrl, exchange, failure, download, scrub }
}

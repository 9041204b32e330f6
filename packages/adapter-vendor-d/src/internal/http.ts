/**
 * vendor-d's HTTP conventions, shared by its protocols: the `x-goog-api-key` header, the error
 * envelope `{"error": {"code", "message", "status", "details"}}` with its `RetryInfo` detail, result
 * downloads (redirects followed here, the key kept to vendor-d's origin), and how a failed exchange
 * becomes an adapter outcome. The phase decides: a submit whose answer was lost is `OutcomeUnknown`
 * (the vendor may have started the operation), a lost poll or download is `Retryable`.
 */
import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import * as Headers from "@effect/platform/Headers"
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
import type { VendorDConfig } from "../Config.js"

/** Which step of a task an exchange belongs to. */
export type Phase = "submit" | "poll" | "download"

/** How long each kind of exchange may take (downloads: until the answer's headers arrive). */
export type Timeouts = Readonly<Record<Phase, Duration.DurationInput>>

/** Defaults: a create carries up to two images of 10 MB, polls are small. */
export const defaultTimeouts: Timeouts = { submit: "60 seconds", poll: "30 seconds", download: "60 seconds" }

/** A whole answer of the vendor. */
export interface Reply {
  readonly status: number
  readonly headers: Headers.Headers
  readonly text: string
}

/** vendor-d as seen by its protocol modules. */
export interface Upstream {
  readonly baseUrl: string
  /** Sends an authorized request and returns the answer unread (its body streams; interrupting it aborts). */
  readonly send: (request: HttpClientRequest.HttpClientRequest) => Effect.Effect<HttpClientResponse.HttpClientResponse, HttpClientError.HttpClientError>
  /** Sends an authorized request and reads the whole answer; transport failures are mapped by phase. */
  readonly exchange: (request: HttpClientRequest.HttpClientRequest, phase: Phase) => Effect.Effect<Reply, VendorAdapter.AdapterError>
  /** The outcome of an answer with an error status. */
  readonly failure: (reply: Reply, phase: Phase) => Effect.Effect<never, VendorAdapter.AdapterError>
  /** Fetches result media, following redirects, with the key only towards vendor-d's own origin. */
  readonly download: (source: VendorAdapter.MediaSource) => Effect.Effect<VendorAdapter.MediaDownload, VendorAdapter.AdapterError>
  /** Removes the key and the base URL from vendor text before it reaches a task error or a log. */
  readonly scrub: (text: string) => string
}

const VENDOR = "vendor-d"
const KEY_HEADER = "x-goog-api-key"

/** Whether a status is a success. */
export const isOk = (status: number): boolean => status >= 200 && status < 300

/** A task error of the invalid-request family (400) or the execution family (3001). */
export const taskError = (code: 400 | 3001, detail: string, title?: string): TaskInfo.TaskError =>
  new TaskInfo.TaskError({
    code: code === 400 ? TaskInfo.TaskErrorCode.InvalidRequest : TaskInfo.TaskErrorCode.ExecutionError,
    title: title ?? (code === 400 ? "Invalid request" : "Generation failed"),
    detail
  })

/** A refusal that fails the task. */
export const rejected = (code: 400 | 3001, detail: string) => new VendorAdapter.Rejected({ error: taskError(code, detail) })

// Errors that mean the request never left this machine: safe to retry even for a create.
const notSentCodes = new Set(["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "EHOSTUNREACH", "ENETUNREACH", "UND_ERR_CONNECT_TIMEOUT"])

/** The `code`s (`ECONNREFUSED`, …) along an error's cause chain. */
export const errorCodes = (u: unknown, depth = 0): ReadonlyArray<string> => {
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

/** The fields of vendor-d's error envelope that matter here. */
export interface VendorError {
  readonly code?: number
  readonly message?: string
  readonly status?: string
  readonly details: ReadonlyArray<Readonly<Record<string, unknown>>>
}

/** Reads `{"error": {...}}`; `undefined` when the body is not that envelope. */
export const parseErrorBody = (text: string): VendorError | undefined => {
  try {
    const parsed: unknown = JSON.parse(text)
    const error = typeof parsed === "object" && parsed !== null ? (parsed as { error?: unknown }).error : undefined
    if (typeof error !== "object" || error === null) return undefined
    const e = error as Record<string, unknown>
    const details = Array.isArray(e["details"])
      ? e["details"].filter((d): d is Record<string, unknown> => typeof d === "object" && d !== null)
      : []
    return {
      ...(typeof e["code"] === "number" ? { code: e["code"] } : {}),
      ...(typeof e["message"] === "string" ? { message: e["message"] } : {}),
      ...(typeof e["status"] === "string" ? { status: e["status"] } : {}),
      details
    }
  } catch {
    return undefined
  }
}

const detailOfType = (error: VendorError | undefined, type: string) =>
  error?.details.find((d) => typeof d["@type"] === "string" && (d["@type"] as string).endsWith(`/google.rpc.${type}`))

/** `RetryInfo.retryDelay`, a protobuf duration such as `"27s"` or `"1.5s"`. */
export const retryDelayOf = (error: VendorError | undefined): Duration.Duration | undefined => {
  const delay = detailOfType(error, "RetryInfo")?.["retryDelay"]
  const m = typeof delay === "string" ? /^(\d+(?:\.\d+)?)s$/.exec(delay) : null
  return m === null ? undefined : Duration.millis(Math.round(Number(m[1]) * 1000))
}

/** `Retry-After` in seconds or as an HTTP date. */
export const retryAfterHeaderOf = (headers: Headers.Headers): Duration.Duration | undefined => {
  const value = headers["retry-after"]
  if (value === undefined || value.trim() === "") return undefined
  const seconds = Number(value)
  if (Number.isFinite(seconds) && seconds >= 0) return Duration.millis(seconds * 1000)
  const date = Date.parse(value)
  return Number.isNaN(date) ? undefined : Duration.millis(Math.max(0, date - Date.now()))
}

const redirectStatuses = new Set([301, 302, 303, 307, 308])
const maxRedirects = 5

/** Builds vendor-d's HTTP access from its settings and the gateway's client. */
export const make = (config: VendorDConfig, client: HttpClient.HttpClient, timeouts: Timeouts): Upstream => {
  const baseUrl = config.baseUrl
  const origin = new URL(baseUrl).origin
  const key = Redacted.value(config.apiKey)

  const scrub = (text: string): string => {
    const withoutKey = key.length > 0 ? text.split(key).join("[redacted]") : text
    return withoutKey.split(baseUrl).join("").slice(0, 1000)
  }

  const authorize = HttpClientRequest.setHeader(KEY_HEADER, key)

  // Keeps the key out of tracing spans, which record request headers unless their name is redacted.
  const redactKeyHeader = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
    Effect.locallyWith(effect, Headers.currentRedactedNames, (names) => [...names, KEY_HEADER])

  const failure = (reply: Reply, phase: Phase): Effect.Effect<never, VendorAdapter.AdapterError> =>
    Effect.gen(function*() {
      const body = parseErrorBody(reply.text)
      const status = reply.status
      const label = `${VENDOR} answered HTTP ${status}${body?.status !== undefined ? ` (${body.status})` : ""}`
      const detail = scrub(body?.message ?? label)
      if (status === 429) {
        const retryAfter = retryDelayOf(body) ?? retryAfterHeaderOf(reply.headers)
        return yield* new VendorAdapter.Retryable({ reason: label, ...(retryAfter !== undefined ? { retryAfter } : {}) })
      }
      if (status === 408 || status >= 500) {
        const retryAfter = retryAfterHeaderOf(reply.headers) ?? retryDelayOf(body)
        return yield* new VendorAdapter.Retryable({ reason: label, ...(retryAfter !== undefined ? { retryAfter } : {}) })
      }
      const keyInvalid = detailOfType(body, "ErrorInfo")?.["reason"] === "API_KEY_INVALID"
      if (status === 401 || status === 403 || keyInvalid) {
        // The gateway's key or project, not the client's request: an execution error.
        yield* Effect.logError(`${label}: check VENDOR_D_API_KEY and the project's access to the model`)
        return yield* rejected(3001, `${VENDOR} refused the gateway's credentials for this model`)
      }
      if (status === 404) {
        return yield* rejected(
          3001,
          phase === "submit"
            ? `${VENDOR} does not offer the configured model: ${detail}`
            : phase === "poll"
            ? `${VENDOR} no longer knows this operation`
            : `${VENDOR} no longer has this result`
        )
      }
      // FAILED_PRECONDITION is about the gateway's project (region, billing), not the request.
      if (body?.status === "FAILED_PRECONDITION") return yield* rejected(3001, detail)
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

  const send = (request: HttpClientRequest.HttpClientRequest) => redactKeyHeader(client.execute(authorize(request)))

  const exchange = (request: HttpClientRequest.HttpClientRequest, phase: Phase) =>
    withTimeout(
      phase,
      send(request).pipe(
        Effect.flatMap((response) =>
          Effect.map(response.text, (text): Reply => ({ status: response.status, headers: response.headers, text }))
        )
      )
    )

  // Redirects are followed here, not by the client, so the key never leaves vendor-d's origin.
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
          }),
          redactKeyHeader
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

  return { baseUrl, send, exchange, failure, download, scrub }
}

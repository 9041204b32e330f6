/**
 * vendor-d's HTTP conventions, shared by its protocols: the `x-goog-api-key` header, the error
 * envelope `{"error": {"code", "message", "status", "details"}}` with its `RetryInfo` detail, result
 * downloads (redirects followed here, the key kept to vendor-d's origin), and how a failed exchange
 * becomes an adapter outcome. The phase decides: a submit whose answer was lost is `OutcomeUnknown`
 * (the vendor may have started the operation), a lost poll or download is `Retryable`.
 */
import { Http, Outcome } from "@genway/adapter-kit"
import * as Headers from "@effect/platform/Headers"
import * as HttpClient from "@effect/platform/HttpClient"
import type * as HttpClientError from "@effect/platform/HttpClientError"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import type * as HttpClientResponse from "@effect/platform/HttpClientResponse"
import { CallLimit, type TaskInfo, type VendorAdapter } from "@genway/core"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import * as Redacted from "effect/Redacted"
import type { VendorDConfig } from "../Config.js"

/** Which step of a task an exchange belongs to. */
export type Phase = Http.Phase

/** How long each kind of exchange may take (downloads: until the answer's headers arrive). */
export type Timeouts = Http.Timeouts

/** Defaults: a create carries up to two images of 10 MB, polls are small. */
export const defaultTimeouts: Timeouts = { submit: "60 seconds", poll: "30 seconds", download: "60 seconds" }

/** A whole answer of the vendor. */
export type Reply = Http.Answer

/** vendor-d as seen by its protocol modules. */
export interface Upstream extends Http.Upstream {
  /** Sends an authorized request and returns the answer unread (its body streams; interrupting it aborts). */
  readonly send: (request: HttpClientRequest.HttpClientRequest) => Effect.Effect<HttpClientResponse.HttpClientResponse, HttpClientError.HttpClientError>
  /** The client `send` goes through, for `Http.within` (it enforces time limits when the gateway's does). */
  readonly client: HttpClient.HttpClient
}

const VENDOR = "vendor-d"
const KEY_HEADER = "x-goog-api-key"

/** Whether a status is a success. */
export const isOk = Http.isOk

// vendor-d's execution errors have always been titled so; kept for the task errors clients see.
const executionTitle = "Execution error"

/** A task error of the invalid-request family (400) or the execution family (3001). */
export const taskError = (code: 400 | 3001, detail: string, title?: string): TaskInfo.TaskError =>
  Outcome.taskError(code, detail, title ?? (code === 3001 ? executionTitle : undefined))

/** A refusal that fails the task. */
export const rejected = (code: 400 | 3001, detail: string) => Outcome.rejected(code, detail, code === 3001 ? executionTitle : undefined)

/** The `code`s (`ECONNREFUSED`, …) along an error's cause chain. */
export const errorCodes = Http.errorCodes

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
export const retryAfterHeaderOf = (headers: Headers.Headers): Duration.Duration | undefined => Http.retryAfterAt(headers, Date.now())

/** The outcome of an answer with an error status. */
const failure = (reply: Reply, phase: Phase, scrub: (text: string) => string): Effect.Effect<never, VendorAdapter.AdapterError> =>
  Effect.gen(function*() {
    const body = parseErrorBody(reply.text)
    const status = reply.status
    const label = `${VENDOR} answered HTTP ${status}${body?.status !== undefined ? ` (${body.status})` : ""}`
    const detail = scrub(body?.message ?? label)
    if (status === 429) return yield* Outcome.retryable(label, retryDelayOf(body) ?? retryAfterHeaderOf(reply.headers))
    if (status === 408 || status >= 500) {
      return yield* Outcome.retryable(label, retryAfterHeaderOf(reply.headers) ?? retryDelayOf(body))
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

/** Builds vendor-d's HTTP access from its settings and the gateway's client. */
export const make = (config: VendorDConfig, client: HttpClient.HttpClient, timeouts: Timeouts): Upstream => {
  const key = Redacted.value(config.apiKey)
  const authorize = HttpClientRequest.setHeader(KEY_HEADER, key)
  // Keeps the key out of tracing spans, which record request headers unless their name is redacted.
  // Without a tracer (the gateway's default, with no OTLP endpoint) no span records anything, and
  // the exchange runs as it is: the fiber-local change costs about 15 runtime steps on every call,
  // before the vendor is reached.
  // Every exchange still goes through `client`, on the caller's fiber: if it enforces time limits
  // (`CallLimit`), so does this one, and `Http.within` needs no forked fiber.
  const redacted = (names: ReadonlyArray<string | RegExp>) => [...names, KEY_HEADER]
  const keyed = CallLimit.keepMark(client, HttpClient.transformResponse(client, (effect) =>
    Effect.withFiberRuntime<HttpClientResponse.HttpClientResponse, HttpClientError.HttpClientError>((fiber) =>
      fiber.getFiberRef(FiberRef.currentTracerEnabled) ? Effect.locallyWith(effect, Headers.currentRedactedNames, redacted) : effect
    )))
  const upstream = Http.upstream({
    vendor: VENDOR,
    baseUrl: config.baseUrl,
    client: keyed,
    timeouts,
    authorize,
    secrets: [key],
    failure,
    rejected
  })
  return { ...upstream, client: keyed, send: (request) => keyed.execute(authorize(request)) }
}

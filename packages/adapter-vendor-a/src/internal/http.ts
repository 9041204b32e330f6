/**
 * vendor-a's HTTP conventions, shared by its protocols: bearer auth, the error envelope
 * `{"error": {"message", "type", "param", "code"}}`, retry hints, result downloads, and how a
 * failed exchange becomes an adapter outcome. The phase decides: a submit whose answer was lost
 * is `OutcomeUnknown` (the vendor may have created the job), a lost poll or download is `Retryable`.
 */
import { Http, Outcome } from "@genway/adapter-kit"
import type * as Headers from "@effect/platform/Headers"
import type * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import type { TaskInfo, VendorAdapter } from "@genway/core"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import type { VendorAConfig } from "../Config.js"

/** Which step of a task an exchange belongs to. */
export type Phase = Http.Phase

/** How long each kind of exchange may take (downloads: until the answer's headers arrive). */
export type Timeouts = Http.Timeouts

/** Defaults: a create carries an image of up to 10 MB, polls are small. */
export const defaultTimeouts: Timeouts = { submit: "60 seconds", poll: "30 seconds", download: "60 seconds" }

/** A whole answer of the vendor. */
export type Reply = Http.Answer

/** vendor-a as seen by its protocol modules. */
export type Upstream = Http.Upstream

const VENDOR = "vendor-a"

/** Whether a status is a success. */
export const isOk = Http.isOk

// vendor-a's execution errors have always been titled so; kept for the task errors clients see.
const executionTitle = Outcome.titles[3001]

/** A task error of the invalid-request family (400) or the execution family (3001). */
export const taskError = (code: 400 | 3001, detail: string): TaskInfo.TaskError =>
  Outcome.taskError(code, detail, code === 3001 ? executionTitle : undefined)

/** A refusal that fails the task. */
export const rejected = (code: 400 | 3001, detail: string) => Outcome.rejected(code, detail, code === 3001 ? executionTitle : undefined)

const parseGoDuration = (value: string): number | undefined => {
  // `x-ratelimit-reset-requests` values such as `12ms`, `1s`, `6m0s`.
  const parts = [...value.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h)/g)]
  if (parts.length === 0 || parts.map((p) => p[0]).join("") !== value.trim()) return undefined
  const unit: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }
  return parts.reduce((sum, p) => sum + Number(p[1]) * unit[p[2]!]!, 0)
}

/** The vendor's poll hint: `openai-poll-after-ms`. */
export const pollAfterOf = (headers: Headers.Headers): Duration.Duration | undefined => {
  const ms = Http.numberHeader(headers, "openai-poll-after-ms")
  return ms === undefined ? undefined : Duration.millis(ms)
}

/** When to try again: `retry-after-ms`, `Retry-After` (seconds or HTTP date), the poll hint, the rate-limit reset. */
export const retryAfterOf = (headers: Headers.Headers): Duration.Duration | undefined => {
  const ms = Http.numberHeader(headers, "retry-after-ms")
  if (ms !== undefined) return Duration.millis(ms)
  const retryAfter = Http.retryAfterAt(headers, Date.now())
  if (retryAfter !== undefined) return retryAfter
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

/** Removes the key and the base URL from vendor text before it reaches a client, a task error or a log. */
export const scrubber = (config: VendorAConfig) => Http.scrubber({ secrets: [Redacted.value(config.apiKey)], baseUrl: config.baseUrl })

/** The outcome of an answer with an error status. */
const failure = (reply: Reply, phase: Phase, scrub: (text: string) => string): Effect.Effect<never, VendorAdapter.AdapterError> =>
  Effect.gen(function*() {
    const body = parseErrorBody(reply.text)
    const status = reply.status
    const label = `${VENDOR} answered HTTP ${status}${body?.code !== undefined ? ` (${body.code})` : ""}`
    const detail = scrub(body?.message ?? label)
    if (Http.isTransientStatus(status)) return yield* Outcome.retryable(label, retryAfterOf(reply.headers))
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

/** Builds vendor-a's HTTP access from its settings and the gateway's client. */
export const make = (config: VendorAConfig, client: HttpClient.HttpClient, timeouts: Timeouts): Upstream =>
  Http.upstream({
    vendor: VENDOR,
    baseUrl: config.baseUrl,
    client,
    timeouts,
    authorize: HttpClientRequest.bearerToken(config.apiKey),
    secrets: [Redacted.value(config.apiKey)],
    failure,
    rejected
  })

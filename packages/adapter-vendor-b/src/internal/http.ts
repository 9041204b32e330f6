/**
 * HTTP plumbing shared by the adapter's calls: one exchange read fully with a timeout, transport
 * failures classified by whether the request can have reached the vendor, Retry-After parsing and
 * result downloads. No vendor facts here.
 */
import * as Headers from "@effect/platform/Headers"
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import { TaskInfo, VendorAdapter } from "@genway/core"

/** A complete HTTP answer (task APIs answer small JSON documents). */
export interface Answer {
  readonly status: number
  readonly headers: Headers.Headers
  readonly text: string
}

/**
 * No answer arrived. `sent` is false only when the request provably never left this process
 * (connection refused, name not resolved); a timeout or a reset may hide an accepted request.
 */
export interface NoAnswer {
  readonly _tag: "NoAnswer"
  readonly reason: string
  readonly sent: boolean
}

const notSentCodes = new Set(["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "UND_ERR_CONNECT_TIMEOUT"])

// Fetch and node:http wrap the system error at different depths.
const neverSent = (cause: unknown): boolean => {
  for (let c: unknown = cause, depth = 0; c !== null && typeof c === "object" && depth < 5; depth++) {
    const code = (c as { readonly code?: unknown }).code
    if (typeof code === "string" && notSentCodes.has(code)) return true
    c = (c as { readonly cause?: unknown }).cause
  }
  return false
}

/** Sends one request and reads the whole answer within `timeout`. */
export const exchange = (
  client: HttpClient.HttpClient,
  request: HttpClientRequest.HttpClientRequest,
  timeout: Duration.DurationInput
): Effect.Effect<Answer, NoAnswer> =>
  client.execute(request).pipe(
    Effect.flatMap((response) =>
      Effect.map(response.text, (text): Answer => ({ status: response.status, headers: response.headers, text }))
    ),
    Effect.catchTags({
      RequestError: (e) =>
        Effect.fail<NoAnswer>({
          _tag: "NoAnswer",
          reason: e.reason === "Transport" ? "connection failed" : "request could not be sent",
          sent: e.reason === "Transport" && !neverSent(e.cause)
        }),
      ResponseError: () =>
        Effect.fail<NoAnswer>({ _tag: "NoAnswer", reason: "connection lost while reading the answer", sent: true })
    }),
    Effect.timeoutFail({
      duration: timeout,
      onTimeout: (): NoAnswer => ({ _tag: "NoAnswer", reason: "no answer in time", sent: true })
    })
  )

/** Parses a JSON object answer; `undefined` when the text is not a JSON object. */
export const parseObject = (text: string): Record<string, unknown> | undefined => {
  try {
    const value: unknown = JSON.parse(text)
    return isRecord(value) ? value : undefined
  } catch {
    return undefined
  }
}

/** Whether a value is a plain JSON object. */
export const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/** A string field, when it is one. */
export const stringAt = (value: unknown, key: string): string | undefined => {
  if (!isRecord(value)) return undefined
  const v = value[key]
  return typeof v === "string" ? v : undefined
}

/** The `Retry-After` header (seconds or an HTTP date) as a duration, when present and sensible. */
export const retryAfter = (headers: Headers.Headers): Effect.Effect<Duration.Duration | undefined> =>
  Effect.map(Clock.currentTimeMillis, (now) => {
    const value = headers["retry-after"]
    if (value === undefined || value.trim() === "") return undefined
    const seconds = Number(value)
    if (Number.isFinite(seconds) && seconds >= 0) return Duration.seconds(seconds)
    const at = Date.parse(value)
    return Number.isNaN(at) ? undefined : Duration.millis(Math.max(0, at - now))
  })

/** The client for result media: signed URLs may redirect (node:http does not follow by itself). */
export const downloadClient = (client: HttpClient.HttpClient): HttpClient.HttpClient => HttpClient.followRedirects(client, 5)

/** Whether a status means "try again later". */
export const isTransientStatus = (status: number): boolean => status === 408 || status === 429 || status >= 500

/**
 * Fetches result media and streams the body; `client` should follow redirects (`downloadClient`).
 * Signed result URLs carry their own authority, so no credentials are sent; errors never repeat
 * the URL.
 */
export const download = (
  client: HttpClient.HttpClient,
  source: VendorAdapter.MediaSource,
  timeout: Duration.DurationInput,
  vendor: string
): Effect.Effect<VendorAdapter.MediaDownload, VendorAdapter.AdapterError> => {
  if (source._tag === "Bytes") {
    return Effect.succeed({ contentType: source.contentType, body: Stream.succeed(source.bytes) })
  }
  const lost = new VendorAdapter.Retryable({ reason: `${vendor}: connection lost while downloading result media` })
  return client.execute(HttpClientRequest.get(source.url)).pipe(
    Effect.timeoutFail({
      duration: timeout,
      onTimeout: () => new VendorAdapter.Retryable({ reason: `${vendor}: result media did not answer in time` })
    }),
    Effect.catchTags({
      RequestError: () => Effect.fail(new VendorAdapter.Retryable({ reason: `${vendor}: result media unreachable` })),
      ResponseError: () => Effect.fail(lost)
    }),
    Effect.flatMap((response): Effect.Effect<VendorAdapter.MediaDownload, VendorAdapter.AdapterError> => {
      if (response.status >= 200 && response.status < 300) {
        return Effect.succeed<VendorAdapter.MediaDownload>({
          contentType: response.headers["content-type"] ?? source.contentType ?? "application/octet-stream",
          body: Stream.mapError(response.stream, () => lost)
        })
      }
      if (isTransientStatus(response.status)) {
        return Effect.flatMap(retryAfter(response.headers), (after) =>
          Effect.fail(
            new VendorAdapter.Retryable({
              reason: `${vendor}: result media answered HTTP ${response.status}`,
              ...(after !== undefined ? { retryAfter: after } : {})
            })
          ))
      }
      return Effect.fail(
        rejected(3001, `The result media is no longer available from ${vendor} (HTTP ${response.status}).`)
      )
    })
  )
}

/** Titles of the task error codes (DESIGN.md §2: 400 invalid request family, 3001 execution error). */
export const titles = { 400: "Invalid request", 3001: "Execution error" } as const

/** A task error of one of the two task error codes. */
export const taskError = (code: 400 | 3001, detail: string): TaskInfo.TaskError =>
  new TaskInfo.TaskError({ code, title: titles[code], detail })

/** The vendor refused the task for good. */
export const rejected = (code: 400 | 3001, detail: string): VendorAdapter.Rejected =>
  new VendorAdapter.Rejected({ error: taskError(code, detail) })

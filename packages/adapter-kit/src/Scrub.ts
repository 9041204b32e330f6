/**
 * The one place where vendor text loses the gateway's secrets. A live surface built from a
 * vendor's `VENDOR_*` group (see `Manifest`) is wrapped here, so every text it hands the gateway —
 * submit refusals, retry reasons, failed tasks, download errors, chat and responses errors, and
 * the error events of a stream — has the group's secrets and base URL removed, whatever the
 * protocol module did or forgot to do.
 */
import { Chat, Responses, TaskInfo, VendorAdapter } from "@genway/core"
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import * as Stream from "effect/Stream"

/** What must never leave the gateway: secret values and the internal base URL. */
export interface Hidden {
  readonly secrets: ReadonlyArray<string>
  readonly baseUrl: string
}

/** Replacement of a secret. */
export const redacted = "[redacted]"

const variants = (value: string): ReadonlyArray<string> => {
  const out = new Set([value])
  try {
    out.add(encodeURIComponent(value))
    out.add(JSON.stringify(value).slice(1, -1))
  } catch {
    // lone surrogates: the plain value is enough
  }
  return [...out].filter((v) => v.length > 0).sort((a, b) => b.length - a.length)
}

/**
 * A function that removes every secret (also URL- and JSON-escaped) and the base URL, its origin
 * and its host from a text. Secrets shorter than 4 characters are kept (replacing them would
 * mangle every text and hide nothing).
 */
export const text = (hidden: Hidden): (text: string) => string => {
  const secrets = hidden.secrets.filter((s) => s.length >= 4).flatMap(variants)
  const places: Array<string> = []
  if (hidden.baseUrl !== "") {
    places.push(hidden.baseUrl)
    try {
      const url = new URL(hidden.baseUrl)
      places.push(url.origin, url.host)
    } catch {
      // not a URL: the text itself is enough
    }
  }
  return (input: string): string => {
    let out = input
    for (const secret of secrets) if (out.includes(secret)) out = out.split(secret).join(redacted)
    for (const place of places) if (out.includes(place)) out = out.split(place).join("")
    return out
  }
}

/** The secrets of a config value: every `Redacted` field's value; its `baseUrl`. */
export const hiddenOf = (config: { readonly baseUrl: string }): Hidden => ({
  baseUrl: config.baseUrl,
  secrets: Object.values(config).flatMap((v) => (Redacted.isRedacted(v) ? [String(Redacted.value(v))] : []))
})

/** Every string inside a JSON-like value, scrubbed (objects and arrays copied). */
export const deep = (scrub: (text: string) => string) => {
  const go = (value: unknown, depth: number): unknown => {
    if (typeof value === "string") return scrub(value)
    if (depth > 64 || value === null || typeof value !== "object") return value
    if (Array.isArray(value)) return value.map((v) => go(v, depth + 1))
    const out: Record<string, unknown> = {}
    for (const [k, v] of Object.entries(value)) out[k] = go(v, depth + 1)
    return out
  }
  return <A>(value: A): A => go(value, 0) as A
}

const taskError = (scrub: (text: string) => string) => (error: TaskInfo.TaskError): TaskInfo.TaskError =>
  new TaskInfo.TaskError({ code: error.code, title: scrub(error.title), detail: scrub(error.detail) })

/** A task adapter error, scrubbed. */
export const adapterError = (scrub: (text: string) => string) => (error: VendorAdapter.AdapterError): VendorAdapter.AdapterError => {
  switch (error._tag) {
    case "Retryable":
      return new VendorAdapter.Retryable({
        reason: scrub(error.reason),
        ...(error.retryAfter !== undefined ? { retryAfter: error.retryAfter } : {})
      })
    case "Rejected":
      return new VendorAdapter.Rejected({ error: taskError(scrub)(error.error) })
    case "OutcomeUnknown":
      return new VendorAdapter.OutcomeUnknown({ reason: scrub(error.reason) })
  }
}

/** A task adapter whose every error text (submit, reconcile, cancel, poll, failed task, download) is scrubbed. */
export const taskAdapter = (adapter: VendorAdapter.VendorAdapter, scrub: (text: string) => string): VendorAdapter.VendorAdapter => {
  const mapError = adapterError(scrub)
  return {
    ...adapter,
    submit: (task) => Effect.mapError(adapter.submit(task), mapError),
    ...(adapter.reconcile !== undefined
      ? { reconcile: (task: VendorAdapter.UpstreamTask) => Effect.mapError(adapter.reconcile!(task), mapError) }
      : {}),
    ...(adapter.cancel !== undefined
      ? {
        cancel: (task: VendorAdapter.UpstreamTask & { readonly upstreamRef: string }) =>
          adapter.cancel!(task).pipe(
            Effect.map((o): VendorAdapter.CancelOutcome =>
              o.reason === undefined ? o : { canceled: o.canceled, reason: scrub(o.reason) }
            ),
            Effect.mapError(mapError)
          )
      }
      : {}),
    poll: (task) =>
      adapter.poll(task).pipe(
        Effect.map((outcome): VendorAdapter.PollOutcome =>
          outcome._tag === "Failed" ? { _tag: "Failed", error: taskError(scrub)(outcome.error) } : outcome
        ),
        Effect.mapError(mapError)
      ),
    download: (source) =>
      adapter.download(source).pipe(
        Effect.map((download) => ({ ...download, body: Stream.mapError(download.body, mapError) })),
        Effect.mapError(mapError)
      )
  }
}

/** A chat error, scrubbed. */
export const chatError = (scrub: (text: string) => string) => (error: Chat.ChatError): Chat.ChatError => {
  const retry = (ms: number | undefined) => (ms !== undefined ? { retryAfterMs: ms } : {})
  switch (error._tag) {
    case "ChatInvalid":
      return new Chat.ChatInvalid({ message: scrub(error.message), ...(error.param !== undefined ? { param: scrub(error.param) } : {}) })
    case "ChatRefused":
      return new Chat.ChatRefused({ code: error.code, reason: scrub(error.reason), message: scrub(error.message) })
    case "ChatRateLimited":
      return new Chat.ChatRateLimited({ message: scrub(error.message), ...retry(error.retryAfterMs) })
    case "ChatUpstreamError":
      return new Chat.ChatUpstreamError({ status: error.status, message: scrub(error.message), ...retry(error.retryAfterMs) })
  }
}

/** A chat upstream whose errors (before and while streaming) are scrubbed. */
export const chatUpstream = (upstream: Chat.ChatUpstream, scrub: (text: string) => string): Chat.ChatUpstream => {
  const mapError = chatError(scrub)
  return {
    ...upstream,
    complete: (request) => Effect.mapError(upstream.complete(request), mapError),
    stream: (request) =>
      upstream.stream(request).pipe(
        Effect.map((stream) => Stream.mapError(stream, mapError)),
        Effect.mapError(mapError)
      )
  }
}

/** A responses error, scrubbed. */
export const responsesError = (scrub: (text: string) => string) => (error: Responses.UpstreamError): Responses.UpstreamError => {
  switch (error._tag) {
    case "UpstreamRejected":
      return new Responses.UpstreamRejected({ ...error, message: scrub(error.message), param: error.param === null ? null : scrub(error.param) })
    case "UpstreamAuthFailed":
      return new Responses.UpstreamAuthFailed({ ...error, message: scrub(error.message) })
    case "UpstreamRateLimited":
      return new Responses.UpstreamRateLimited({ ...error, message: scrub(error.message) })
    case "UpstreamUnavailable":
      return new Responses.UpstreamUnavailable({ ...error, message: scrub(error.message) })
    case "ResponseNotFound":
      return error
  }
}

/** A response object with its `error` and `incomplete_details` scrubbed. */
const responseObject = (scrub: (text: string) => string) => (response: Responses.ResponseObject): Responses.ResponseObject => {
  const error = response["error"]
  const incomplete = response["incomplete_details"]
  if ((error === null || error === undefined) && (incomplete === null || incomplete === undefined)) return response
  return { ...response, error: deep(scrub)(error), incomplete_details: deep(scrub)(incomplete) }
}

/** A stream event with the texts of an `error` event, and of any response it carries, scrubbed. */
const responseEvent = (scrub: (text: string) => string) => (event: Responses.ResponseEvent): Responses.ResponseEvent => {
  if (event.type === "error") return deep(scrub)(event)
  const response = (event as { readonly response?: unknown })["response"]
  if (response === null || typeof response !== "object") return event
  return { ...event, response: responseObject(scrub)(response as Responses.ResponseObject) }
}

/** A responses upstream whose errors, failed responses and stream error events are scrubbed. */
export const responsesUpstream = (upstream: Responses.ResponsesUpstream, scrub: (text: string) => string): Responses.ResponsesUpstream => {
  const mapError = responsesError(scrub)
  const mapResponse = responseObject(scrub)
  const mapEvent = responseEvent(scrub)
  return {
    create: (body) => upstream.create(body).pipe(Effect.map(mapResponse), Effect.mapError(mapError)),
    retrieve: (id) => upstream.retrieve(id).pipe(Effect.map(mapResponse), Effect.mapError(mapError)),
    stream: (body) =>
      upstream.stream(body).pipe(
        Effect.map((stream) => stream.pipe(Stream.map(mapEvent), Stream.mapError(mapError))),
        Effect.mapError(mapError)
      ),
    ...(upstream.cancel !== undefined
      ? { cancel: (id: string) => upstream.cancel!(id).pipe(Effect.map(mapResponse), Effect.mapError(mapError)) }
      : {}),
    ...(upstream.remove !== undefined ? { remove: (id: string) => upstream.remove!(id).pipe(Effect.mapError(mapError)) } : {}),
    ...(upstream.resume !== undefined
      ? {
        resume: (id: string, startingAfter: number | undefined) =>
          upstream.resume!(id, startingAfter).pipe(
            Effect.map((stream) => stream.pipe(Stream.map(mapEvent), Stream.mapError(mapError))),
            Effect.mapError(mapError)
          )
      }
      : {})
  }
}

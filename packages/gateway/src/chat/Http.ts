/**
 * The OpenAI-compatible chat completions surface (E1): `POST <path>` for the entries of kind
 * "chat", the entry chosen by the body's `model`. Errors take the OpenAI shape so official clients
 * raise their typed errors. `stream: true` answers with server-sent events (SPEC.md §6.1): content
 * chunks, the usage chunk, then `data: [DONE]`; `: keep-alive` comments while the vendor is silent;
 * a client that goes away cancels the upstream request.
 */
import * as HttpRouter from "@effect/platform/HttpRouter"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { Chat, Media, type ModelEntry } from "@genway/core"
import { Validate } from "@genway/registry"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import { randomUUID } from "node:crypto"
import { PassThrough } from "node:stream"
import type * as SqlClient from "@effect/sql/SqlClient"
import * as Usage from "../ledger/Usage.js"
import type { ApiKeys } from "../platform/ApiKeys.js"
import * as Limits from "../platform/Limits.js"
import { ChatService } from "./Service.js"
import { type HttpError, httpError, invalid } from "../http/Errors.js"
import { handle } from "../http/Handle.js"
import { authenticate, readJson } from "../http/Request.js"
import { traced } from "../observability/Request.js"

/** How long a stream may stay silent before a `: keep-alive` comment is sent. */
export class HeartbeatInterval extends Context.Reference<HeartbeatInterval>()("@genway/gateway/chat/HeartbeatInterval", {
  defaultValue: () => Duration.seconds(5)
}) {}

/** The longest silence of the vendor within a stream; then the stream ends with a 504 error event. */
export class StreamIdleTimeout extends Context.Reference<StreamIdleTimeout>()("@genway/gateway/chat/StreamIdleTimeout", {
  defaultValue: () => Duration.minutes(2)
}) {}

/** What this surface's routes need. */
export type Services = ApiKeys | ChatService | SqlClient.SqlClient

/** The body fields read here; the entry's schema has checked them. */
interface ChatBody {
  readonly model: string
  readonly stream?: boolean | null
  readonly messages: ReadonlyArray<{
    readonly role: "system" | "user" | "assistant"
    readonly content:
      | string
      | ReadonlyArray<{ readonly type: "text"; readonly text: string } | { readonly type: "image_url"; readonly image_url: { readonly url: string } }>
  }>
  readonly temperature?: number | null
  readonly top_p?: number | null
  readonly max_tokens?: number | null
  readonly max_completion_tokens?: number | null
}

const mimeTypes = Media.mimeTypes

/** The vendor-neutral request of a checked body. Images are data URLs (the entry's image rule). */
export const toChatRequest = (
  entry: ModelEntry.ModelEntry,
  valid: Validate.ValidBody<ChatBody>
): Either.Either<Chat.ChatRequest, HttpError> => {
  const { body, images } = valid
  const messages: Array<Chat.InputMessage> = []
  for (const [i, message] of body.messages.entries()) {
    if (typeof message.content === "string") {
      messages.push({ role: message.role, parts: [{ _tag: "Text", text: message.content }] })
      continue
    }
    const parts: Array<Chat.InputPart> = []
    for (const [j, part] of message.content.entries()) {
      if (part.type === "text") {
        parts.push({ _tag: "Text", text: part.text })
        continue
      }
      const param = `messages[${i}].content[${j}].image_url.url`
      const ref = Media.classifyImageRef(part.image_url.url)
      if (ref?._tag !== "DataUrl" && ref?._tag !== "Base64") {
        return Either.left(httpError(400, "must be a data URL (data:<media_type>;base64,<data>) or raw Base64", { param }))
      }
      const facts = images.get(param)
      const mimeType = facts !== undefined ? mimeTypes[facts.format] : ref._tag === "DataUrl" ? ref.mediaType : undefined
      if (mimeType === undefined) return Either.left(httpError(400, "must be a JPEG, PNG or WebP image", { param }))
      parts.push({ _tag: "Image", mimeType, base64: ref.base64 })
    }
    messages.push({ role: message.role, parts })
  }
  const maxOutputTokens = body.max_completion_tokens ?? body.max_tokens
  return Either.right({
    model: entry.upstream.model,
    messages,
    ...(body.temperature != null ? { temperature: body.temperature } : {}),
    ...(body.top_p != null ? { topP: body.top_p } : {}),
    ...(maxOutputTokens != null ? { maxOutputTokens } : {})
  })
}

const upstreamCodes = { 502: "upstream_error", 503: "upstream_unavailable", 504: "upstream_timeout" } as const

const retryAfter = (ms: number | undefined, fallbackSeconds?: number): Record<string, string> => {
  const seconds = ms !== undefined ? Math.max(1, Math.ceil(ms / 1000)) : fallbackSeconds
  return seconds === undefined ? {} : { "retry-after": String(seconds) }
}

/** An upstream failure as the client sees it: 400 family, 429 with `Retry-After`, 502/503/504. */
export const toHttpError = (error: Chat.ChatError): HttpError => {
  switch (error._tag) {
    case "ChatInvalid":
      return httpError(400, error.message, error.param !== undefined ? { param: error.param } : {})
    case "ChatRefused":
      return httpError(400, error.message, { openAiCode: error.code })
    case "ChatRateLimited":
      return httpError(429, error.message, { headers: retryAfter(error.retryAfterMs, 1), openAiCode: "rate_limit_exceeded" })
    case "ChatUpstreamError":
      return httpError(error.status, error.message, { headers: retryAfter(error.retryAfterMs), openAiCode: upstreamCodes[error.status] })
  }
}

const openAiType = (error: HttpError) =>
  error.openAiType ??
    (error.status === 429 ? "rate_limit_error" : error.status >= 500 ? "api_error" : "invalid_request_error")

const encoder = new TextEncoder()
const frame = (value: unknown) => encoder.encode(`data: ${JSON.stringify(value)}\n\n`)
const keepAliveFrame = encoder.encode(": keep-alive\n\n")
const doneFrame = encoder.encode(`data: ${Chat.DONE}\n\n`)

const zeroUsage: Chat.Usage = {
  promptTokens: 0,
  completionTokens: 0,
  totalTokens: 0,
  cacheReadTokens: null,
  cacheCreationTokens: null,
  prompt: { text: null, image: null, audio: null },
  completion: { text: null, image: null, audio: null, reasoning: null }
}

const errorFrame = (error: HttpError) =>
  frame({ error: { message: error.detail, type: openAiType(error), param: error.param ?? null, code: error.openAiCode ?? null } })

/**
 * A streamed answer. The upstream request is sent first, so a failure before the vendor's first
 * byte (after the adapter's retries) is the answer's status; once the vendor answers, so does the
 * gateway (200, `text/event-stream`). One fiber then writes the frames of the deltas into the
 * response body and one timer watches it, both in the request's scope, so a client that goes away
 * interrupts them and the upstream request. The timer adds `: keep-alive` after a heartbeat
 * interval without a frame and ends the stream after the idle timeout without an upstream event;
 * nothing is timed per event. Frames go straight into a Node stream already piped to the socket:
 * no stream machinery between the vendor's bytes and the client's.
 */
const streamed = (
  upstream: Chat.ChatUpstream,
  request: Chat.ChatRequest,
  meta: Chat.CompletionMeta,
  headers: Record<string, string>,
  record: (usage: Chat.Usage) => Effect.Effect<void, never, SqlClient.SqlClient>
) =>
  Effect.gen(function*() {
    const deltas = yield* Effect.mapError(upstream.stream(request), toHttpError)
    const heartbeatMs = Duration.toMillis(yield* HeartbeatInterval)
    const idleMs = Duration.toMillis(yield* StreamIdleTimeout)
    const clock = yield* Effect.clock
    // Errors of the body come from the socket, which the server watches; a late write must not crash.
    const body = new PassThrough().on("error", () => {})
    let lastEvent = clock.unsafeCurrentTimeMillis()
    let lastFrame = lastEvent
    let answered = false
    let usage: Chat.Usage | null = null

    const drained = Effect.async<void>((resume) => {
      const go = () => resume(Effect.void)
      body.once("drain", go).once("close", go)
      return Effect.sync(() => void body.off("drain", go).off("close", go))
    })
    const write = (bytes: Uint8Array): Effect.Effect<void> => {
      if (body.destroyed) return Effect.void
      lastFrame = clock.unsafeCurrentTimeMillis()
      return body.write(bytes) ? Effect.void : drained
    }
    const end = Effect.sync(() => {
      if (!body.destroyed) body.end()
    })
    const fail = (error: HttpError) => Effect.zipRight(write(errorFrame(error)), end)

    const producer = yield* deltas.pipe(
      Stream.runForEach((delta) => {
        lastEvent = clock.unsafeCurrentTimeMillis()
        if (delta.usage !== null) usage = delta.usage
        if (delta.parts.length === 0 && delta.finishReason === null) return Effect.void
        answered = true
        return write(frame(Chat.contentChunk(meta, delta)))
      }),
      Effect.matchCauseEffect({
        onSuccess: () =>
          answered
            ? Effect.zipRight(write(frame(Chat.usageChunk(meta, usage ?? zeroUsage))), Effect.zipRight(write(doneFrame), end)).pipe(
              Effect.zipRight(Effect.suspend(() => record(usage ?? zeroUsage)))
            )
            : fail(httpError(502, "the upstream ended the stream without an answer", { openAiCode: upstreamCodes[502] })),
        onFailure: (cause) => {
          if (Cause.isInterruptedOnly(cause)) return Effect.void
          return Option.match(Cause.failureOption(cause), {
            onNone: () =>
              Effect.zipRight(Effect.logError("chat upstream stream died", Cause.pretty(cause)), fail(httpError(502, "the upstream stream failed", { openAiCode: upstreamCodes[502] }))),
            onSome: (error) => fail(toHttpError(error))
          })
        }
      }),
      Effect.forkScoped
    )
    yield* Effect.sleep(Duration.millis(heartbeatMs)).pipe(
      Effect.zipRight(Effect.suspend(() => {
        const now = clock.unsafeCurrentTimeMillis()
        if (now - lastEvent >= idleMs) {
          return Fiber.interrupt(producer).pipe(
            Effect.zipRight(fail(httpError(504, `the upstream sent nothing for ${Math.round(idleMs / 1000)} s`, { openAiCode: upstreamCodes[504] }))),
            Effect.zipRight(Effect.never)
          )
        }
        return now - lastFrame >= heartbeatMs ? write(keepAliveFrame) : Effect.void
      })),
      Effect.forever,
      Effect.forkScoped
    )
    return HttpServerResponse.raw(body, {
      contentType: "text/event-stream",
      headers: { "cache-control": "no-cache", "x-accel-buffering": "no", ...headers }
    })
  })

/** `POST <path>` for the chat entries sharing that path. */
export const create = (entries: ReadonlyArray<ModelEntry.ModelEntry>) => {
  // The listed id (`vendor-d/<model>`) and the bare model name both select an entry.
  const byModel = new Map(entries.flatMap((e) => [[e.model, e], [e.id, e]] as const))
  const maxBodyBytes = Math.max(...entries.map((e) => e.maxBodyBytes))
  const names = entries.map((e) => e.id).join(", ")
  return Effect.gen(function*() {
    const principal = yield* authenticate
    const json = yield* readJson(maxBodyBytes, principal.tenant)
    if (typeof json !== "object" || json === null || Array.isArray(json)) {
      return yield* invalid([{ param: "body", message: "the request body must be a JSON object" }])
    }
    const model = (json as { readonly model?: unknown }).model
    if (typeof model !== "string" || model === "") return yield* invalid([{ param: "model", message: `is required: one of ${names}` }])
    const entry = byModel.get(model)
    if (entry === undefined) {
      return yield* httpError(404, `The model \`${model}\` does not exist or is not a chat model; chat models: ${names}`, {
        param: "model",
        openAiType: "invalid_request_error",
        openAiCode: "model_not_found"
      })
    }
    yield* Limits.requireModel(principal, entry.id, "model")
    yield* Usage.requireQuota(principal)
    const checked = yield* traced("validate", () => Validate.validate<ChatBody>(entry, json))
    if (Either.isLeft(checked)) return yield* invalid(checked.left)
    const request = yield* toChatRequest(entry, checked.right)
    const upstream = (yield* ChatService).upstreamFor(entry)
    const meta: Chat.CompletionMeta = {
      id: `chatcmpl-${randomUUID().replace(/-/g, "")}`,
      created: Math.floor((yield* Clock.currentTimeMillis) / 1000),
      model: entry.model,
      systemFingerprint: `fp_genway_${upstream.mode}`
    }
    const headers: Record<string, string> = upstream.mode === "sandbox" ? { "x-genway-sandbox": "true" } : {}
    const record = (usage: Chat.Usage) => Usage.recordChat(principal, entry, meta.id, usage)
    if (checked.right.body.stream === true) return yield* streamed(upstream, request, meta, headers, record)
    const result = yield* Effect.mapError(upstream.complete(request), toHttpError)
    yield* record(result.usage)
    return HttpServerResponse.unsafeJson(Chat.completion(meta, result), { headers })
  })
}

/** Adds this surface's routes: one per distinct path of the entries of kind "chat". */
export const mount = <R>(
  router: HttpRouter.HttpRouter<never, R>,
  entries: ReadonlyArray<ModelEntry.ModelEntry>
): HttpRouter.HttpRouter<never, R | Services> => {
  const byPath = new Map<string, Array<ModelEntry.ModelEntry>>()
  for (const entry of entries) {
    if (entry.kind !== "chat") continue
    byPath.set(entry.path, [...(byPath.get(entry.path) ?? []), entry])
  }
  let r: HttpRouter.HttpRouter<never, R | Services> = router
  for (const [path, list] of byPath) {
    r = HttpRouter.post(r, path as HttpRouter.PathInput, handle("openai", create(list), { serverTiming: true }))
  }
  return r
}

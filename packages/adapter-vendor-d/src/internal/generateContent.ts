/**
 * vendor-d protocol "generate-content" (E1): chat messages become `contents` (a data-URL image
 * part becomes `inlineData`, system messages the `systemInstruction`), with
 * `generationConfig.responseModalities ["TEXT", "IMAGE"]`, sent to `POST {base}/models/{model}:generateContent`
 * or `:streamGenerateContent?alt=sse`. Answer parts become text and image parts; `finishReason`
 * passes through. A finish without an image, or with a content-filter reason, is a `ChatRefused`
 * naming the vendor's reason. 429, 408 and 5xx answers (and connections that failed before an
 * answer) are retried with jittered exponential backoff before the first byte reaches the client,
 * honouring `RetryInfo` / `Retry-After` when they ask for a wait the client can afford.
 */
import type * as Headers from "@effect/platform/Headers"
import type * as HttpClientError from "@effect/platform/HttpClientError"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import type * as HttpClientResponse from "@effect/platform/HttpClientResponse"
import { Http } from "@genway/adapter-kit"
import { Chat } from "@genway/core"
import * as Channel from "effect/Channel"
import * as Chunk from "effect/Chunk"
import * as Data from "effect/Data"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import { errorCodes, isOk, parseErrorBody, retryAfterHeaderOf, retryDelayOf, type Upstream } from "./http.js"

const VENDOR = "vendor-d"

/**
 * Time limits of one generation. Silences inside a stream are left to the consumer (the gateway
 * bounds them with the same timer that sends its heartbeats), so no timer runs per event here.
 */
export interface Timeouts {
  /** The whole answer of `:generateContent`. */
  readonly complete: Duration.DurationInput
  /** Until a stream's headers arrive. */
  readonly open: Duration.DurationInput
}

/** How failures before the first byte are retried. */
export interface RetryPolicy {
  /** Retries after the first attempt. */
  readonly retries: number
  /** First backoff; doubled per retry, ±20 % jitter. */
  readonly base: Duration.DurationInput
  /** A vendor asking for a longer wait than this is not retried: the client gets the 429 and the hint. */
  readonly maxWait: Duration.DurationInput
}

/** Tuning of the protocol. */
export interface Options {
  readonly timeouts: Timeouts
  readonly retry: RetryPolicy
}

/** Defaults: image generation takes tens of seconds; three retries from 500 ms; waits up to 10 s. */
export const defaultOptions: Options = {
  timeouts: { complete: "180 seconds", open: "60 seconds" },
  retry: { retries: 3, base: "500 millis", maxWait: "10 seconds" }
}

// ---------------------------------------------------------------------------------------------
// Request
// ---------------------------------------------------------------------------------------------

type VendorPart = { readonly text: string } | { readonly inlineData: { readonly mimeType: string; readonly data: string } }

const vendorPart = (part: Chat.InputPart): VendorPart | undefined =>
  part._tag === "Text"
    ? part.text.length > 0 ? { text: part.text } : undefined
    : { inlineData: { mimeType: part.mimeType, data: part.base64 } }

/** The vendor's request body for a chat request; a conversation without a user or assistant turn is invalid. */
export const toUpstreamBody = (request: Chat.ChatRequest): Either.Either<Record<string, unknown>, Chat.ChatInvalid> => {
  const contents: Array<{ role: "user" | "model"; parts: Array<VendorPart> }> = []
  const system: Array<VendorPart> = []
  for (const message of request.messages) {
    const parts = message.parts.flatMap((p) => {
      const v = vendorPart(p)
      return v === undefined ? [] : [v]
    })
    if (parts.length === 0) continue
    if (message.role === "system") system.push(...parts.filter((p) => "text" in p))
    else contents.push({ role: message.role === "assistant" ? "model" : "user", parts })
  }
  if (contents.length === 0) {
    return Either.left(new Chat.ChatInvalid({ message: "at least one user message with content is required", param: "messages" }))
  }
  const generationConfig: Record<string, unknown> = { responseModalities: ["TEXT", "IMAGE"] }
  if (request.temperature !== undefined) generationConfig["temperature"] = request.temperature
  if (request.topP !== undefined) generationConfig["topP"] = request.topP
  if (request.maxOutputTokens !== undefined) generationConfig["maxOutputTokens"] = request.maxOutputTokens
  return Either.right({
    contents,
    ...(system.length > 0 ? { systemInstruction: { parts: system } } : {}),
    generationConfig
  })
}

// ---------------------------------------------------------------------------------------------
// Response
// ---------------------------------------------------------------------------------------------

const ModalityCount = Schema.Array(Schema.Struct({
  modality: Schema.optional(Schema.String),
  tokenCount: Schema.optional(Schema.Number)
}))

const UsageMetadata = Schema.Struct({
  promptTokenCount: Schema.optional(Schema.Number),
  candidatesTokenCount: Schema.optional(Schema.Number),
  totalTokenCount: Schema.optional(Schema.Number),
  cachedContentTokenCount: Schema.optional(Schema.Number),
  thoughtsTokenCount: Schema.optional(Schema.Number),
  promptTokensDetails: Schema.optional(ModalityCount),
  candidatesTokensDetails: Schema.optional(ModalityCount)
})
type UsageMetadata = typeof UsageMetadata.Type

const ResponsePart = Schema.Struct({
  text: Schema.optional(Schema.String),
  thought: Schema.optional(Schema.Boolean),
  inlineData: Schema.optional(Schema.Struct({ mimeType: Schema.String, data: Schema.String }))
})

/** One `GenerateContentResponse` (a whole answer, or one event of a stream). */
const GenerateContentResponse = Schema.Struct({
  candidates: Schema.optional(Schema.Array(Schema.Struct({
    content: Schema.optional(Schema.Struct({ parts: Schema.optional(Schema.Array(ResponsePart)) })),
    finishReason: Schema.optional(Schema.String),
    finishMessage: Schema.optional(Schema.String)
  }))),
  promptFeedback: Schema.optional(Schema.Struct({
    blockReason: Schema.optional(Schema.String),
    blockReasonMessage: Schema.optional(Schema.String)
  })),
  usageMetadata: Schema.optional(UsageMetadata)
})
type GenerateContentResponse = typeof GenerateContentResponse.Type

const decodeResponse = Schema.decodeUnknownEither(GenerateContentResponse)

const badAnswer = (what: string) => new Chat.ChatUpstreamError({ status: 502, message: `${VENDOR} sent ${what}` })

/** Parses one answer or event. */
export const parseResponse = (text: string): Either.Either<GenerateContentResponse, Chat.ChatUpstreamError> => {
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch {
    return Either.left(badAnswer("an answer that is not JSON"))
  }
  return Either.mapLeft(decodeResponse(json), () => badAnswer("an answer of an unexpected shape"))
}

const modality = (details: typeof ModalityCount.Type | undefined, name: string): number | null =>
  details === undefined ? null : details.reduce((sum, d) => (d.modality === name ? sum + (d.tokenCount ?? 0) : sum), 0)

/** `usageMetadata` as gateway usage: reasoning ("thoughts") counts as output, like OpenAI's. */
export const usageOf = (m: UsageMetadata): Chat.Usage => {
  const prompt = m.promptTokenCount ?? 0
  const completion = (m.candidatesTokenCount ?? 0) + (m.thoughtsTokenCount ?? 0)
  return {
    promptTokens: prompt,
    completionTokens: completion,
    totalTokens: m.totalTokenCount ?? prompt + completion,
    cacheReadTokens: m.cachedContentTokenCount ?? null,
    // The vendor bills cache creation separately and never reports it here.
    cacheCreationTokens: null,
    prompt: {
      text: modality(m.promptTokensDetails, "TEXT"),
      image: modality(m.promptTokensDetails, "IMAGE"),
      audio: modality(m.promptTokensDetails, "AUDIO")
    },
    completion: {
      text: modality(m.candidatesTokensDetails, "TEXT"),
      image: modality(m.candidatesTokensDetails, "IMAGE"),
      audio: modality(m.candidatesTokensDetails, "AUDIO"),
      reasoning: m.thoughtsTokenCount ?? null
    }
  }
}

const noUsage: Chat.Usage = usageOf({})

/** Finish reasons of a successful generation (with an image); every other reason is a refusal. */
const successReasons: ReadonlySet<string> = new Set(["STOP", "MAX_TOKENS"])

/** Finish and block reasons that mean a content filter stopped the generation. */
const filterReasons: ReadonlySet<string> = new Set([
  "SAFETY",
  "PROHIBITED_CONTENT",
  "BLOCKLIST",
  "SPII",
  "RECITATION",
  "IMAGE_SAFETY",
  "IMAGE_PROHIBITED_CONTENT",
  "IMAGE_RECITATION"
])

const quote = (text: string) => (text.length > 300 ? `${text.slice(0, 300)}…` : text)

/** Why a finish without an image failed, naming the vendor's reason. */
const refusal = (reason: string, said: string, finishMessage?: string): Chat.ChatRefused => {
  const because = finishMessage !== undefined && finishMessage !== "" ? ` (${quote(finishMessage)})` : ""
  const words = said.trim() !== "" ? `; the model said: "${quote(said.trim())}"` : ""
  if (filterReasons.has(reason)) {
    return new Chat.ChatRefused({
      code: "content_filter",
      reason,
      message: `${VENDOR} stopped the generation with finish reason ${reason}: its content filter blocked the output${because}${words}`
    })
  }
  return new Chat.ChatRefused({
    code: "no_image",
    reason,
    message: successReasons.has(reason)
      ? `${VENDOR} finished (finish reason ${reason}) without generating an image${words}`
      : `${VENDOR} finished with finish reason ${reason} and no image${because}${words}`
  })
}

/** A prompt the vendor refused to work on (`promptFeedback.blockReason`). */
const blocked = (feedback: NonNullable<GenerateContentResponse["promptFeedback"]>): Chat.ChatRefused | undefined => {
  const reason = feedback.blockReason
  if (reason === undefined || reason === "BLOCK_REASON_UNSPECIFIED") return undefined
  const because = feedback.blockReasonMessage !== undefined ? ` (${quote(feedback.blockReasonMessage)})` : ""
  return new Chat.ChatRefused({
    code: "content_filter",
    reason,
    message: `${VENDOR} blocked the prompt with block reason ${reason}${because}`
  })
}

/** The answer's parts without the model's thoughts; neighbouring text parts are joined. */
const partsOf = (response: GenerateContentResponse): ReadonlyArray<Chat.OutputPart> => {
  const out: Array<Chat.OutputPart> = []
  for (const part of response.candidates?.[0]?.content?.parts ?? []) {
    if (part.thought === true) continue
    if (part.inlineData !== undefined) {
      out.push({ _tag: "Image", mimeType: part.inlineData.mimeType, base64: part.inlineData.data })
    } else if (part.text !== undefined && part.text !== "") {
      const last = out[out.length - 1]
      if (last?._tag === "Text") out[out.length - 1] = { _tag: "Text", text: last.text + part.text }
      else out.push({ _tag: "Text", text: part.text })
    }
  }
  return out
}

const textOf = (parts: ReadonlyArray<Chat.OutputPart>) => parts.map((p) => (p._tag === "Text" ? p.text : "")).join("")

/** A whole answer as a result, or the refusal it amounts to. */
export const toResult = (response: GenerateContentResponse): Either.Either<Chat.ChatResult, Chat.ChatError> => {
  const refused = response.promptFeedback === undefined ? undefined : blocked(response.promptFeedback)
  if (refused !== undefined) return Either.left(refused)
  const candidate = response.candidates?.[0]
  if (candidate === undefined) return Either.left(badAnswer("an answer without a candidate"))
  const parts = partsOf(response)
  const reason = candidate.finishReason ?? "FINISH_REASON_UNSPECIFIED"
  if (!successReasons.has(reason) || !parts.some((p) => p._tag === "Image")) {
    return Either.left(refusal(reason, textOf(parts), candidate.finishMessage))
  }
  return Either.right({
    parts,
    finishReason: reason,
    usage: response.usageMetadata === undefined ? noUsage : usageOf(response.usageMetadata)
  })
}

// ---------------------------------------------------------------------------------------------
// Server-sent events
// ---------------------------------------------------------------------------------------------

/**
 * A server-sent events reader: `feed` takes bytes and returns the `data` of the events they
 * complete, `end` the rest. Lines are cut where they end, so a multi-megabyte image event is
 * scanned once; comments and other fields are skipped.
 */
export const makeSseReader = () => {
  const decoder = new TextDecoder()
  let line = ""
  let skipLf = false
  let data: Array<string> = []
  let events: Array<string> = []
  const endLine = () => {
    if (line === "") {
      if (data.length > 0) events.push(data.join("\n"))
      data = []
    } else if (line.startsWith("data:")) {
      data.push(line.charCodeAt(5) === 32 ? line.slice(6) : line.slice(5))
    }
    line = ""
  }
  const scan = (text: string) => {
    let start = 0
    if (skipLf && text.charCodeAt(0) === 10) start = 1
    skipLf = false
    for (let i = start; i < text.length; i++) {
      const c = text.charCodeAt(i)
      if (c !== 10 && c !== 13) continue
      line += text.slice(start, i)
      endLine()
      if (c === 13) {
        if (i + 1 === text.length) skipLf = true
        else if (text.charCodeAt(i + 1) === 10) i++
      }
      start = i + 1
    }
    line += text.slice(start)
  }
  const take = () => {
    const out = events
    events = []
    return out
  }
  return {
    feed: (bytes: Uint8Array): ReadonlyArray<string> => {
      scan(decoder.decode(bytes, { stream: true }))
      return take()
    },
    end: (): ReadonlyArray<string> => {
      scan(decoder.decode())
      if (line !== "") endLine()
      endLine()
      return take()
    }
  }
}

/**
 * Translates stream events into deltas. The event with a `finishReason` ends the generation: a
 * content-filter reason, or no image in the whole stream, is a refusal; `end` fails a stream that
 * stopped before its finish.
 */
export const makeDeltaReader = () => {
  let sawImage = false
  let finished = false
  let said = ""
  return {
    event: (text: string): Either.Either<Chat.ChatDelta, Chat.ChatError> =>
      Either.flatMap(parseResponse(text), (response) => {
        const refused = response.promptFeedback === undefined ? undefined : blocked(response.promptFeedback)
        if (refused !== undefined) return Either.left(refused)
        const parts = partsOf(response)
        for (const p of parts) {
          if (p._tag === "Image") sawImage = true
          else if (said.length < 1000) said += p.text
        }
        const candidate = response.candidates?.[0]
        const reason = finished ? undefined : candidate?.finishReason
        if (reason !== undefined) {
          if (!successReasons.has(reason) || !sawImage) return Either.left(refusal(reason, said, candidate?.finishMessage))
          finished = true
        }
        return Either.right({
          parts,
          finishReason: reason ?? null,
          usage: response.usageMetadata === undefined ? null : usageOf(response.usageMetadata)
        })
      }),
    end: (): Either.Either<void, Chat.ChatError> =>
      finished
        ? Either.void
        : Either.left(new Chat.ChatUpstreamError({ status: 502, message: `${VENDOR}'s stream ended before the generation finished` }))
  }
}

/**
 * The deltas of a byte stream of events, in one stage: each chunk of bytes is read, parsed and
 * translated at once, so the vendor's first event reaches the consumer without extra hops. Deltas
 * before a refusal in the same chunk are still emitted, then the refusal.
 */
export const toDeltas = <E, R>(bytes: Stream.Stream<Uint8Array, E, R>): Stream.Stream<Chat.ChatDelta, E | Chat.ChatError, R> =>
  Stream.suspend(() => {
    const sse = makeSseReader()
    const reader = makeDeltaReader()
    /** Emits the deltas of `events`; then `next`, unless an event fails. */
    const emit = (
      events: ReadonlyArray<string>,
      next: Channel.Channel<Chunk.Chunk<Chat.ChatDelta>, Chunk.Chunk<Uint8Array>, Chat.ChatError | E, E, unknown, unknown>
    ): Channel.Channel<Chunk.Chunk<Chat.ChatDelta>, Chunk.Chunk<Uint8Array>, Chat.ChatError | E, E, unknown, unknown> => {
      const out: Array<Chat.ChatDelta> = []
      let failure: Chat.ChatError | undefined
      for (const text of events) {
        const delta = reader.event(text)
        if (Either.isLeft(delta)) {
          failure = delta.left
          break
        }
        out.push(delta.right)
      }
      const after = failure !== undefined ? Channel.fail(failure) : next
      return out.length === 0 ? after : Channel.zipRight(Channel.write(Chunk.unsafeFromArray(out)), after)
    }
    const loop: Channel.Channel<Chunk.Chunk<Chat.ChatDelta>, Chunk.Chunk<Uint8Array>, Chat.ChatError | E, E, unknown, unknown> =
      Channel.readWith({
        onInput: (chunk: Chunk.Chunk<Uint8Array>) => {
          const events: Array<string> = []
          for (const piece of chunk) for (const e of sse.feed(piece)) events.push(e)
          return emit(events, Channel.suspend(() => loop))
        },
        onFailure: (error: E) => Channel.fail(error),
        onDone: () => emit(sse.end(), Channel.suspend(() => Either.match(reader.end(), { onLeft: Channel.fail, onRight: () => Channel.void })))
      })
    return Stream.pipeThroughChannelOrFail(bytes, loop)
  })

// ---------------------------------------------------------------------------------------------
// Exchange
// ---------------------------------------------------------------------------------------------

/** A failure before the first byte that another attempt may cure. */
class Transient extends Data.TaggedError("Transient")<{
  readonly error: Chat.ChatRateLimited | Chat.ChatUpstreamError
  readonly retryAfterMs?: number
}> {}

const millisOf = (d: Duration.Duration | undefined) => (d === undefined ? undefined : Duration.toMillis(d))

/**
 * `Effect.retry(schedule)`, with the schedule's driver built only once the first attempt has failed:
 * that failure is handed to the same loop as its first input, so the retries are the same, and an
 * attempt that succeeds (almost every call) skips the driver and its fiber-local iteration data
 * (about 25 runtime steps before the vendor is reached).
 */
const retryAfterFirstFailure = <E, R2>(schedule: Schedule.Schedule<unknown, E, R2>) =>
<A, R>(attempt: Effect.Effect<A, E, R>): Effect.Effect<A, E, R | R2> =>
  Effect.catchAll(attempt, (first) => {
    let replayed = false
    return Effect.retry(Effect.suspend(() => (replayed ? attempt : (replayed = true, Effect.fail(first)))), schedule)
  })

/** The retry schedule: jittered exponential backoff, or the vendor's own hint when it is longer. */
export const retrySchedule = (policy: RetryPolicy) => {
  const maxWait = Duration.toMillis(Duration.decode(policy.maxWait))
  return Schedule.exponential(policy.base, 2).pipe(
    Schedule.jittered,
    Schedule.intersect(Schedule.recurs(policy.retries)),
    Schedule.intersect(Schedule.identity<Transient | Chat.ChatError>()),
    Schedule.whileInput((e: Transient | Chat.ChatError) => e._tag === "Transient" && (e.retryAfterMs ?? 0) <= maxWait),
    Schedule.modifyDelay(([, e], delay) =>
      e._tag === "Transient" && e.retryAfterMs !== undefined && e.retryAfterMs > Duration.toMillis(delay)
        ? Duration.millis(e.retryAfterMs)
        : delay
    )
  )
}

/** Builds the protocol on vendor-d's HTTP access. */
export const make = (upstream: Upstream, options: Options = defaultOptions): Omit<Chat.ChatUpstream, "mode"> => {
  const schedule = retrySchedule(options.retry)
  // On the lines this protocol logs. Annotating each line, not the whole call, costs a request
  // nothing: an annotation around the call changes the fiber's locals twice per request.
  const logged = Effect.annotateLogs({ vendor: VENDOR, protocol: "generate-content" })

  /** The outcome of an error answer: transient for 429, 408 and 5xx. */
  const failure = (status: number, headers: Headers.Headers, text: string): Effect.Effect<never, Transient | Chat.ChatError> => {
    const body = parseErrorBody(text)
    const label = `${VENDOR} answered HTTP ${status}${body?.status !== undefined ? ` (${body.status})` : ""}`
    const detail = upstream.scrub(body?.message ?? label)
    if (status === 429) {
      const retryAfterMs = millisOf(retryDelayOf(body) ?? retryAfterHeaderOf(headers))
      const hint = retryAfterMs === undefined ? {} : { retryAfterMs }
      return Effect.fail(new Transient({ error: new Chat.ChatRateLimited({ message: `${VENDOR} is rate limiting the gateway: ${detail}`, ...hint }), ...hint }))
    }
    if (status === 408 || status >= 500) {
      const retryAfterMs = millisOf(retryAfterHeaderOf(headers) ?? retryDelayOf(body))
      const hint = retryAfterMs === undefined ? {} : { retryAfterMs }
      const gatewayStatus = status === 503 ? 503 : status === 504 || status === 408 ? 504 : 502
      return Effect.fail(new Transient({ error: new Chat.ChatUpstreamError({ status: gatewayStatus, message: `${label}: ${detail}`, ...hint }), ...hint }))
    }
    const keyInvalid = body?.details.some((d) => d["reason"] === "API_KEY_INVALID") === true
    if (status === 401 || status === 403 || keyInvalid) {
      // The gateway's credentials, not the client's request.
      return Effect.zipRight(
        logged(Effect.logError(`${label}: check VENDOR_D_API_KEY and the project's access to the model`)),
        Effect.fail(new Chat.ChatUpstreamError({ status: 502, message: `${VENDOR} refused the gateway's credentials for this model` }))
      )
    }
    if (status === 404 || body?.status === "FAILED_PRECONDITION") {
      return Effect.zipRight(
        logged(Effect.logError(`${label}: ${detail}`)),
        Effect.fail(new Chat.ChatUpstreamError({ status: 502, message: `${VENDOR} cannot serve the configured model: ${detail}` }))
      )
    }
    return Effect.fail(new Chat.ChatInvalid({ message: detail }))
  }

  const fromClientError = (error: HttpClientError.HttpClientError): Transient | Chat.ChatError => {
    if (error._tag === "RequestError" && error.reason !== "Transport") {
      return new Chat.ChatUpstreamError({ status: 502, message: `the request to ${VENDOR} could not be encoded` })
    }
    const code = errorCodes(error.cause)[0]
    const what = `${VENDOR} could not be reached${code !== undefined ? ` (${code})` : ""}`
    return error._tag === "RequestError"
      ? new Transient({ error: new Chat.ChatUpstreamError({ status: 502, message: what }) })
      : new Chat.ChatUpstreamError({ status: 502, message: `${VENDOR}'s answer was cut off` })
  }

  /** Posts the body; the answer when it is a success, its failure otherwise. */
  const post = (model: string, method: string, body: Record<string, unknown>, query: Record<string, string> = {}) =>
    upstream.send(
      HttpClientRequest.post(`${upstream.baseUrl}/models/${encodeURIComponent(model)}:${method}`).pipe(
        HttpClientRequest.setUrlParams(query),
        HttpClientRequest.bodyUnsafeJson(body)
      )
    ).pipe(
      Effect.mapError(fromClientError),
      Effect.flatMap((response): Effect.Effect<HttpClientResponse.HttpClientResponse, Transient | Chat.ChatError> =>
        isOk(response.status)
          ? Effect.succeed(response)
          : response.text.pipe(
            Effect.orElseSucceed(() => ""),
            Effect.flatMap((text) => failure(response.status, response.headers, text))
          )
      )
    )

  const retried = <A>(attempt: Effect.Effect<A, Transient | Chat.ChatError>): Effect.Effect<A, Chat.ChatError> =>
    attempt.pipe(
      Effect.tapError((e) =>
        e._tag === "Transient" ? logged(Effect.logWarning(`${VENDOR}: ${e.error.message}; retrying if allowed`)) : Effect.void
      ),
      retryAfterFirstFailure(schedule),
      Effect.catchTag("Transient", (e) => Effect.fail(e.error))
    )

  const timedOut = (what: string) => new Chat.ChatUpstreamError({ status: 504, message: `${VENDOR} did not ${what} in time` })

  const complete = (request: Chat.ChatRequest): Effect.Effect<Chat.ChatResult, Chat.ChatError> =>
    Effect.gen(function*() {
      const body = yield* toUpstreamBody(request)
      const text = yield* retried(
        post(request.model, "generateContent", body).pipe(
          Effect.flatMap((response) =>
            Effect.mapError(response.text, () => new Chat.ChatUpstreamError({ status: 502, message: `${VENDOR}'s answer was cut off` }))
          ),
          (answer) => Http.within(upstream.client, answer, options.timeouts.complete, () => timedOut("answer"))
        )
      )
      const response = yield* parseResponse(text)
      return yield* toResult(response)
    })

  const stream = (request: Chat.ChatRequest): Effect.Effect<Stream.Stream<Chat.ChatDelta, Chat.ChatError>, Chat.ChatError> =>
    Effect.gen(function*() {
      const body = yield* toUpstreamBody(request)
      const response = yield* retried(
        Http.within(upstream.client, post(request.model, "streamGenerateContent", body, { alt: "sse" }), options.timeouts.open, () =>
          timedOut("start streaming"))
      )
      return response.stream.pipe(
        Stream.mapError(() => new Chat.ChatUpstreamError({ status: 502, message: `${VENDOR}'s stream was cut off` })),
        toDeltas
      )
    })

  return { complete, stream }
}

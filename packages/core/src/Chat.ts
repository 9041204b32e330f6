/**
 * Chat completions (E1): the wire objects of SPEC.md §2.4 and §2.5, and the contract of a
 * synchronous chat upstream. An upstream speaks vendor-neutral values (`ChatRequest` in,
 * `ChatResult` or a stream of `ChatDelta` out, a `ChatError` on failure); the gateway turns them
 * into the wire objects with `completion`, `contentChunk` and `usageChunk`.
 */
import type * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type * as Stream from "effect/Stream"

// ---------------------------------------------------------------------------------------------
// Wire objects
// ---------------------------------------------------------------------------------------------

/** An image part: `url` holds the Base64 image data without a data-URL prefix (SPEC.md §2.4). */
export const ImageUrlPart = Schema.Struct({
  type: Schema.Literal("image_url"),
  image_url: Schema.Struct({ url: Schema.String })
})
/** An image part. */
export type ImageUrlPart = typeof ImageUrlPart.Type

/** A text part, for the words an image model says alongside its picture. */
export const TextPart = Schema.Struct({ type: Schema.Literal("text"), text: Schema.String })
/** A text part. */
export type TextPart = typeof TextPart.Type

/** A part of `message.content` or `delta.content`. */
export const ContentPart = Schema.Union(ImageUrlPart, TextPart)
/** A content part. */
export type ContentPart = typeof ContentPart.Type

/** `usage` of a non-streaming completion (SPEC.md §2.4); a count the upstream did not report is `null`. */
export const CompletionUsage = Schema.Struct({
  prompt_tokens: Schema.Int,
  completion_tokens: Schema.Int,
  total_tokens: Schema.Int,
  audioTokens: Schema.NullOr(Schema.Int),
  cache_creation_input_tokens: Schema.NullOr(Schema.Int),
  cache_read_input_tokens: Schema.NullOr(Schema.Int)
})
/** Non-streaming usage. */
export type CompletionUsage = typeof CompletionUsage.Type

/**
 * A chat completion (SPEC.md §2.4), with OpenAI's `id`, `object`, `created`, `model` and
 * `system_fingerprint`.
 */
export const ChatCompletion = Schema.Struct({
  id: Schema.String,
  object: Schema.Literal("chat.completion"),
  created: Schema.Int,
  model: Schema.String,
  system_fingerprint: Schema.String,
  choices: Schema.Array(Schema.Struct({
    index: Schema.Int,
    finish_reason: Schema.String,
    message: Schema.Struct({
      role: Schema.Literal("assistant"),
      content: Schema.Array(ContentPart)
    })
  })),
  usage: CompletionUsage
})
/** A chat completion. */
export type ChatCompletion = typeof ChatCompletion.Type

/** `usage` of a content chunk (SPEC.md §2.5). */
export const ChunkUsage = Schema.Struct({
  prompt_tokens: Schema.Int,
  completion_tokens: Schema.Int,
  total_tokens: Schema.Int
})
/** Content-chunk usage. */
export type ChunkUsage = typeof ChunkUsage.Type

/** A content chunk (SPEC.md §2.5): a delta of the message, the finish reason on the last one. */
export const ContentChunk = Schema.Struct({
  id: Schema.String,
  object: Schema.Literal("chat.completion.chunk"),
  created: Schema.Int,
  model: Schema.String,
  system_fingerprint: Schema.String,
  choices: Schema.Array(Schema.Struct({
    index: Schema.Int,
    delta: Schema.Struct({
      role: Schema.Literal("assistant"),
      content: Schema.Array(ContentPart)
    }),
    finish_reason: Schema.NullOr(Schema.String)
  })),
  usage: Schema.optional(ChunkUsage)
})
/** A content chunk. */
export type ContentChunk = typeof ContentChunk.Type

/** The usage chunk's `usage` (SPEC.md §2.5): every detail an integer, unknown counts as 0. */
export const UsageDetails = Schema.Struct({
  prompt_tokens: Schema.Int,
  completion_tokens: Schema.Int,
  total_tokens: Schema.Int,
  input_tokens: Schema.Int,
  output_tokens: Schema.Int,
  prompt_tokens_details: Schema.Struct({
    cached_tokens: Schema.Int,
    text_tokens: Schema.Int,
    audio_tokens: Schema.Int,
    image_tokens: Schema.Int
  }),
  completion_tokens_details: Schema.Struct({
    text_tokens: Schema.Int,
    audio_tokens: Schema.Int,
    reasoning_tokens: Schema.Int
  }),
  input_tokens_details: Schema.Null
})
/** Usage-chunk usage. */
export type UsageDetails = typeof UsageDetails.Type

/** The usage chunk (SPEC.md §2.5): sent after the content, with no choices. */
export const UsageChunk = Schema.Struct({
  id: Schema.String,
  object: Schema.Literal("chat.completion.chunk"),
  created: Schema.Int,
  model: Schema.String,
  system_fingerprint: Schema.String,
  choices: Schema.Tuple(),
  usage: UsageDetails
})
/** A usage chunk. */
export type UsageChunk = typeof UsageChunk.Type

/** The literal terminator of a chat stream (SPEC.md §6.1). */
export const DONE = "[DONE]"

// ---------------------------------------------------------------------------------------------
// The upstream contract
// ---------------------------------------------------------------------------------------------

/** An input part: text, or an image given inline. */
export type InputPart =
  | { readonly _tag: "Text"; readonly text: string }
  | { readonly _tag: "Image"; readonly mimeType: string; readonly base64: string }

/** One message of the conversation. */
export interface InputMessage {
  readonly role: "system" | "user" | "assistant"
  readonly parts: ReadonlyArray<InputPart>
}

/** A validated chat request, vendor-neutral. */
export interface ChatRequest {
  /** The upstream model id (deployment configuration, `entry.upstream.model`). */
  readonly model: string
  readonly messages: ReadonlyArray<InputMessage>
  readonly temperature?: number
  readonly topP?: number
  readonly maxOutputTokens?: number
}

/** An output part: text, or a generated image as Base64. */
export type OutputPart =
  | { readonly _tag: "Text"; readonly text: string }
  | { readonly _tag: "Image"; readonly mimeType: string; readonly base64: string }

/** Token counts; `null` where the upstream did not report one. */
export interface Usage {
  readonly promptTokens: number
  /** Output tokens, reasoning included. */
  readonly completionTokens: number
  readonly totalTokens: number
  readonly cacheReadTokens: number | null
  readonly cacheCreationTokens: number | null
  readonly prompt: { readonly text: number | null; readonly image: number | null; readonly audio: number | null }
  readonly completion: {
    readonly text: number | null
    readonly image: number | null
    readonly audio: number | null
    readonly reasoning: number | null
  }
}

/** A finished generation: the parts (at least one image), the upstream's finish reason, the usage. */
export interface ChatResult {
  readonly parts: ReadonlyArray<OutputPart>
  readonly finishReason: string
  readonly usage: Usage
}

/**
 * One step of a streamed generation. The last delta of a successful stream has a `finishReason`;
 * `usage`, when present, is the upstream's latest count.
 */
export interface ChatDelta {
  readonly parts: ReadonlyArray<OutputPart>
  readonly finishReason: string | null
  readonly usage: Usage | null
}

/** The request was refused by the upstream as invalid (HTTP 400). */
export class ChatInvalid extends Schema.TaggedError<ChatInvalid>()("ChatInvalid", {
  message: Schema.String,
  param: Schema.optional(Schema.String)
}) {
  /** HTTP status class. */
  get status(): 400 {
    return 400
  }
}

/**
 * The upstream finished without an image: content filters (`code: "content_filter"`) or no
 * image for another reason (`code: "no_image"`). HTTP 400; the message names the upstream's reason.
 */
export class ChatRefused extends Schema.TaggedError<ChatRefused>()("ChatRefused", {
  code: Schema.Literal("content_filter", "no_image"),
  reason: Schema.String,
  message: Schema.String
}) {
  /** HTTP status class. */
  get status(): 400 {
    return 400
  }
}

/** The upstream is rate limiting the gateway (HTTP 429); `retryAfterMs` when it said how long. */
export class ChatRateLimited extends Schema.TaggedError<ChatRateLimited>()("ChatRateLimited", {
  message: Schema.String,
  retryAfterMs: Schema.optional(Schema.Number)
}) {
  /** HTTP status class. */
  get status(): 429 {
    return 429
  }
}

/** The upstream failed: bad answer (502), unavailable (503), too slow (504). */
export class ChatUpstreamError extends Schema.TaggedError<ChatUpstreamError>()("ChatUpstreamError", {
  status: Schema.Literal(502, 503, 504),
  message: Schema.String,
  retryAfterMs: Schema.optional(Schema.Number)
}) {}

/** Every failure of a chat upstream. */
export type ChatError = ChatInvalid | ChatRefused | ChatRateLimited | ChatUpstreamError

/** A synchronous chat upstream: a live vendor protocol or the sandbox. */
export interface ChatUpstream {
  readonly mode: "live" | "sandbox"
  /** One whole generation. */
  readonly complete: (request: ChatRequest) => Effect.Effect<ChatResult, ChatError>
  /**
   * A streamed generation: the effect sends the request and succeeds once the upstream has
   * started answering (so failures before its first byte, after any retries, fail the effect);
   * the stream reads the answer. Interrupting the stream cancels the upstream request. The
   * consumer bounds silences between deltas (no timer runs per delta).
   */
  readonly stream: (request: ChatRequest) => Effect.Effect<Stream.Stream<ChatDelta, ChatError>, ChatError>
}

// ---------------------------------------------------------------------------------------------
// From results to the wire
// ---------------------------------------------------------------------------------------------

/** What every object of one completion repeats. */
export interface CompletionMeta {
  readonly id: string
  /** Unix seconds. */
  readonly created: number
  /** The public model name the client asked for. */
  readonly model: string
  readonly systemFingerprint: string
}

/** An output part on the wire: images as Base64 without prefix. */
export const toContentPart = (part: OutputPart): ContentPart =>
  part._tag === "Image"
    ? { type: "image_url", image_url: { url: part.base64 } }
    : { type: "text", text: part.text }

/** The non-streaming completion of a result (SPEC.md §2.4). */
export const completion = (meta: CompletionMeta, result: ChatResult): ChatCompletion => {
  const { prompt, completion: out } = result.usage
  const audio = prompt.audio === null && out.audio === null ? null : (prompt.audio ?? 0) + (out.audio ?? 0)
  return {
    id: meta.id,
    object: "chat.completion",
    created: meta.created,
    model: meta.model,
    system_fingerprint: meta.systemFingerprint,
    choices: [{
      index: 0,
      finish_reason: result.finishReason,
      message: { role: "assistant", content: result.parts.map(toContentPart) }
    }],
    usage: {
      prompt_tokens: result.usage.promptTokens,
      completion_tokens: result.usage.completionTokens,
      total_tokens: result.usage.totalTokens,
      audioTokens: audio,
      cache_creation_input_tokens: result.usage.cacheCreationTokens,
      cache_read_input_tokens: result.usage.cacheReadTokens
    }
  }
}

/** The content chunk of a delta (SPEC.md §2.5). */
export const contentChunk = (meta: CompletionMeta, delta: ChatDelta): ContentChunk => ({
  id: meta.id,
  object: "chat.completion.chunk",
  created: meta.created,
  model: meta.model,
  system_fingerprint: meta.systemFingerprint,
  choices: [{
    index: 0,
    delta: { role: "assistant", content: delta.parts.map(toContentPart) },
    finish_reason: delta.finishReason
  }],
  ...(delta.usage !== null
    ? {
      usage: {
        completion_tokens: delta.usage.completionTokens,
        prompt_tokens: delta.usage.promptTokens,
        total_tokens: delta.usage.totalTokens
      }
    }
    : {})
})

/** The usage chunk that follows the content (SPEC.md §2.5); unknown details count as 0. */
export const usageChunk = (meta: CompletionMeta, usage: Usage): UsageChunk => {
  const n = (v: number | null) => v ?? 0
  return {
    id: meta.id,
    object: "chat.completion.chunk",
    created: meta.created,
    model: meta.model,
    system_fingerprint: meta.systemFingerprint,
    choices: [],
    usage: {
      prompt_tokens: usage.promptTokens,
      completion_tokens: usage.completionTokens,
      total_tokens: usage.totalTokens,
      input_tokens: usage.promptTokens,
      output_tokens: usage.completionTokens,
      prompt_tokens_details: {
        cached_tokens: n(usage.cacheReadTokens),
        text_tokens: n(usage.prompt.text),
        audio_tokens: n(usage.prompt.audio),
        image_tokens: n(usage.prompt.image)
      },
      completion_tokens_details: {
        text_tokens: n(usage.completion.text),
        audio_tokens: n(usage.completion.audio),
        reasoning_tokens: n(usage.completion.reasoning)
      },
      input_tokens_details: null
    }
  }
}

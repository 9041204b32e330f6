/**
 * The model responses surface (E2): the response object of SPEC.md §2.6, the streamed events, and
 * the contract of a synchronous upstream (`ResponsesUpstream`) with its failures. Each failure
 * carries the HTTP status the gateway answers with, so the surface maps it without knowing the vendor.
 *
 * Objects keep fields this schema does not name (index signatures): the gateway forwards what the
 * vendor sends, it does not trim it to the fields SPEC.md happens to show.
 */
import * as Data from "effect/Data"
import type * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type * as Stream from "effect/Stream"

const Rest = Schema.Record({ key: Schema.String, value: Schema.Unknown })

/**
 * States of a model response: SPEC.md §3.2 names `completed`, `incomplete`, `in_progress` and
 * `failed`; the vendor adds `queued` (background, not started) and `cancelled`.
 */
export const ResponseStatus = Schema.Literal("queued", "in_progress", "completed", "failed", "cancelled", "incomplete")
/** A response state. */
export type ResponseStatus = typeof ResponseStatus.Type

const terminal: ReadonlySet<string> = new Set(["completed", "failed", "cancelled", "incomplete"])

/** Whether a response in this state will not change any more. A state this gateway does not know is not terminal. */
export const isTerminal = (status: string): boolean => terminal.has(status)

/** A text part of a message: `{type: "output_text", text}`. */
export const OutputText = Schema.Struct({
  type: Schema.Literal("output_text"),
  text: Schema.String
}, Rest)
/** A text part. */
export type OutputText = typeof OutputText.Type

/** The message output item of SPEC.md §2.6. */
export const MessageOutput = Schema.Struct({
  id: Schema.String,
  type: Schema.Literal("message"),
  role: Schema.Literal("assistant"),
  content: Schema.Array(Schema.Union(OutputText, Rest))
}, Rest)
/** A message output item. */
export type MessageOutput = typeof MessageOutput.Type

/** Any output item: a message, or a reasoning or function call item (fields not shown by SPEC.md). */
export const OutputItem = Schema.Union(MessageOutput, Schema.Struct({ type: Schema.String }, Rest))
/** An output item. */
export type OutputItem = typeof OutputItem.Type

/**
 * Token statistics. SPEC.md §2.6 names the chat-style fields; the vendor's own names
 * (`input_tokens`, `output_tokens` and their details) are carried too, since clients of the
 * responses format read those.
 */
export const Usage = Schema.Struct({
  prompt_tokens: Schema.optional(Schema.Int),
  completion_tokens: Schema.optional(Schema.Int),
  total_tokens: Schema.Int,
  prompt_tokens_details: Schema.optional(Schema.Struct({
    cached_tokens: Schema.optional(Schema.Int),
    audio_tokens: Schema.optional(Schema.Int)
  }, Rest)),
  completion_tokens_details: Schema.optional(Schema.Struct({
    reasoning_tokens: Schema.optional(Schema.Int),
    audio_tokens: Schema.optional(Schema.Int),
    accepted_prediction_tokens: Schema.optional(Schema.Int),
    rejected_prediction_tokens: Schema.optional(Schema.Int)
  }, Rest)),
  input_tokens: Schema.optional(Schema.Int),
  output_tokens: Schema.optional(Schema.Int),
  input_tokens_details: Schema.optional(Schema.Struct({ cached_tokens: Schema.optional(Schema.Int) }, Rest)),
  output_tokens_details: Schema.optional(Schema.Struct({ reasoning_tokens: Schema.optional(Schema.Int) }, Rest))
}, Rest)
/** Token statistics. */
export type Usage = typeof Usage.Type

/** The `error` of a failed response (SPEC.md does not show its fields; the vendor sends these). */
export const ResponseError = Schema.Struct({
  code: Schema.NullOr(Schema.String),
  message: Schema.String
}, Rest)
/** A response's error. */
export type ResponseError = typeof ResponseError.Type

/** The model response object (SPEC.md §2.6). */
export const ResponseObject = Schema.Struct({
  id: Schema.String,
  object: Schema.Literal("response"),
  created_at: Schema.Number,
  model: Schema.String,
  status: ResponseStatus,
  output: Schema.optional(Schema.Array(OutputItem)),
  output_text: Schema.optional(Schema.NullOr(Schema.String)),
  usage: Schema.optional(Schema.NullOr(Usage)),
  error: Schema.optional(Schema.NullOr(ResponseError))
}, Rest)
/** A model response. */
export type ResponseObject = typeof ResponseObject.Type

/** The concatenated text of every `output_text` part of every message item. */
export const outputTextOf = (response: ResponseObject): string => {
  let text = ""
  for (const item of response.output ?? []) {
    if (item.type !== "message" || !Array.isArray(item.content)) continue
    for (const part of item.content as ReadonlyArray<{ readonly type?: unknown; readonly text?: unknown }>) {
      if (part.type === "output_text" && typeof part.text === "string") text += part.text
    }
  }
  return text
}

/** The response with `output_text` filled in from its output (vendors leave it to client libraries). */
export const withOutputText = (response: ResponseObject): ResponseObject =>
  typeof response.output_text === "string" ? response : { ...response, output_text: outputTextOf(response) }

/**
 * One server-sent event of a streamed response: `{type, sequence_number, ...}`. Order:
 * `response.created`, `response.in_progress`, `response.output_item.added`,
 * `response.content_part.added`, `response.output_text.delta`…, `response.output_text.done`,
 * `response.content_part.done`, `response.output_item.done`, then one terminal event; an `error`
 * event `{code, message, param}` may appear.
 */
export const ResponseEvent = Schema.Struct({
  type: Schema.String,
  sequence_number: Schema.Number
}, Rest)
/** A streamed event. */
export type ResponseEvent = typeof ResponseEvent.Type

/** The event types that end a stream, each carrying the final `response`. */
export const terminalEventTypes: ReadonlySet<string> = new Set(["response.completed", "response.failed", "response.incomplete"])

/** Whether an event ends the stream. */
export const isTerminalEvent = (event: ResponseEvent): boolean => terminalEventTypes.has(event.type)

/** The `response` an event carries (`response.created`, `response.in_progress`, terminal events), if any. */
export const responseOf = (event: ResponseEvent): ResponseObject | undefined => {
  const response = event["response"]
  return typeof response === "object" && response !== null && typeof (response as { id?: unknown }).id === "string"
    ? response as ResponseObject
    : undefined
}

// ---------------------------------------------------------------------------------------------
// Failures of an upstream, each with the HTTP status the gateway answers with
// ---------------------------------------------------------------------------------------------

/**
 * The vendor refused the request itself (its 400, 404, 409, 413, 422): the client's to fix. The
 * vendor's status, message, `param` and `code` are passed on.
 */
export class UpstreamRejected extends Data.TaggedError("UpstreamRejected")<{
  readonly status: number
  readonly message: string
  readonly param: string | null
  readonly code: string | null
}> {}

/**
 * The vendor refused the gateway's credentials or account (401, 403, exhausted quota): nothing
 * the client can change, so the gateway answers 502 and says the gateway is misconfigured.
 */
export class UpstreamAuthFailed extends Data.TaggedError("UpstreamAuthFailed")<{
  readonly status: 502
  readonly message: string
}> {}

/** The vendor rate-limited the gateway (429): answered 429 with the vendor's wait hint. */
export class UpstreamRateLimited extends Data.TaggedError("UpstreamRateLimited")<{
  readonly status: 429
  readonly message: string
  readonly code: string | null
  /** How long to wait, from `retry-after-ms`, `Retry-After` or `x-ratelimit-reset-requests`. */
  readonly retryAfterMs?: number
}> {}

/**
 * The vendor failed or was unreachable: 502 for its errors, connection failures and unreadable
 * answers, 503 when it says it is overloaded, 504 when it did not answer in time.
 */
export class UpstreamUnavailable extends Data.TaggedError("UpstreamUnavailable")<{
  readonly status: 502 | 503 | 504
  readonly message: string
  readonly retryAfterMs?: number
}> {}

/** A retrieve of a response the vendor does not know (any more): answered 404. */
export class ResponseNotFound extends Data.TaggedError("ResponseNotFound")<{
  readonly status: 404
  readonly id: string
}> {}

/** Every failure of a responses upstream. */
export type UpstreamError = UpstreamRejected | UpstreamAuthFailed | UpstreamRateLimited | UpstreamUnavailable | ResponseNotFound

/**
 * A synchronous model-responses upstream. The body is the client's validated request, forwarded
 * as is (the caller sets `model` to the upstream model in force).
 */
export interface ResponsesUpstream {
  /** `stream` absent or false: the response object (`queued` at once when `background` is true). */
  readonly create: (body: Readonly<Record<string, unknown>>) => Effect.Effect<ResponseObject, UpstreamError>
  /**
   * `stream: true`: fails like `create` when the vendor refuses before streaming; otherwise the
   * events in the vendor's order, as they arrive. The stream fails with `UpstreamUnavailable` when
   * the connection breaks; interrupting it cancels the upstream request.
   */
  readonly stream: (body: Readonly<Record<string, unknown>>) => Effect.Effect<Stream.Stream<ResponseEvent, UpstreamError>, UpstreamError>
  /** The latest state of a response the vendor still keeps. */
  readonly retrieve: (id: string) => Effect.Effect<ResponseObject, UpstreamError>
  /**
   * Cancels a background response; its state afterwards (`cancelled`, or the terminal state it
   * had reached). Absent when the vendor cannot cancel.
   */
  readonly cancel?: (id: string) => Effect.Effect<ResponseObject, UpstreamError>
  /** Deletes a response the vendor keeps (`ResponseNotFound` when it keeps none). Absent when the vendor cannot. */
  readonly remove?: (id: string) => Effect.Effect<void, UpstreamError>
  /**
   * The events of a background response streamed again, those after `startingAfter` (a
   * `sequence_number`; all of them when undefined), then as they come until the terminal event.
   * Fails like `retrieve` before streaming. Absent when the vendor cannot.
   */
  readonly resume?: (
    id: string,
    startingAfter: number | undefined
  ) => Effect.Effect<Stream.Stream<ResponseEvent, UpstreamError>, UpstreamError>
}

/** The text of a responses `input`: a string, or the text parts of message objects. */
export const inputText = (input: unknown): string => {
  if (typeof input === "string") return input
  if (!Array.isArray(input)) return ""
  const texts: Array<string> = []
  for (const message of input) {
    const content = (message as { content?: unknown } | null)?.content
    if (typeof content === "string") texts.push(content)
    else if (Array.isArray(content)) {
      for (const part of content) {
        const text = (part as { text?: unknown } | null)?.text
        if (typeof text === "string") texts.push(text)
      }
    }
  }
  return texts.join(" ")
}

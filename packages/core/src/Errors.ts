/**
 * Error envelopes on the wire (DESIGN.md §4) and the validation issue type shared by every check.
 */
import * as Schema from "effect/Schema"

/**
 * The one set of error titles: HTTP statuses the gateway answers with, and the two task error
 * codes (400 invalid-request family, 3001 execution error) of DESIGN.md §2.
 */
export const titles = {
  400: "Invalid request",
  401: "Unauthorized",
  403: "Forbidden",
  404: "Not found",
  405: "Method not allowed",
  409: "Conflict",
  410: "Gone",
  413: "Payload too large",
  415: "Unsupported media type",
  429: "Too many requests",
  500: "Internal error",
  502: "Bad gateway",
  503: "Service unavailable",
  504: "Gateway timeout",
  3001: "Execution error"
} as const satisfies Readonly<Record<number, string>>

/** The title of a status or task error code, when it has one. */
export const titleOf = (code: number): string | undefined => (titles as Readonly<Record<number, string>>)[code]

/** Error body of the task surface (E3–E8, G1–G8) and of gateway-level routes. */
export const TaskErrorEnvelope = Schema.Struct({
  error: Schema.Struct({
    code: Schema.Int,
    title: Schema.String,
    detail: Schema.String,
    param: Schema.optional(Schema.String)
  })
})
/** A task-surface error body. */
export type TaskErrorEnvelope = typeof TaskErrorEnvelope.Type

/** Error body of the OpenAI-compatible surface (E1, E2), so official clients raise typed errors. */
export const OpenAiErrorEnvelope = Schema.Struct({
  error: Schema.Struct({
    message: Schema.String,
    type: Schema.String,
    param: Schema.NullOr(Schema.String),
    code: Schema.NullOr(Schema.String)
  })
})
/** An OpenAI-style error body. */
export type OpenAiErrorEnvelope = typeof OpenAiErrorEnvelope.Type

/** One problem with a request: the field path at fault (`ref_images_url[1]`) and why. */
export interface Issue {
  readonly param: string
  readonly message: string
}

/** Builds an issue. */
export const issue = (param: string, message: string): Issue => ({ param, message })

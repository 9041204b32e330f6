/**
 * vendor-a models: the model-response endpoint (E2, protocol "responses", body forwarded as is)
 * and the video task (E7, protocol "videos", sent by the adapter as multipart form data).
 */
import { Errors, type ModelEntry } from "@genway/core"
import * as Schema from "effect/Schema"
import * as F from "../Fields.js"
import * as Docs from "./docs.js"
import { bodyLimitFor, syncPoll, TEN_MB, videoPoll } from "./shared.js"

// ---------------------------------------------------------------------------------------------
// E2: create model response (SPEC.md §4.3)
// ---------------------------------------------------------------------------------------------

/**
 * Every field of SPEC.md §4.3 with its bounds. Sub-objects whose inner fields SPEC.md does not
 * show (`prompt`, `text`, `reasoning`, tools, input messages) pass through unchecked: the vendor
 * judges them. `prompt`, `reasoning` and `metadata` also take `null`, as the official clients
 * type them nullable and may send it.
 */
const responsesRequest = F.described(Schema.Struct({
  model: F.nonEmpty,
  input: Schema.optional(F.stringOrArray("must be a string or an array of message objects", F.arrayOf(F.openObject, 0))),
  instructions: F.optionalNullable(F.string),
  previous_response_id: F.optionalNullable(F.string),
  prompt: F.optionalNullable(F.openObject),
  max_output_tokens: F.optionalNullable(F.intAtLeast(1)),
  max_tool_calls: F.optionalNullable(F.intAtLeast(0)),
  temperature: F.optionalNullable(F.numberBetween(0, 2)),
  top_p: F.optionalNullable(F.numberBetween(0, 1)),
  top_logprobs: F.optionalNullable(F.intBetween(0, 20)),
  parallel_tool_calls: F.optionalNullable(F.bool),
  stream: F.optionalNullable(F.bool),
  background: F.optionalNullable(F.bool),
  store: F.optionalNullable(F.bool),
  text: Schema.optional(F.openObject),
  tools: F.optionalNullable(F.arrayOf(F.openObject, 0)),
  tool_choice: Schema.optional(
    F.eitherOf(`must be "none", "auto", "required" or a tool choice object`, F.oneOf("none", "auto", "required"), F.openObject)
  ),
  reasoning: F.optionalNullable(F.openObject),
  truncation: F.optionalNullable(F.oneOf("auto", "disabled")),
  metadata: F.optionalNullable(F.stringMap(16, 64, 512)),
  user: F.optionalNullable(F.string),
  include: F.optionalNullable(F.arrayOf(F.string, 0))
}), Docs.responses, Docs.responsesExample)

/**
 * E2: create a model response (SPEC.md §4.3). The client's `model` (a deployment name) is
 * forwarded with the body; `upstream.model` is only the fallback a deployment may override.
 */
export const responses: ModelEntry.ModelEntry<typeof responsesRequest.Type> = {
  id: "vendor-a/responses",
  vendor: "vendor-a",
  kind: "responses",
  model: "responses",
  endpoints: ["E2"],
  summary: "Create a model response",
  path: "/vendors/vendor-a/v1/responses",
  request: responsesRequest,
  rules: [],
  images: [],
  upstream: { protocol: "responses", operation: "responses", model: "responses" },
  poll: syncPoll,
  retention: null,
  // Nothing to copy: the answer is text, returned in the response itself.
  mirror: false,
  stage: "ga",
  createIncludesStatus: false,
  // Conversations with tool outputs, or an inline image or file in `input`, outgrow 1 MB.
  maxBodyBytes: bodyLimitFor(1),
  billing: { unit: "tokens" }
}

// ---------------------------------------------------------------------------------------------
// E7: video task, text or image input (SPEC.md section 4.8)
// ---------------------------------------------------------------------------------------------

const reelRequest = F.described(Schema.Struct({
  prompt: F.requiredText(2000),
  model: Schema.optional(F.oneOf("reel-2")),
  image: Schema.optional(F.image),
  // A string enum on the wire (the vendor's own type); a number 8 is told to send "8".
  seconds: Schema.optional(F.oneOf("4", "8", "12")),
  size: Schema.optional(F.oneOf("720x1280", "1280x720"))
}), Docs.reel, Docs.reelExample)
type ReelBody = typeof reelRequest.Type

/** The vendor requires an inline first frame to have exactly the output's pixel size. */
const reelImageMatchesSize: ModelEntry.Rule<ReelBody> = (body, context) => {
  const facts = context.images.get("image")
  if (facts === undefined) return []
  const size = body.size ?? "1280x720"
  return `${facts.width}x${facts.height}` === size
    ? []
    : [Errors.issue("image", `is ${facts.width}x${facts.height} px; it must be exactly ${size} px, the requested size`)]
}

/**
 * E7: video task with text or image input (SPEC.md §4.8, beta). The content rules of §4.8
 * (audiences under 18, no copyrighted characters, real people or faces) are the vendor's
 * moderation: their rejections fail the task with code 400.
 */
export const reel: ModelEntry.ModelEntry<ReelBody> = {
  id: "vendor-a/reel",
  vendor: "vendor-a",
  kind: "task",
  model: "reel",
  endpoints: ["E7"],
  summary: "Video task from text or a first-frame image (beta)",
  path: "/vendors/vendor-a/v1/reel/generation",
  request: reelRequest,
  rules: [reelImageMatchesSize],
  images: [{
    field: "image",
    accept: { url: true, dataUrl: true, rawBase64: true },
    formats: ["jpeg", "png", "webp"],
    dataUrlMediaTypes: ["image/jpeg", "image/png", "image/webp"],
    maxBytes: TEN_MB
  }],
  result: "videos",
  upstream: {
    protocol: "videos",
    operation: "videos",
    // The body's only `model` value (SPEC.md section 4.8); the real id is deployment configuration.
    model: "reel-2",
    rename: { image: "input_reference" }
  },
  poll: videoPoll,
  retention: null,
  // The vendor serves the bytes only with the API key: they must be copied.
  mirror: true,
  stage: "beta",
  createIncludesStatus: true,
  maxBodyBytes: bodyLimitFor(1),
  billing: { unit: "seconds", field: "seconds", default: 8 }
}

/** Every vendor-a entry, in SPEC.md order. */
export const vendorA: ReadonlyArray<ModelEntry.ModelEntry> = [responses, reel]

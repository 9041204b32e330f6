/**
 * vendor-d models: image generation in chat format (E1, protocol "generate-content") and the
 * long-running video models (G1, G2, protocol "long-running"). For the latter, `input` lists the
 * fields of the vendor's `instances[0]`, `parameters` those of its `parameters`.
 */
import { Errors, type Media, type ModelEntry } from "@genway/core"
import * as Schema from "effect/Schema"
import * as F from "../Fields.js"
import * as Docs from "./docs.js"
import { bodyLimitFor, given, syncPoll, TEN_MB } from "./shared.js"

// ---------------------------------------------------------------------------------------------
// E1: chat completions (SPEC.md §4.2)
// ---------------------------------------------------------------------------------------------

const textPart = F.described(Schema.Struct({ type: Schema.Literal("text"), text: F.string }), Docs.textPart)
const imagePart = F.described(
  Schema.Struct({
    type: Schema.Literal("image_url"),
    image_url: F.described(Schema.Struct({ url: F.nonEmpty }), Docs.imageUrl)
  }),
  Docs.imagePart
)
const partTypes: ReadonlyArray<unknown> = ["text", "image_url"]

/** A content part: when `type` is known, the part's own field errors are reported; else one message. */
const contentPart = Schema.Union(textPart, imagePart).annotations({
  message: (issue) => {
    const actual = "actual" in issue ? issue.actual : undefined
    const known = typeof actual === "object" && actual !== null && partTypes.includes((actual as { type?: unknown }).type)
    return { message: `must be a part of type "text" or "image_url"`, override: !known }
  }
})

const chatMessage = F.described(Schema.Struct({
  role: F.oneOf("system", "user", "assistant"),
  content: F.stringOrArray("must be a string or an array of content parts", F.arrayOf(contentPart, 0)),
  name: Schema.optional(F.string)
}), Docs.chatMessage)

/**
 * SPEC.md §4.2's fields, plus the options OpenAI clients commonly send, accepted so those clients
 * work unchanged (the adapter maps what the vendor supports and ignores the rest).
 */
const chatRequest = F.described(Schema.Struct({
  model: F.nonEmpty,
  stream: F.optionalNullable(F.bool),
  messages: F.arrayOf(chatMessage, 1),
  n: F.optionalNullable(F.intAtLeast(1)),
  temperature: F.optionalNullable(F.numberBetween(0, 2)),
  top_p: F.optionalNullable(F.numberBetween(0, 1)),
  max_tokens: F.optionalNullable(F.intAtLeast(1)),
  max_completion_tokens: F.optionalNullable(F.intAtLeast(1)),
  stream_options: F.optionalNullable(F.described(Schema.Struct({ include_usage: Schema.optional(F.bool) }), Docs.streamOptions)),
  user: Schema.optional(F.string),
  modalities: F.optionalNullable(F.arrayOf(F.string, 0))
}), Docs.chat, Docs.chatExample)

/** The vendor answers one candidate per request: `n` above 1 is refused rather than ignored. */
const oneChoice: ModelEntry.Rule<typeof chatRequest.Type> = (body) =>
  body.n != null && body.n > 1
    ? [Errors.issue("n", "must be 1: this model returns one choice per request; send n requests for n answers")]
    : []

/**
 * E1: image generation in chat format (SPEC.md §4.2). Input images must be inline data URLs
 * (rule 1): the image rule rejects an address at its part's path, e.g.
 * `messages[0].content[1].image_url.url`.
 */
export const imageModel25FlashImagePreview: ModelEntry.ModelEntry<typeof chatRequest.Type> = {
  id: "vendor-d/image-model-2.5-flash-image-preview",
  vendor: "vendor-d",
  kind: "chat",
  model: "image-model-2.5-flash-image-preview",
  endpoints: ["E1"],
  summary: "Image generation in chat format, streaming or not",
  path: "/v1/chat/completions",
  request: chatRequest,
  rules: [oneChoice],
  images: [{
    field: "messages[].content[].image_url.url",
    accept: { url: false, dataUrl: true, rawBase64: true },
    formats: ["jpeg", "png", "webp"],
    maxBytes: TEN_MB
  }],
  upstream: { protocol: "generate-content", operation: "generateContent", model: "image-model-2.5-flash-image-preview" },
  poll: syncPoll,
  retention: null,
  // Nothing to copy: generated images come back inline, as Base64.
  mirror: false,
  stage: "preview",
  createIncludesStatus: false,
  // Two full-size inline images (an edit: a photo and a reference).
  maxBodyBytes: bodyLimitFor(2),
  billing: { unit: "tokens" }
}

// ---------------------------------------------------------------------------------------------
// G1, G2: video generation (retrieval shown only)
// ---------------------------------------------------------------------------------------------

/** Create body of G1 and G2. Genway's decision: SPEC.md shows no create body. */
const filmRequest = F.described(Schema.Struct({
  prompt: F.requiredText(2000),
  image: Schema.optional(F.image),
  last_frame: Schema.optional(F.image),
  aspect_ratio: Schema.optional(F.oneOf("16:9", "9:16")),
  duration: Schema.optional(F.intOneOf(4, 6, 8)),
  resolution: Schema.optional(F.oneOf("720P", "1080P")),
  negative_prompt: Schema.optional(F.text(500))
}), Docs.film, Docs.filmExample)
type FilmBody = typeof filmRequest.Type

/** The vendor interpolates from a first to a last frame: a last frame alone means nothing to it. */
const lastFrameNeedsImage: ModelEntry.Rule<FilmBody> = (body) =>
  given(body.last_frame) && !given(body.image) ? [Errors.issue("image", "is required when last_frame is given")] : []

/**
 * G1/G2 frames: inline only (data URL or raw Base64). The vendor takes the bytes in the request and
 * the gateway never fetches client URLs, so an address is refused when the request is checked.
 */
const filmImage = (field: string): Media.ImageRule => ({
  field,
  accept: { url: false, dataUrl: true, rawBase64: true },
  formats: ["jpeg", "png", "webp"],
  maxBytes: TEN_MB
})

const filmUpstream = (model: string): ModelEntry.UpstreamMapping => ({
  protocol: "long-running",
  operation: "predictLongRunning",
  model,
  input: ["prompt", "image", "last_frame"],
  parameters: ["aspect_ratio", "duration", "resolution", "negative_prompt"],
  rename: {
    last_frame: "lastFrame",
    aspect_ratio: "aspectRatio",
    duration: "durationSeconds",
    negative_prompt: "negativePrompt"
  }
})

/** G1: fast video generation. The create body is Genway's decision (SPEC.md shows only the retrieval). */
export const film31Fast: ModelEntry.ModelEntry<FilmBody> = {
  id: "vendor-d/film-3.1-fast",
  vendor: "vendor-d",
  kind: "task",
  model: "film-3.1-fast",
  endpoints: ["G1"],
  summary: "Video generation task, fast variant",
  path: "/vendors/vendor-d/v1/film-3.1-fast/generation",
  request: filmRequest,
  rules: [lastFrameNeedsImage],
  images: [filmImage("image"), filmImage("last_frame")],
  result: "videos",
  upstream: filmUpstream("film-3.1-fast"),
  // SPEC.md section 8: poll every 5 to 10 s; typically done in under 10 s.
  poll: { initial: "5 seconds", every: ["5 seconds", "10 seconds"], deadline: "30 minutes" },
  // SPEC.md section 8: stored 2 days, then deleted.
  retention: "2 days",
  mirror: true,
  stage: "ga",
  createIncludesStatus: false,
  maxBodyBytes: bodyLimitFor(2),
  billing: { unit: "seconds", field: "duration", default: 8 }
}

/** G2: video generation. The create body is Genway's decision (SPEC.md shows only the retrieval). */
export const film: ModelEntry.ModelEntry<FilmBody> = {
  id: "vendor-d/film",
  vendor: "vendor-d",
  kind: "task",
  model: "film",
  endpoints: ["G2"],
  summary: "Video generation task",
  path: "/vendors/vendor-d/v1/film/generation",
  request: filmRequest,
  rules: [lastFrameNeedsImage],
  images: [filmImage("image"), filmImage("last_frame")],
  result: "videos",
  upstream: filmUpstream("film"),
  // SPEC.md section 8: poll every 10 to 15 s; at least 11 s, up to 6 minutes at peak.
  poll: { initial: "10 seconds", every: ["10 seconds", "15 seconds"], deadline: "30 minutes" },
  // SPEC.md section 8: stored 2 days, then deleted.
  retention: "2 days",
  mirror: true,
  stage: "ga",
  createIncludesStatus: false,
  maxBodyBytes: bodyLimitFor(2),
  billing: { unit: "seconds", field: "duration", default: 8 }
}

/** Every vendor-d entry, in SPEC.md order. */
export const vendorD: ReadonlyArray<ModelEntry.ModelEntry> = [imageModel25FlashImagePreview, film31Fast, film]

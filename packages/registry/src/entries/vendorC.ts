/**
 * vendor-c models (SPEC.md §4.9, G7). Protocol "jwt-task": flat JSON bodies; the adapter turns
 * `duration` into the vendor's string and queries by the task kind named in `operation`.
 */
import { Errors, type Media, type ModelEntry } from "@genway/core"
import * as Schema from "effect/Schema"
import * as F from "../Fields.js"
import * as Docs from "./docs.js"
import { bodyLimitFor, given, SMALL_BODY, TEN_MB, videoPoll } from "./shared.js"

// ---------------------------------------------------------------------------------------------
// E8: image-to-video with audio and voices (SPEC.md §4.9)
// ---------------------------------------------------------------------------------------------

const clipRequest = F.described(Schema.Struct({
  // Listed as required, yet rule 1 lets `image_tail` stand in for it: the rule decides.
  image: Schema.optional(F.image),
  image_tail: F.optionalNullable(F.image),
  prompt: Schema.optional(F.text(2500)),
  negative_prompt: Schema.optional(F.text(2500)),
  voice_list: F.optionalNullable(F.arrayOf(F.described(Schema.Struct({ voice_id: F.nonEmpty }), Docs.voice), 0, 2)),
  sound: Schema.optional(F.oneOf("on", "off")),
  mode: Schema.optional(F.oneOf("std", "pro")),
  static_mask: F.optionalNullable(F.image),
  dynamic_masks: F.optionalNullable(
    F.arrayOf(
      F.described(
        Schema.Struct({
          mask: F.image,
          trajectories: F.arrayOf(F.described(Schema.Struct({ x: F.integer, y: F.integer }), Docs.point), 0)
        }),
        Docs.dynamicMask
      ),
      0,
      6
    )
  ),
  duration: Schema.optional(F.intOneOf(5, 10))
}), Docs.clip, Docs.clipExample)
type ClipBody = typeof clipRequest.Type

const filled = (value: string | null | undefined): boolean => given(value) && value !== ""
const nonEmptyList = (value: ReadonlyArray<unknown> | null | undefined): boolean => value != null && value.length > 0

/** Rule 1: at least one of `image` and `image_tail`. */
const clipNeedsAFrame: ModelEntry.Rule<ClipBody> = (body) =>
  filled(body.image) || filled(body.image_tail)
    ? []
    : [Errors.issue("image", "is required unless image_tail is given")]

/** Rule 2: first and last frame together exclude masks. */
const clipFramesExcludeMasks: ModelEntry.Rule<ClipBody> = (body) => {
  if (!filled(body.image) || !filled(body.image_tail)) return []
  const out: Array<Errors.Issue> = []
  if (filled(body.static_mask)) out.push(Errors.issue("static_mask", "cannot be combined with image and image_tail together"))
  if (nonEmptyList(body.dynamic_masks)) {
    out.push(Errors.issue("dynamic_masks", "cannot be combined with image and image_tail together"))
  }
  return out
}

/** Rule 3: voices need sound. */
const clipVoicesNeedSound: ModelEntry.Rule<ClipBody> = (body) =>
  nonEmptyList(body.voice_list) && body.sound !== "on"
    ? [Errors.issue("sound", `must be "on" when voice_list is not empty`)]
    : []

/** Rule 4: every `<<<voice_N>>>` marker selects an existing `voice_list` entry (1-based). */
const clipVoiceMarkers: ModelEntry.Rule<ClipBody> = (body) => {
  if (body.prompt === undefined) return []
  const voices = body.voice_list?.length ?? 0
  for (const match of body.prompt.matchAll(/<<<voice_(\d+)>>>/g)) {
    const n = Number(match[1])
    if (n < 1 || n > voices) {
      return [
        Errors.issue(
          "prompt",
          voices === 0
            ? "uses a <<<voice_N>>> marker but voice_list is empty"
            : `has a <<<voice_N>>> marker outside voice_list: N must be from 1 to ${voices}`
        )
      ]
    }
  }
  return []
}

/** `static_mask` must have the aspect ratio of `image`; checked when both are inline (sniffed). */
const clipMaskMatchesImage: ModelEntry.Rule<ClipBody> = (_, context) => {
  const image = context.images.get("image")
  const mask = context.images.get("static_mask")
  if (image === undefined || mask === undefined) return []
  const a = image.width / image.height
  const b = mask.width / mask.height
  // 1 % slack: a mask scaled to another resolution may differ by a rounded pixel.
  return Math.abs(a - b) / a <= 0.01
    ? []
    : [Errors.issue("static_mask", "must have the same aspect ratio as image")]
}

/**
 * Frames and masks of E8: URL, raw Base64 or a data URL (the adapter strips the prefix, which
 * vendor-c refuses), JPEG/PNG, ≥300 px, aspect 1:2.5–2.5:1.
 */
const clipImage = (field: string): Media.ImageRule => ({
  field,
  accept: { url: true, dataUrl: true, rawBase64: true },
  formats: ["jpeg", "png"],
  maxBytes: TEN_MB,
  minSide: 300,
  minAspect: 1 / 2.5,
  maxAspect: 2.5
})

/** E8: image-to-video with audio and voices (SPEC.md §4.9). Rules 5 and 6 (voice origin, billing) are the vendor's. */
export const clipV26ImageToVideo: ModelEntry.ModelEntry<ClipBody> = {
  id: "vendor-c/clip-v2.6/image-to-video",
  vendor: "vendor-c",
  kind: "task",
  model: "clip-v2.6",
  endpoints: ["E8"],
  summary: "Image-to-video task with audio and voices",
  path: "/vendors/vendor-c/v1/clip-v2.6/image-to-video/generation",
  request: clipRequest,
  rules: [clipNeedsAFrame, clipFramesExcludeMasks, clipVoicesNeedSound, clipVoiceMarkers, clipMaskMatchesImage],
  images: [clipImage("image"), clipImage("image_tail"), clipImage("static_mask"), clipImage("dynamic_masks[].mask")],
  result: "videos",
  upstream: { protocol: "jwt-task", operation: "image2video", model: "clip-v2.6" },
  poll: videoPoll,
  retention: null,
  mirror: true,
  stage: "ga",
  createIncludesStatus: true,
  // Up to nine inline images are possible, but masks are small in practice: four full-size
  // images bound the memory one request may take.
  maxBodyBytes: bodyLimitFor(4),
  billing: { unit: "seconds", field: "duration", default: 5 }
}

// ---------------------------------------------------------------------------------------------
// G7: text-to-video (retrieval shown only)
// ---------------------------------------------------------------------------------------------

/** G7: text-to-video. The create body is Genway's decision (SPEC.md shows only the retrieval). */
export const clipV25TurboTextToVideo: ModelEntry.ModelEntry = {
  id: "vendor-c/clip-v2.5-turbo/text-to-video",
  vendor: "vendor-c",
  kind: "task",
  model: "clip-v2.5-turbo",
  endpoints: ["G7"],
  summary: "Text-to-video task",
  path: "/vendors/vendor-c/v1/clip-v2.5-turbo/text-to-video/generation",
  request: F.described(Schema.Struct({
    prompt: F.requiredText(2500),
    negative_prompt: Schema.optional(F.text(2500)),
    mode: Schema.optional(F.oneOf("std", "pro")),
    aspect_ratio: Schema.optional(F.oneOf("16:9", "9:16", "1:1")),
    duration: Schema.optional(F.intOneOf(5, 10))
  }), Docs.clipT2v, Docs.clipT2vExample),
  rules: [],
  images: [],
  result: "videos",
  upstream: { protocol: "jwt-task", operation: "text2video", model: "clip-v2.5-turbo" },
  poll: videoPoll,
  retention: null,
  mirror: true,
  stage: "ga",
  createIncludesStatus: false,
  maxBodyBytes: SMALL_BODY,
  billing: { unit: "seconds", field: "duration", default: 5 }
}

/** Every vendor-c entry, in SPEC.md order. */
export const vendorC: ReadonlyArray<ModelEntry.ModelEntry> = [clipV26ImageToVideo, clipV25TurboTextToVideo]

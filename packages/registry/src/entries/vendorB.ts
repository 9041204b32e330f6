/**
 * vendor-b models (SPEC.md §4.4–4.7, G4–G6). Protocol "async-task": the adapter nests the body
 * into `input`/`parameters` as each entry's `upstream` mapping says. The lists name gateway fields;
 * `rename` gives the vendor's name where it differs.
 */
import { Errors, type ModelEntry } from "@genway/core"
import * as Schema from "effect/Schema"
import * as F from "../Fields.js"
import * as Docs from "./docs.js"
import { bodyLimitFor, frameImage, given, imagePoll, missing, SMALL_BODY, TEN_MB, videoPoll } from "./shared.js"

// ---------------------------------------------------------------------------------------------
// E3: video editing (SPEC.md §4.4)
// ---------------------------------------------------------------------------------------------

const vaceFunctions = ["image_reference", "video_repainting", "video_edit", "video_extension", "video_outpainting"] as const

/**
 * One flat body for every function; which fields a function takes is checked by the rules below,
 * so a misplaced field is reported by name instead of as "no union member matched".
 */
const vaceRequest = F.described(Schema.Struct({
  // The path names the model; a body that repeats it (as SPEC.md's example does) is accepted.
  model: Schema.optional(F.oneOf("vid2.1-vace-plus")),
  function: F.oneOf(...vaceFunctions),
  prompt: Schema.optional(F.text(800)),
  negative_prompt: Schema.optional(F.text(500)),
  seed: Schema.optional(F.seed),
  prompt_extend: Schema.optional(F.bool),
  // image_reference
  ref_images_url: Schema.optional(F.arrayOf(F.image, 1, 3)),
  obj_or_bg: Schema.optional(F.arrayOf(F.oneOf("obj", "bg"), 1, 3)),
  size: Schema.optional(F.oneOf("1280*720", "720*1280", "960*960", "832*1088", "1088*832")),
  duration: F.optionalNullable(F.intOneOf(5)),
  // video_repainting, video_edit, video_outpainting
  video_url: Schema.optional(F.url),
  control_condition: Schema.optional(F.oneOf("posebodyface", "posebody", "depth", "scribble")),
  strength: Schema.optional(F.numberBetween(0, 1)),
  mask_image_url: Schema.optional(F.url),
  mask_video_url: Schema.optional(F.url),
  mask_type: Schema.optional(F.oneOf("tracking", "fixed")),
  // video_extension
  first_frame_url: Schema.optional(F.url),
  last_frame_url: Schema.optional(F.url),
  first_clip_url: Schema.optional(F.url),
  last_clip_url: Schema.optional(F.url),
  // video_outpainting
  top_scale: Schema.optional(F.numberBetween(1, 2)),
  bottom_scale: Schema.optional(F.numberBetween(1, 2)),
  left_scale: Schema.optional(F.numberBetween(1, 2)),
  right_scale: Schema.optional(F.numberBetween(1, 2))
}), Docs.vace, Docs.vaceExample)
type VaceBody = typeof vaceRequest.Type
type VaceFunction = VaceBody["function"]

/**
 * Fields every function takes. `prompt_extend` is listed only under image_reference in SPEC.md,
 * but it rewrites the prompt, which every function has: Genway accepts it everywhere.
 */
const vaceCommonFields: ReadonlyArray<keyof VaceBody> = ["model", "function", "prompt", "negative_prompt", "seed", "prompt_extend"]

/** Fields of each function (SPEC.md §4.4 tables); any other field is rejected by name. */
const vaceFunctionFields: Record<VaceFunction, ReadonlyArray<keyof VaceBody>> = {
  image_reference: ["ref_images_url", "obj_or_bg", "size", "duration"],
  video_repainting: ["video_url", "control_condition", "strength"],
  video_edit: ["video_url", "mask_image_url", "mask_video_url", "mask_type"],
  video_extension: ["first_frame_url", "last_frame_url", "first_clip_url", "last_clip_url", "control_condition", "duration"],
  video_outpainting: ["video_url", "top_scale", "bottom_scale", "left_scale", "right_scale"]
}

const vaceForeignFields: ModelEntry.Rule<VaceBody> = (body) => {
  const allowed = new Set<string>([...vaceCommonFields, ...vaceFunctionFields[body.function]])
  return Object.entries(body)
    .filter(([field, value]) => given(value) && !allowed.has(field))
    .map(([field]) => Errors.issue(field, `is not accepted by function "${body.function}"`))
}

const vaceRequirements: ModelEntry.Rule<VaceBody> = (body) => {
  const fn = body.function
  const forFn = `for function "${fn}"`
  const out: Array<Errors.Issue> = []
  const need = (field: keyof VaceBody) => {
    const value = body[field]
    if (!given(value) || value === "") out.push(missing(field, forFn))
  }
  switch (fn) {
    case "image_reference": {
      need("prompt")
      need("ref_images_url")
      const images = body.ref_images_url?.length ?? 0
      if (body.obj_or_bg === undefined) {
        if (images > 1) out.push(missing("obj_or_bg", "when ref_images_url has more than one image"))
      } else if (images > 0 && body.obj_or_bg.length !== images) {
        out.push(Errors.issue("obj_or_bg", "must have one label per image of ref_images_url, in order"))
      }
      break
    }
    case "video_repainting":
      need("video_url")
      need("control_condition")
      break
    case "video_edit":
      need("video_url")
      if (body.mask_image_url === undefined && body.mask_video_url === undefined) {
        out.push(missing("mask_image_url", `${forFn} unless mask_video_url is given`))
      } else if (body.mask_image_url !== undefined && body.mask_video_url !== undefined) {
        out.push(Errors.issue("mask_video_url", "cannot be combined with mask_image_url; give one mask"))
      }
      break
    case "video_extension":
      need("prompt")
      for (const clip of ["first_clip_url", "last_clip_url"] as const) {
        if (body[clip] !== undefined && body.control_condition === undefined) {
          out.push(missing("control_condition", `when a guidance video (${clip}) is given`))
          break
        }
      }
      break
    case "video_outpainting":
      need("video_url")
      break
  }
  return out
}

/** E3: video editing (SPEC.md §4.4). The input video limits (MP4, 50 MB, ≥16 fps, ≤5 s) are checked by the vendor: Genway never fetches client URLs. */
export const vid21VacePlus: ModelEntry.ModelEntry<VaceBody> = {
  id: "vendor-b/vid2.1-vace-plus",
  vendor: "vendor-b",
  kind: "task",
  model: "vid2.1-vace-plus",
  endpoints: ["E3"],
  summary: "Video editing task",
  path: "/vendors/vendor-b/v1/vid2.1-vace-plus/generation",
  request: vaceRequest,
  rules: [vaceForeignFields, vaceRequirements],
  images: [{
    field: "ref_images_url[]",
    // Inline images in either form; the adapter sends vendor-b the data URL it wants.
    accept: { url: true, dataUrl: true, rawBase64: true },
    formats: ["jpeg", "png", "bmp", "tiff", "webp"],
    maxBytes: TEN_MB,
    minSide: 360,
    maxSide: 2000
  }],
  result: "videos",
  upstream: {
    protocol: "async-task",
    operation: "video-synthesis",
    model: "vid2.1-vace-plus",
    // negative_prompt is not in UPSTREAMS.md's E3 list; vendor-b takes it in `input` as for E4.
    input: [
      "function", "prompt", "negative_prompt", "ref_images_url", "video_url", "mask_image_url", "mask_video_url",
      "first_frame_url", "last_frame_url", "first_clip_url", "last_clip_url"
    ],
    parameters: [
      "obj_or_bg", "size", "control_condition", "strength", "mask_type",
      "top_scale", "bottom_scale", "left_scale", "right_scale", "duration", "prompt_extend", "seed"
    ]
  },
  poll: videoPoll,
  retention: null,
  mirror: true,
  stage: "ga",
  createIncludesStatus: false,
  maxBodyBytes: bodyLimitFor(3),
  billing: { unit: "seconds", field: "duration", default: 5 }
}

// ---------------------------------------------------------------------------------------------
// E4–E6: text and image to video (SPEC.md §4.5–4.7)
// ---------------------------------------------------------------------------------------------

/** E4: text-to-video (SPEC.md §4.5). */
export const vid25T2vPreview: ModelEntry.ModelEntry = {
  id: "vendor-b/vid2.5-t2v-preview",
  vendor: "vendor-b",
  kind: "task",
  model: "vid2.5-t2v-preview",
  endpoints: ["E4"],
  summary: "Text-to-video task",
  path: "/vendors/vendor-b/v1/vid2.5-t2v-preview/generation",
  request: F.described(Schema.Struct({
    prompt: F.requiredText(2000),
    negative_prompt: Schema.optional(F.text(500)),
    audio: F.optionalNullable(F.bool),
    audio_url: F.optionalNullable(F.url),
    size: Schema.optional(
      F.oneOf(
        "832*480", "480*832", "624*624",
        "1280*720", "720*1280", "960*960", "1088*832", "832*1088",
        "1920*1080", "1080*1920", "1440*1440", "1632*1248", "1248*1632"
      )
    ),
    duration: Schema.optional(F.intOneOf(5, 10)),
    prompt_extend: Schema.optional(F.bool),
    seed: Schema.optional(F.seed)
  }), Docs.t2v, Docs.t2vExample),
  rules: [],
  images: [],
  result: "videos",
  upstream: {
    protocol: "async-task",
    operation: "video-synthesis",
    model: "vid2.5-t2v-preview",
    input: ["prompt", "negative_prompt", "audio_url"],
    parameters: ["size", "duration", "prompt_extend", "seed", "audio"]
  },
  poll: videoPoll,
  retention: null,
  mirror: true,
  stage: "preview",
  createIncludesStatus: false,
  maxBodyBytes: SMALL_BODY,
  billing: { unit: "seconds", field: "duration", default: 5 }
}

/** E5: image-to-video (SPEC.md §4.6). Audio limits (WAV/MP3, 3–30 s, 15 MB) apply to a URL Genway does not fetch: the vendor checks them. */
export const vid25I2vPreview: ModelEntry.ModelEntry = {
  id: "vendor-b/vid2.5-i2v-preview",
  vendor: "vendor-b",
  kind: "task",
  model: "vid2.5-i2v-preview",
  endpoints: ["E5"],
  summary: "Image-to-video task",
  path: "/vendors/vendor-b/v1/vid2.5-i2v-preview/generation",
  request: F.described(Schema.Struct({
    prompt: F.requiredText(2000),
    image: F.image,
    negative_prompt: Schema.optional(F.text(500)),
    audio: F.optionalNullable(F.bool),
    audio_url: F.optionalNullable(F.url),
    resolution: Schema.optional(F.oneOf("480P", "720P", "1080P")),
    duration: Schema.optional(F.intOneOf(5, 10)),
    prompt_extend: Schema.optional(F.bool),
    seed: Schema.optional(F.seed)
  }), Docs.i2v, Docs.i2vExample),
  rules: [],
  images: [frameImage("image")],
  result: "videos",
  upstream: {
    protocol: "async-task",
    operation: "video-synthesis",
    model: "vid2.5-i2v-preview",
    input: ["prompt", "negative_prompt", "image", "audio_url"],
    parameters: ["resolution", "duration", "prompt_extend", "seed", "audio"],
    rename: { image: "img_url" }
  },
  poll: videoPoll,
  retention: null,
  mirror: true,
  stage: "preview",
  createIncludesStatus: false,
  maxBodyBytes: bodyLimitFor(1),
  billing: { unit: "seconds", field: "duration", default: 5 }
}

/** E6: image-to-video at 30 fps (SPEC.md §4.7). */
export const vid22I2vPlus: ModelEntry.ModelEntry = {
  id: "vendor-b/vid2.2-i2v-plus",
  vendor: "vendor-b",
  kind: "task",
  model: "vid2.2-i2v-plus",
  endpoints: ["E6"],
  summary: "Image-to-video task, 30 fps",
  path: "/vendors/vendor-b/v1/vid2.2-i2v-plus/generation",
  request: F.described(Schema.Struct({
    prompt: F.requiredText(800),
    image: F.image,
    last_frame: Schema.optional(F.image),
    negative_prompt: Schema.optional(F.text(500)),
    // SPEC.md lists 480P and 1080P but its own example sends 720P; rejecting a value the spec
    // demonstrates would break clients written from it, so 720P is accepted too.
    resolution: Schema.optional(F.oneOf("480P", "720P", "1080P")),
    duration: Schema.optional(F.intOneOf(5)),
    prompt_extend: Schema.optional(F.bool),
    seed: Schema.optional(F.seed)
  }), Docs.i2vPlus, Docs.i2vPlusExample),
  rules: [],
  images: [frameImage("image"), frameImage("last_frame")],
  result: "videos",
  upstream: {
    protocol: "async-task",
    operation: "video-synthesis",
    model: "vid2.2-i2v-plus",
    input: ["prompt", "negative_prompt", "image", "last_frame"],
    parameters: ["resolution", "duration", "prompt_extend", "seed"],
    rename: { image: "img_url", last_frame: "last_frame_url" }
  },
  poll: videoPoll,
  retention: null,
  mirror: true,
  stage: "ga",
  createIncludesStatus: false,
  maxBodyBytes: bodyLimitFor(2),
  billing: { unit: "seconds", field: "duration", default: 5 }
}

// ---------------------------------------------------------------------------------------------
// G4–G6: tasks SPEC.md shows only the retrieval of; their create bodies are Genway's decision.
// ---------------------------------------------------------------------------------------------

/** Output sizes of vendor-b text-to-image ("W*H", as its video sizes are written). */
const imageSizes = F.oneOf(
  "1280*1280", "1024*1024", "1280*720", "720*1280", "1104*1472", "1472*1104", "960*1696", "1696*960"
)

/** Create body of vendor-b text-to-image (G4, G6). Genway's decision: SPEC.md shows no create body. */
const textToImageRequest = F.described(Schema.Struct({
  prompt: F.requiredText(2000),
  negative_prompt: Schema.optional(F.text(500)),
  size: Schema.optional(imageSizes),
  n: Schema.optional(F.intBetween(1, 4)),
  prompt_extend: Schema.optional(F.bool),
  seed: Schema.optional(F.seed)
}), Docs.t2i, Docs.t2iExample)

/** The vendor's messages-style input is built from `prompt` by the adapter (UPSTREAMS.md, G4). */
const textToImageUpstream = (model: string): ModelEntry.UpstreamMapping => ({
  protocol: "async-task",
  operation: "image-generation",
  model,
  input: ["prompt"],
  parameters: ["size", "n", "negative_prompt", "prompt_extend", "seed"]
})

/** G4: text-to-image. The create body is Genway's decision (SPEC.md shows only the retrieval). */
export const vid26T2i: ModelEntry.ModelEntry = {
  id: "vendor-b/vid2.6-t2i",
  vendor: "vendor-b",
  kind: "task",
  model: "vid2.6-t2i",
  endpoints: ["G4"],
  summary: "Text-to-image task",
  path: "/vendors/vendor-b/v1/vid2.6-t2i/generation",
  request: textToImageRequest,
  rules: [],
  images: [],
  result: "images",
  upstream: textToImageUpstream("vid2.6-t2i"),
  poll: imagePoll,
  retention: null,
  mirror: true,
  stage: "ga",
  createIncludesStatus: false,
  maxBodyBytes: SMALL_BODY,
  billing: { unit: "images", field: "n", default: 1 }
}

/** G5: first and last frame to video. The create body is Genway's decision (SPEC.md shows only the retrieval). */
export const vid21Kf2vPlus: ModelEntry.ModelEntry = {
  id: "vendor-b/vid2.1-kf2v-plus",
  vendor: "vendor-b",
  kind: "task",
  model: "vid2.1-kf2v-plus",
  endpoints: ["G5"],
  summary: "First-and-last-frame to video task",
  path: "/vendors/vendor-b/v1/vid2.1-kf2v-plus/generation",
  request: F.described(Schema.Struct({
    first_frame_url: F.image,
    last_frame_url: F.image,
    prompt: Schema.optional(F.text(800)),
    resolution: Schema.optional(F.oneOf("480P", "720P", "1080P")),
    prompt_extend: Schema.optional(F.bool),
    seed: Schema.optional(F.seed)
  }), Docs.kf2v, Docs.kf2vExample),
  rules: [],
  // Frames as for E5: URL or Base64, vendor-b's frame limits.
  images: [frameImage("first_frame_url"), frameImage("last_frame_url")],
  result: "videos",
  upstream: {
    protocol: "async-task",
    operation: "image2video",
    model: "vid2.1-kf2v-plus",
    input: ["first_frame_url", "last_frame_url", "prompt"],
    parameters: ["resolution", "prompt_extend", "seed"]
  },
  poll: videoPoll,
  retention: null,
  mirror: true,
  stage: "ga",
  createIncludesStatus: false,
  maxBodyBytes: bodyLimitFor(2),
  billing: { unit: "seconds", field: "duration", default: 5 }
}

/** G6: text-to-image (`vid2`, kind segment `image`). The create body is Genway's decision (SPEC.md shows only the retrieval). */
export const vid2Image: ModelEntry.ModelEntry = {
  id: "vendor-b/vid2/image",
  vendor: "vendor-b",
  kind: "task",
  model: "vid2",
  endpoints: ["G6"],
  summary: "Text-to-image task",
  path: "/vendors/vendor-b/v1/vid2/image/generation",
  request: textToImageRequest,
  rules: [],
  images: [],
  result: "images",
  upstream: textToImageUpstream("vid2"),
  poll: imagePoll,
  retention: null,
  mirror: true,
  stage: "ga",
  createIncludesStatus: false,
  maxBodyBytes: SMALL_BODY,
  billing: { unit: "images", field: "n", default: 1 }
}

/** Every vendor-b entry, in SPEC.md order. */
export const vendorB: ReadonlyArray<ModelEntry.ModelEntry> = [
  vid21VacePlus,
  vid25T2vPreview,
  vid25I2vPreview,
  vid22I2vPlus,
  vid26T2i,
  vid21Kf2vPlus,
  vid2Image
]

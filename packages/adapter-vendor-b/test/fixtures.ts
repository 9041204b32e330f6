/** Test entries and tasks for vendor-b (the registry's real entries are not a dependency). */
import { Fixtures } from "@genway/adapter-kit/testing"
import type { Media, ModelEntry, VendorAdapter } from "@genway/core"

const frame = (field: string): Media.ImageRule => ({
  field,
  accept: { url: true, dataUrl: true, rawBase64: true },
  formats: ["jpeg", "png", "bmp", "webp"],
  maxBytes: 10_000_000
})

const base = (model: string, upstream: ModelEntry.UpstreamMapping, extra: Partial<ModelEntry.ModelEntry> = {}): ModelEntry.ModelEntry =>
  Fixtures.taskEntry({ vendor: "vendor-b", model, upstream, stage: "preview", createIncludesStatus: false, ...extra })

/** E4-like text-to-video. */
export const t2v = base("vid2.5-t2v-preview", {
  protocol: "async-task",
  operation: "video-synthesis",
  model: "vid2.5-t2v-preview",
  input: ["prompt", "negative_prompt", "audio_url"],
  parameters: ["size", "duration", "prompt_extend", "seed", "audio"]
})

/** E6-like image-to-video with renames and an inline-image field. */
export const i2v = base("vid2.2-i2v-plus", {
  protocol: "async-task",
  operation: "video-synthesis",
  model: "vid2.2-i2v-plus",
  input: ["prompt", "negative_prompt", "image", "last_frame"],
  parameters: ["resolution", "duration", "prompt_extend", "seed"],
  rename: { image: "img_url", last_frame: "last_frame_url" }
}, { images: [frame("image"), frame("last_frame")] })

/** G5-like first+last frame. */
export const kf2v = base("vid2.1-kf2v-plus", {
  protocol: "async-task",
  operation: "image2video",
  model: "vid2.1-kf2v-plus",
  input: ["first_frame_url", "last_frame_url", "prompt"],
  parameters: ["resolution", "prompt_extend", "seed"]
})

/** G4-like text-to-image. */
export const t2i = base("vid2.6-t2i", {
  protocol: "async-task",
  operation: "image-generation",
  model: "vid2.6-t2i",
  input: ["prompt"],
  parameters: ["size", "n", "negative_prompt", "prompt_extend", "seed"]
}, { result: "images" })

/** A task for `entry` with `body`, a fresh gateway id. */
export const task = (
  entry: ModelEntry.ModelEntry,
  body: Record<string, unknown>,
  upstreamModel = `upstream-${entry.model}`
): VendorAdapter.UpstreamTask => Fixtures.upstreamTask(entry, body, upstreamModel)

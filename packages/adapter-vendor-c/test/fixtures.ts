/** Test entries and tasks for vendor-c (the registry's real entries are not a dependency). */
import { Fixtures } from "@genway/adapter-kit/testing"
import type { ModelEntry, VendorAdapter } from "@genway/core"

const base = (model: string, path: string, upstream: ModelEntry.UpstreamMapping): ModelEntry.ModelEntry =>
  Fixtures.taskEntry({ vendor: "vendor-c", model, upstream, path: `/vendors/vendor-c/v1/${path}/generation` })

/** E8-like image-to-video. */
export const i2v = base("clip-v2.6", "clip-v2.6/image-to-video", {
  protocol: "jwt-task",
  operation: "image2video",
  model: "clip-v2.6",
  input: ["image", "image_tail", "prompt", "negative_prompt", "voice_list", "sound", "mode", "static_mask", "dynamic_masks"],
  parameters: ["duration"]
})

/** G7-like text-to-video. */
export const t2v = base("clip-v2.5-turbo", "clip-v2.5-turbo/text-to-video", {
  protocol: "jwt-task",
  operation: "text2video",
  model: "clip-v2.5-turbo"
})

/** A task for `entry` with `body`, a fresh gateway id. */
export const task = (
  entry: ModelEntry.ModelEntry,
  body: Record<string, unknown>,
  upstreamModel = `upstream-${entry.model}`
): VendorAdapter.UpstreamTask => Fixtures.upstreamTask(entry, body, upstreamModel)

/** Test entries and tasks for vendor-c (the registry's real entries are not a dependency). */
import type { ModelEntry, VendorAdapter } from "@genway/core"
import * as Schema from "effect/Schema"

const base = (model: string, path: string, upstream: ModelEntry.UpstreamMapping): ModelEntry.ModelEntry => ({
  id: `vendor-c/${model}`,
  vendor: "vendor-c",
  kind: "task",
  model,
  endpoints: [],
  summary: "test entry",
  path: `/vendors/vendor-c/v1/${path}/generation`,
  request: Schema.Unknown,
  rules: [],
  images: [],
  result: "videos",
  upstream,
  poll: { initial: "1 second", every: ["1 second", "2 seconds"], deadline: "10 minutes" },
  retention: null,
  mirror: true,
  stage: "ga",
  createIncludesStatus: true,
  maxBodyBytes: 1_000_000
})

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

let counter = 0

/** A task for `entry` with `body`, a fresh gateway id. */
export const task = (
  entry: ModelEntry.ModelEntry,
  body: Record<string, unknown>,
  upstreamModel = `upstream-${entry.model}`
): VendorAdapter.UpstreamTask => ({
  taskId: `00000000-0000-4000-8000-${String(++counter).padStart(12, "0")}`,
  entry,
  body,
  upstreamModel,
  hints: {}
})

/** Test entries and tasks for vendor-e (the registry's real entries are not a dependency). */
import type { ModelEntry, VendorAdapter } from "@genway/core"
import * as Schema from "effect/Schema"

const base = (model: string, result: "videos" | "images", upstream: Partial<ModelEntry.UpstreamMapping> = {}): ModelEntry.ModelEntry => ({
  id: `vendor-e/${model}`,
  vendor: "vendor-e",
  kind: "task",
  model,
  endpoints: [],
  summary: "test entry",
  path: `/vendors/vendor-e/v1/${model}/generation`,
  request: Schema.Unknown,
  rules: [],
  images: [],
  result,
  upstream: { protocol: "task-info", operation: "generation", model, ...upstream },
  poll: { initial: "1 second", every: ["1 second", "2 seconds"], deadline: "10 minutes" },
  retention: null,
  mirror: true,
  stage: "ga",
  createIncludesStatus: true,
  maxBodyBytes: 1_000_000
})

/** G3-like text-to-video. */
export const spark = base("vid2.5-t2v-spark", "videos")

/** An image model of the same protocol. */
export const sparkImage = base("img-spark", "images")

let counter = 0

/** A task for `entry` with `body`, a fresh gateway id; the upstream model defaults to the entry's. */
export const task = (
  entry: ModelEntry.ModelEntry,
  body: Record<string, unknown>,
  upstreamModel = entry.model
): VendorAdapter.UpstreamTask => ({
  taskId: `00000000-0000-4000-8000-${String(++counter).padStart(12, "0")}`,
  entry,
  body,
  upstreamModel,
  hints: {}
})

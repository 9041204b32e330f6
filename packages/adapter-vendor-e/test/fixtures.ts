/** Test entries and tasks for vendor-e (the registry's real entries are not a dependency). */
import { Fixtures } from "@genway/adapter-kit/testing"
import type { ModelEntry, VendorAdapter } from "@genway/core"

const base = (model: string, result: "videos" | "images", upstream: Partial<ModelEntry.UpstreamMapping> = {}): ModelEntry.ModelEntry =>
  Fixtures.taskEntry({ vendor: "vendor-e", model, result, upstream: { protocol: "task-info", operation: "generation", model, path: `/vendors/vendor-e/v1/{model}/generation`, ...upstream } })

/** G3-like text-to-video. */
export const spark = base("vid2.5-t2v-spark", "videos")

/** An image model of the same protocol. */
export const sparkImage = base("img-spark", "images")

/** A task for `entry` with `body`, a fresh gateway id; the upstream model defaults to the entry's. */
export const task = (
  entry: ModelEntry.ModelEntry,
  body: Record<string, unknown>,
  upstreamModel = entry.model
): VendorAdapter.UpstreamTask => Fixtures.upstreamTask(entry, body, upstreamModel)

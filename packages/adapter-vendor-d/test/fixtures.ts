import { Fixtures } from "@genway/adapter-kit/testing"
import type { ModelEntry, VendorAdapter } from "@genway/core"

/** Upstream field lists an entry may carry. */
type Lists = Pick<ModelEntry.UpstreamMapping, "input" | "parameters" | "rename">

/** The field lists of the registry's long-running entries (the vendor's places and names). */
const filmLists: Lists = {
  input: ["prompt", "image", "last_frame"],
  parameters: ["aspect_ratio", "duration", "resolution", "negative_prompt"],
  rename: { last_frame: "lastFrame", aspect_ratio: "aspectRatio", duration: "durationSeconds", negative_prompt: "negativePrompt" }
}

/** A minimal task entry speaking `protocol`, with the long-running field lists (or those given). */
export const entry = (protocol: string, lists: Lists = {}): ModelEntry.ModelEntry =>
  Fixtures.taskEntry({
    vendor: "vendor-d",
    model: "test-film",
    endpoints: ["G1"],
    summary: "test",
    upstream: { protocol, operation: "predictLongRunning", model: "upstream-film-fast", ...filmLists, ...lists },
    poll: { initial: "5 seconds", every: ["5 seconds", "10 seconds"], deadline: "20 minutes" },
    retention: "2 days",
    maxBodyBytes: 30_000_000
  })

/** A task for `body`. */
export const task = (body: Record<string, unknown>, protocol = "long-running", lists: Lists = {}): VendorAdapter.UpstreamTask =>
  Fixtures.upstreamTask(entry(protocol, lists), body, "upstream-film-fast", "00000000-0000-4000-8000-000000000002")

/** The task once submitted as `ref`. */
export const submitted = Fixtures.submitted

/** Milliseconds of an optional duration. */
export const millis = Fixtures.millis

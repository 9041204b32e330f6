import { Fixtures } from "@genway/adapter-kit/testing"
import type { ModelEntry, VendorAdapter } from "@genway/core"

/** Upstream field lists an entry may carry. */
type Lists = Pick<ModelEntry.UpstreamMapping, "input" | "parameters" | "rename">

/** A minimal task entry speaking `protocol`, with optional upstream field lists. */
export const entry = (protocol: string, lists: Lists = {}): ModelEntry.ModelEntry =>
  Fixtures.taskEntry({
    vendor: "vendor-d",
    model: "test-film",
    endpoints: ["G1"],
    summary: "test",
    upstream: { protocol, operation: "predictLongRunning", model: "upstream-film-fast", ...lists },
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

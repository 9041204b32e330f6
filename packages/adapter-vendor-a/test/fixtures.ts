import { Fixtures } from "@genway/adapter-kit/testing"
import type { ModelEntry, VendorAdapter } from "@genway/core"

/** A minimal task entry speaking `protocol`. */
export const entry = (protocol: string): ModelEntry.ModelEntry =>
  Fixtures.taskEntry({
    vendor: "vendor-a",
    model: "test-model",
    endpoints: ["E7"],
    summary: "test",
    upstream: { protocol, operation: "video-generation", model: "upstream-video-model" },
    stage: "beta"
  })

/** A task for `body`. */
export const task = (body: Record<string, unknown>, protocol = "videos"): VendorAdapter.UpstreamTask =>
  Fixtures.upstreamTask(entry(protocol), body, "upstream-video-model", "00000000-0000-4000-8000-000000000001")

/** The task once submitted as `ref`. */
export const submitted = Fixtures.submitted

/** Milliseconds of an optional duration. */
export const millis = Fixtures.millis

import type { ModelEntry, VendorAdapter } from "@genway/core"
import * as Duration from "effect/Duration"
import * as Schema from "effect/Schema"

/** A minimal task entry speaking `protocol`. */
export const entry = (protocol: string): ModelEntry.ModelEntry => ({
  id: "vendor-a/test-model",
  vendor: "vendor-a",
  kind: "task",
  model: "test-model",
  endpoints: ["E7"],
  summary: "test",
  path: "/vendors/vendor-a/v1/test-model/generation",
  request: Schema.Unknown,
  rules: [],
  images: [],
  result: "videos",
  upstream: { protocol, operation: "video-generation", model: "upstream-video-model" },
  poll: { initial: "1 second", every: ["1 second", "2 seconds"], deadline: "10 minutes" },
  retention: null,
  mirror: true,
  stage: "beta",
  createIncludesStatus: true,
  maxBodyBytes: 1_000_000
})

/** A task for `body`. */
export const task = (body: Record<string, unknown>, protocol = "videos"): VendorAdapter.UpstreamTask => ({
  taskId: "00000000-0000-4000-8000-000000000001",
  entry: entry(protocol),
  body,
  upstreamModel: "upstream-video-model",
  hints: {}
})

/** The task once submitted as `ref`. */
export const submitted = (t: VendorAdapter.UpstreamTask, ref: string) => ({ ...t, upstreamRef: ref })

/** Milliseconds of an optional duration. */
export const millis = (d: Duration.DurationInput | undefined): number | undefined =>
  d === undefined ? undefined : Duration.toMillis(Duration.decode(d))

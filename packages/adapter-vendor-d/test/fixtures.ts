import type { ModelEntry, VendorAdapter } from "@genway/core"
import * as Duration from "effect/Duration"
import * as Schema from "effect/Schema"

/** A minimal task entry speaking `protocol`, with optional upstream field lists. */
export const entry = (
  protocol: string,
  lists: Pick<ModelEntry.UpstreamMapping, "input" | "parameters" | "rename"> = {}
): ModelEntry.ModelEntry => ({
  id: "vendor-d/test-film",
  vendor: "vendor-d",
  kind: "task",
  model: "test-film",
  endpoints: ["G1"],
  summary: "test",
  path: "/vendors/vendor-d/v1/test-film/generation",
  request: Schema.Unknown,
  rules: [],
  images: [],
  result: "videos",
  upstream: { protocol, operation: "predictLongRunning", model: "upstream-film-fast", ...lists },
  poll: { initial: "5 seconds", every: ["5 seconds", "10 seconds"], deadline: "20 minutes" },
  retention: "2 days",
  mirror: true,
  stage: "ga",
  createIncludesStatus: true,
  maxBodyBytes: 30_000_000
})

/** A task for `body`. */
export const task = (
  body: Record<string, unknown>,
  protocol = "long-running",
  lists: Pick<ModelEntry.UpstreamMapping, "input" | "parameters" | "rename"> = {}
): VendorAdapter.UpstreamTask => ({
  taskId: "00000000-0000-4000-8000-000000000002",
  entry: entry(protocol, lists),
  body,
  upstreamModel: "upstream-film-fast",
  hints: {}
})

/** The task once submitted as `ref`. */
export const submitted = (t: VendorAdapter.UpstreamTask, ref: string) => ({ ...t, upstreamRef: ref })

/** Milliseconds of an optional duration. */
export const millis = (d: Duration.DurationInput | undefined): number | undefined =>
  d === undefined ? undefined : Duration.toMillis(Duration.decode(d))

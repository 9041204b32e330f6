/**
 * Test entries and tasks for adapter tests: the registry's real entries are not a dependency of
 * the adapters, so each test builds the few entries it needs from these neutral defaults.
 */
import type { ModelEntry, VendorAdapter } from "@genway/core"
import * as Duration from "effect/Duration"
import * as Schema from "effect/Schema"

/** The fields an entry of a test must name; everything else has a neutral default. */
export type EntryFields = Pick<ModelEntry.ModelEntry, "vendor" | "model" | "upstream"> & Partial<ModelEntry.ModelEntry>

/** A task entry of `vendor` for `model`: path `/vendors/<vendor>/v1/<model>/generation`, video results, no rules. */
export const taskEntry = (fields: EntryFields): ModelEntry.ModelEntry => ({
  id: `${fields.vendor}/${fields.model}`,
  kind: "task",
  endpoints: [],
  summary: "test entry",
  path: `/vendors/${fields.vendor}/v1/${fields.model}/generation`,
  request: Schema.Unknown,
  rules: [],
  images: [],
  result: "videos",
  poll: { initial: "1 second", every: ["1 second", "2 seconds"], deadline: "10 minutes" },
  retention: null,
  mirror: true,
  stage: "ga",
  createIncludesStatus: true,
  maxBodyBytes: 1_000_000,
  ...fields
})

let counter = 0

/** A gateway task id of the shape the gateway makes (a UUID), fresh on each call. */
export const nextTaskId = (): string => `00000000-0000-4000-8000-${String(++counter).padStart(12, "0")}`

/** A task for `entry` with `body`, as the scheduler hands it to an adapter. */
export const upstreamTask = (
  entry: ModelEntry.ModelEntry,
  body: Record<string, unknown>,
  upstreamModel: string,
  taskId: string = nextTaskId()
): VendorAdapter.UpstreamTask => ({ taskId, entry, body, upstreamModel, hints: {} })

/** The task once the vendor accepted it as `ref`. */
export const submitted = (task: VendorAdapter.UpstreamTask, ref: string) => ({ ...task, upstreamRef: ref })

/** Milliseconds of an optional duration (a retry or poll hint), for assertions. */
export const millis = (d: Duration.DurationInput | undefined): number | undefined =>
  d === undefined ? undefined : Duration.toMillis(Duration.decode(d))

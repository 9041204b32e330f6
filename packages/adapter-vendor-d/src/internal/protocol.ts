/**
 * What one vendor-d task protocol implements; `Adapter.make` routes each task to the protocol its
 * entry names (`entry.upstream.protocol`). Downloads are shared by every protocol.
 */
import type { VendorAdapter } from "@genway/core"
import type * as Effect from "effect/Effect"

/** One task protocol of vendor-d. */
export interface TaskProtocol {
  readonly submit: (task: VendorAdapter.UpstreamTask) => Effect.Effect<VendorAdapter.Submitted, VendorAdapter.AdapterError>
  readonly poll: (
    task: VendorAdapter.UpstreamTask & { readonly upstreamRef: string }
  ) => Effect.Effect<VendorAdapter.PollOutcome, VendorAdapter.AdapterError>
}

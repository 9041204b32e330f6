/**
 * Adapters that speak several task protocols (`entry.upstream.protocol`) implement each one
 * separately and route every task to the protocol its entry names.
 */
import type { VendorAdapter } from "@genway/core"
import * as Effect from "effect/Effect"
import * as Outcome from "./Outcome.js"

/** One task protocol of a vendor. */
export interface TaskProtocol {
  readonly submit: (task: VendorAdapter.UpstreamTask) => Effect.Effect<VendorAdapter.Submitted, VendorAdapter.AdapterError>
  readonly poll: (
    task: VendorAdapter.UpstreamTask & { readonly upstreamRef: string }
  ) => Effect.Effect<VendorAdapter.PollOutcome, VendorAdapter.AdapterError>
}

/** How `route` reports. */
export interface RouteOptions {
  /** Builds the refusal of a task whose protocol is not served; default `Outcome.rejected`. */
  readonly rejected?: (code: 3001, detail: string) => VendorAdapter.Rejected
}

/**
 * `submit` and `poll` that hand each task to the protocol its entry names, with the vendor, task
 * and protocol on every log line. A protocol the vendor does not serve is logged and fails the
 * task (3001): the registry and the adapter disagree, which no retry fixes.
 */
export const route = (
  vendor: string,
  protocols: Readonly<Record<string, TaskProtocol>>,
  options: RouteOptions = {}
): TaskProtocol => {
  const rejected = options.rejected ?? Outcome.rejected
  const to = <A>(
    task: VendorAdapter.UpstreamTask,
    use: (protocol: TaskProtocol) => Effect.Effect<A, VendorAdapter.AdapterError>
  ): Effect.Effect<A, VendorAdapter.AdapterError> => {
    const name = task.entry.upstream.protocol
    const effect = Object.hasOwn(protocols, name)
      ? use(protocols[name]!)
      : Effect.logError(`${vendor}: the entry names a protocol this adapter does not serve as a task`).pipe(
        Effect.zipRight(Effect.fail(rejected(3001, `${vendor} does not serve protocol "${name}" as a task`)))
      )
    return effect.pipe(Effect.annotateLogs({ vendor, taskId: task.taskId, protocol: name }))
  }
  return {
    submit: (task) => to(task, (p) => p.submit(task)),
    poll: (task) => to(task, (p) => p.poll(task))
  }
}

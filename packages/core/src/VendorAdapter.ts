/**
 * The contract between the gateway's task scheduler and a vendor. One implementation per vendor
 * protocol (the adapter packages) plus the gateway's sandbox. Adapters keep every vendor fact;
 * the scheduler only sees these outcomes.
 */
import * as Data from "effect/Data"
import type * as Duration from "effect/Duration"
import type * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import type { ModelEntry, VendorId } from "./ModelEntry.js"
import type { TaskError } from "./TaskInfo.js"

/** What an adapter is given to act on one task. */
export interface UpstreamTask {
  readonly taskId: string
  readonly entry: ModelEntry
  /** The validated request body, with any spooled payloads restored. */
  readonly body: Readonly<Record<string, unknown>>
  /** The upstream model id in force for this entry (configuration may override the entry's). */
  readonly upstreamModel: string
  /** Set once the vendor accepted the task. */
  readonly upstreamRef?: string
  /** Per-task hints kept with the task (for example the sandbox outcome header). */
  readonly hints: Readonly<Record<string, string>>
  /** Submission time in epoch milliseconds, once known. */
  readonly submittedAt?: number
}

/** The vendor accepted a task. */
export interface Submitted {
  /** Everything needed to poll later (an id, or an id with its kind). Stored with the task. */
  readonly ref: string
  readonly status: "pending" | "processing"
  readonly pollAfter?: Duration.DurationInput
}

/** Where a result's bytes come from. */
export type MediaSource =
  | { readonly _tag: "Url"; readonly url: string; readonly contentType?: string }
  | { readonly _tag: "Bytes"; readonly bytes: Uint8Array; readonly contentType: string }

/** The latest state of a task at the vendor. */
export type PollOutcome =
  | {
    readonly _tag: "Running"
    readonly status: "pending" | "processing"
    readonly pollAfter?: Duration.DurationInput
    /** The vendor's own progress figure (0-100), where its protocol reports one. */
    readonly progress?: number
  }
  | {
    readonly _tag: "Completed"
    readonly media: ReadonlyArray<MediaSource>
    /**
     * The length of the result in seconds as the vendor reports it, where its protocol reports
     * one (summed over the results). Usage is settled on it instead of the request's duration.
     */
    readonly reportedSeconds?: number
  }
  | { readonly _tag: "Failed"; readonly error: TaskError }

/** A transient failure (429, 5xx, timeout, reset) where the vendor provably did not act: try again later. */
export class Retryable extends Data.TaggedError("Retryable")<{
  readonly reason: string
  readonly retryAfter?: Duration.DurationInput
}> {}

/** The vendor refused the task for good; the task fails with this error. */
export class Rejected extends Data.TaggedError("Rejected")<{
  readonly error: TaskError
}> {}

/** A submit whose outcome is unknown (connection lost after sending). Never blindly resubmitted. */
export class OutcomeUnknown extends Data.TaggedError("OutcomeUnknown")<{
  readonly reason: string
}> {}

/** Every adapter failure the scheduler handles. */
export type AdapterError = Retryable | Rejected | OutcomeUnknown

/** Downloaded result media. */
export interface MediaDownload {
  readonly contentType: string
  readonly body: Stream.Stream<Uint8Array, AdapterError>
  /**
   * The same bytes as `body`, whole, when the adapter holds them in memory already (a result the
   * vendor sent inline): the gateway then stores them in one write instead of streaming `body`.
   */
  readonly bytes?: Uint8Array
}

/** The download of a result the vendor sent inline: its bytes, whole and as a one-chunk stream. */
export const inlineDownload = (source: Extract<MediaSource, { readonly _tag: "Bytes" }>): MediaDownload => ({
  contentType: source.contentType,
  body: Stream.succeed(source.bytes),
  bytes: source.bytes
})

/** What a vendor said to a cancel: stopped, or past the point where it can be stopped. */
export interface CancelOutcome {
  readonly canceled: boolean
  /** Why not, in the vendor's terms (e.g. "the task is already running"). */
  readonly reason?: string
}

/** One vendor as the scheduler sees it. */
export interface VendorAdapter {
  readonly vendor: VendorId
  /** `sandbox` adapters simulate the vendor; they are announced as such everywhere. */
  readonly mode: "live" | "sandbox"
  /** Sends a new task. Must not be called twice for one task unless `reconcile` said it is unknown. */
  readonly submit: (task: UpstreamTask) => Effect.Effect<Submitted, AdapterError>
  /**
   * After a submit whose outcome was lost, looks the task up by a client-chosen id. `undefined`
   * means the vendor never saw it (safe to submit). Adapters without such an id omit this and the
   * scheduler fails the task rather than risk a second job.
   */
  readonly reconcile?: (task: UpstreamTask) => Effect.Effect<Submitted | undefined, AdapterError>
  /** Reads the task's state at the vendor. */
  readonly poll: (task: UpstreamTask & { readonly upstreamRef: string }) => Effect.Effect<PollOutcome, AdapterError>
  /** Fetches a result's bytes (with the vendor's credentials where needed). */
  readonly download: (source: MediaSource) => Effect.Effect<MediaDownload, AdapterError>
  /**
   * Asks the vendor to stop a submitted task, where its protocol has a cancel. Adapters without
   * one omit this: the gateway then only stops polling (the vendor may still finish and bill).
   */
  readonly cancel?: (task: UpstreamTask & { readonly upstreamRef: string }) => Effect.Effect<CancelOutcome, AdapterError>
}


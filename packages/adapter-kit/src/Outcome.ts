/**
 * The outcomes an adapter reports to the scheduler, built the same way by every adapter: task
 * errors of the two task error codes, refusals, retries with their hint, and the rule for a task
 * state the vendor never documented (log it, keep the task running).
 */
import { Errors, TaskInfo, VendorAdapter } from "@genway/core"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"

/** Titles of the task error codes (DESIGN.md §2: 400 invalid-request family, 3001 execution error). */
export const titles = { 400: Errors.titles[400], 3001: Errors.titles[3001] } as const

/** A task error of one of the two task error codes; `title` defaults to the code's. */
export const taskError = (code: 400 | 3001, detail: string, title?: string): TaskInfo.TaskError =>
  new TaskInfo.TaskError({ code, title: title ?? titles[code], detail })

/** The vendor refused the task for good. */
export const rejected = (code: 400 | 3001, detail: string, title?: string): VendorAdapter.Rejected =>
  new VendorAdapter.Rejected({ error: taskError(code, detail, title) })

/** Try again later, after `retryAfter` when the vendor said how long. */
export const retryable = (reason: string, retryAfter?: Duration.DurationInput): VendorAdapter.Retryable =>
  new VendorAdapter.Retryable({ reason, ...(retryAfter !== undefined ? { retryAfter } : {}) })

/**
 * A task state the vendor does not document: logged as a warning and treated as still
 * processing, so a vendor's new state never fails a task that may yet succeed.
 */
export const unknownState = (
  vendor: string,
  taskId: string,
  state: string
): Effect.Effect<VendorAdapter.PollOutcome> =>
  Effect.as(
    Effect.logWarning(`${vendor} reported an unknown task state; keeping the task running`).pipe(
      Effect.annotateLogs({ vendor, taskId, state })
    ),
    { _tag: "Running", status: "processing" } as const
  )

const secondsOf = (value: unknown): number | undefined => {
  const n = typeof value === "string" && value.trim() !== "" ? Number(value) : value
  return typeof n === "number" && Number.isFinite(n) && n > 0 ? n : undefined
}

/**
 * The length in seconds a vendor reports for its results (numbers or numeric strings such as `"5"`
 * or `5.04`), summed. `undefined` when there are none or any is missing or unreadable: usage is
 * then settled on the request's duration rather than on a partial figure.
 */
export const reportedSeconds = (values: ReadonlyArray<unknown>): number | undefined => {
  if (values.length === 0) return undefined
  let total = 0
  for (const value of values) {
    const seconds = secondsOf(value)
    if (seconds === undefined) return undefined
    total += seconds
  }
  return total
}

/** A completed task: its result media, and the seconds the vendor reported for them when it did. */
export const completed = (
  media: ReadonlyArray<VendorAdapter.MediaSource>,
  reported?: number
): VendorAdapter.PollOutcome => ({ _tag: "Completed", media, ...(reported !== undefined ? { reportedSeconds: reported } : {}) })

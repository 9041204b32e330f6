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

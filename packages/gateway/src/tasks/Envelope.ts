/**
 * A task as clients see it outside its retrieve route (DESIGN.md §8): the retrieve envelope
 * (`task_info`, plus `videos`/`images` once completed, signed when built) with the entry id,
 * the absolute retrieve URL and, while the task runs, its progress.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { ModelEntry } from "@genway/core"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import { Settings } from "../platform/Config.js"
import { MediaStore } from "../platform/MediaStore.js"
import { taskInfo } from "./Http.js"
import * as VendorProgress from "./Progress.js"
import type { ResultItem, Task } from "./Store.js"

/** `progress` of a running task. */
export interface Progress {
  readonly percent?: number
  readonly eta_seconds?: number
  readonly source: "vendor" | "estimate"
}

/** The absolute retrieve URL of a task. */
export const taskUrl = (publicUrl: string, entry: ModelEntry.ModelEntry, taskId: string) => `${publicUrl}${entry.path}/${taskId}`

/** Signs a stored result: vendor URLs as they are, stored media by signed URL. */
export const signResult = (result: ReadonlyArray<ResultItem>) =>
  Effect.flatMap(MediaStore, (media) =>
    Effect.forEach(result, (item) => ("url" in item ? Effect.succeed(item.url) : media.signUrl(item.media))))

/** How many recent completions an estimate is made from, and the least it needs. */
const estimateWindow = 20
const estimateMinimum = 3

/**
 * An estimate from this model's recent completed durations (creation to finish), once at least
 * three exist; `undefined` otherwise. Finished tasks have no progress.
 */
export const estimate = (task: Task) =>
  Effect.gen(function*() {
    if (task.status !== "pending" && task.status !== "processing") return undefined
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql`SELECT finished_at - created_at AS d FROM tasks
      WHERE entry_id = ${task.entryId} AND status = 'completed' AND finished_at IS NOT NULL
      ORDER BY finished_at DESC LIMIT ${estimateWindow}`
    if (rows.length < estimateMinimum) return undefined
    const durations = rows.map((r) => Number(r.d)).sort((a, b) => a - b)
    const typical = durations[Math.floor(durations.length / 2)]!
    const now = yield* Clock.currentTimeMillis
    const elapsed = Math.max(0, now - task.createdAt)
    // Past the typical duration the estimate stays just short of done rather than claiming 100.
    const percent = Math.min(99, Math.floor((100 * elapsed) / Math.max(1, typical)))
    return {
      percent,
      eta_seconds: Math.max(0, Math.ceil((typical - elapsed) / 1000)),
      source: "estimate"
    } satisfies Progress as Progress
  }).pipe(Effect.orElseSucceed(() => undefined))

/** The envelope with `model`, `url` and (when running and known) `progress`. */
export const envelope = (task: Task, entry: ModelEntry.ModelEntry, withProgress = true) =>
  Effect.gen(function*() {
    const settings = yield* Settings
    const body: Record<string, unknown> = {
      model: entry.id,
      url: taskUrl(settings.publicUrl, entry, task.id),
      task_info: taskInfo(task)
    }
    if (task.status === "completed" && task.result !== null && entry.result !== undefined) {
      body[entry.result] = yield* signResult(task.result)
    }
    if (withProgress && (task.status === "pending" || task.status === "processing")) {
      const vendor = yield* VendorProgress.latest(task.id).pipe(Effect.orElseSucceed(() => undefined))
      const progress: Progress | undefined = vendor !== undefined ? { percent: vendor.percent, source: "vendor" } : yield* estimate(task)
      if (progress !== undefined) body.progress = progress
    }
    return body
  })

/**
 * Task telemetry: the `genway_tasks{model,status}` and `genway_tasks_due` gauges (read at scrape
 * time from `task_counts`, which triggers keep in step with every insert, transition and delete,
 * and from the due-task index: never a scan of `tasks`), and for every state change one info log
 * line and, on terminal states, `genway_task_duration_seconds`.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import type { Task } from "../tasks/Store.js"
import * as Logging from "./Logging.js"
import * as Metrics from "./Metrics.js"

const num = (v: unknown) => (typeof v === "number" ? v : Number(v))

const taskGauges = Metrics.cached(Metrics.tasksKey, ["model", "status"])
const durations = Metrics.cached(Metrics.taskDurationKey, ["model", "outcome"])

/** Sets the task gauges from the database. */
export const refresh = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const now = yield* Clock.currentTimeMillis
  // A count is the sum of its shards (PostgreSQL spreads each over several rows; SQLite has one).
  const counts = yield* sql`SELECT entry_id, status, SUM(n) AS n FROM task_counts GROUP BY entry_id, status`
  for (const row of counts) taskGauges([String(row.entry_id), String(row.status)]).unsafeUpdate(num(row.n), [])
  // Due and unleased, or leased by a worker whose lease ran out: each through its own index.
  const due = yield* sql`SELECT
    (SELECT COUNT(*) FROM tasks WHERE status IN ('pending', 'processing') AND lease_owner IS NULL AND next_run_at <= ${now})
    + (SELECT COUNT(*) FROM tasks WHERE lease_owner IS NOT NULL AND lease_until < ${now}) AS n`
  Metrics.tasksDue.unsafeUpdate(num(due[0]?.n ?? 0), [])
})

const terminal = new Set(["completed", "failed", "cancelled", "canceled", "expired"])

/** Logs a task's creation. */
export const created = (task: Task) =>
  Effect.logInfo(
    `task ${task.id} ${task.entryId}: created (${task.status})`,
    Logging.fields({ task_id: task.id, model: task.entryId, from: null, to: task.status })
  )

/**
 * Logs a task's state change (with the vendor's reason when it failed) and records its duration
 * when it ended. The reason is the task error's code, title and detail, never the request.
 */
export const transition = (before: Task, after: Task, now: number) => {
  const failed = after.status === "failed" && after.error !== null
  const reason = failed ? `${after.error!.code} ${after.error!.title}: ${after.error!.detail}` : undefined
  if (terminal.has(after.status)) {
    durations([after.entryId, after.status]).unsafeUpdate(Math.max(0, now - after.createdAt) / 1000, [])
  }
  return Effect.logInfo(
    `task ${after.id} ${after.entryId}: ${before.status} → ${after.status}${reason !== undefined ? ` (${reason})` : ""}`,
    Logging.fields({ task_id: after.id, model: after.entryId, from: before.status, to: after.status, reason })
  )
}

/** Records how late a claimed task was taken up. */
export const claimed = (tasks: ReadonlyArray<Task>, now: number) => {
  for (const t of tasks) Metrics.pollLag.unsafeUpdate(Math.max(0, now - t.nextRunAt) / 1000, [])
}

/**
 * The vendor's own progress figure of a running task, kept beside the task (one row per task,
 * replaced on every poll that reports one). Read by the event stream, listings and webhooks.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"

/** Records `percent` (0-100) as the task's latest vendor progress. */
export const record = (taskId: string, percent: number, at: number) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) => {
    const value = Math.max(0, Math.min(100, Math.round(percent)))
    return sql`INSERT INTO task_progress (task_id, percent, at) VALUES (${taskId}, ${value}, ${at})
      ON CONFLICT (task_id) DO UPDATE SET percent = ${value}, at = ${at}`
  })

/** The task's latest vendor progress, if any. */
export const latest = (taskId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) => sql`SELECT percent, at FROM task_progress WHERE task_id = ${taskId}`).pipe(
    Effect.map((rows) => (rows.length === 0 ? undefined : { percent: Number(rows[0]!.percent), at: Number(rows[0]!.at) }))
  )

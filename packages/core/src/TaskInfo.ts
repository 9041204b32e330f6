/**
 * Wire schemas of the asynchronous task surface (SPEC.md §2.1–2.3).
 */
import * as Schema from "effect/Schema"

/** The four task states of SPEC.md §3.1. */
export const TaskStatus = Schema.Literal("pending", "processing", "completed", "failed")
/** A task state. */
export type TaskStatus = typeof TaskStatus.Type

/** `task_info.error` (SPEC.md §2.2). */
export class TaskError extends Schema.Class<TaskError>("TaskError")({
  code: Schema.Int,
  title: Schema.String,
  detail: Schema.String
}) {}

/** `task_info` (SPEC.md §2.1). `status` is optional because some create responses omit it. */
export const TaskInfo = Schema.Struct({
  id: Schema.UUID,
  status: Schema.optional(TaskStatus),
  created_at: Schema.String,
  updated_at: Schema.String,
  error: Schema.optional(TaskError)
})
/** A `task_info` object. */
export type TaskInfo = typeof TaskInfo.Type

/** The create response: `{task_info}` only (SPEC.md §2.3). */
export const TaskCreated = Schema.Struct({ task_info: TaskInfo })
/** A create response. */
export type TaskCreated = typeof TaskCreated.Type

/** The result kind of a task entry: which array carries its media. */
export const ResultKind = Schema.Literal("videos", "images")
/** `videos` or `images`. */
export type ResultKind = typeof ResultKind.Type

/** The retrieval envelope of a video task (SPEC.md §2.3). */
export const VideoTaskResult = Schema.Struct({
  task_info: TaskInfo,
  videos: Schema.optional(Schema.Array(Schema.String))
})

/** The retrieval envelope of an image task (SPEC.md §2.3). */
export const ImageTaskResult = Schema.Struct({
  task_info: TaskInfo,
  images: Schema.optional(Schema.Array(Schema.String))
})

/** The retrieval envelope for a result kind. */
export const taskResultSchema = (kind: ResultKind) => (kind === "videos" ? VideoTaskResult : ImageTaskResult)

/** Error codes of failed tasks (SPEC.md §7, DESIGN.md §2). */
export const TaskErrorCode = {
  /** Invalid request family: bad parameters, content moderation, unsupported input. */
  InvalidRequest: 400,
  /** Execution error, deadline expiry, unknown submission outcome. */
  ExecutionError: 3001
} as const

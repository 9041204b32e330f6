/**
 * The task state machine. SPEC.md leaves transitions unshown; Genway allows only forward moves:
 * `pending → processing → completed | failed`, `pending → completed | failed`, and a `processing`
 * task may stay `processing`. Terminal states never change.
 */
import type { TaskStatus } from "./TaskInfo.js"

const allowed: Record<TaskStatus, ReadonlyArray<TaskStatus>> = {
  pending: ["pending", "processing", "completed", "failed"],
  processing: ["processing", "completed", "failed"],
  completed: [],
  failed: []
}

/** Whether a task may move from `from` to `to`. */
export const canTransition = (from: TaskStatus, to: TaskStatus): boolean => allowed[from].includes(to)

/** Whether a state is final. */
export const isTerminal = (status: TaskStatus): boolean => status === "completed" || status === "failed"

/** The states a worker still has to act on. */
export const activeStates: ReadonlyArray<TaskStatus> = ["pending", "processing"]

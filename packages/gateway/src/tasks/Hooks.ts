/**
 * In-transaction hooks on task changes: the task store calls every registered hook inside the
 * transaction that inserts a task or changes its status, so whatever a hook writes (a webhook
 * outbox row, a usage ledger row) commits or rolls back together with the change itself.
 */
import type { SqlError } from "@effect/sql/SqlError"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { Task } from "./Store.js"

/** A task's status change, as committed in the current transaction. */
export interface TaskChange {
  /** The task after the change. */
  readonly task: Task
  /** The status before (`null` when the task was just created). */
  readonly from: Task["status"] | null
  readonly to: Task["status"]
  /** When the change happened, epoch milliseconds. */
  readonly at: number
}

/** A hook; it runs on the transaction's connection and fails the transition if it fails. */
export type TransitionHook = (change: TaskChange) => Effect.Effect<void, SqlError>

/** The hooks in force: features register theirs when their layer is built. */
export interface TransitionHooksService {
  readonly register: (hook: TransitionHook) => Effect.Effect<void>
  /** Runs every hook on a change, in registration order. */
  readonly run: (change: TaskChange) => Effect.Effect<void, SqlError>
}

/** The transition hooks of one gateway. */
export class TransitionHooks extends Context.Tag("@genway/gateway/TransitionHooks")<TransitionHooks, TransitionHooksService>() {}

/** An empty hook list. */
export const make = Effect.sync((): TransitionHooksService => {
  const hooks: Array<TransitionHook> = []
  return {
    register: (hook) => Effect.sync(() => void hooks.push(hook)),
    run: (change) => (hooks.length === 0 ? Effect.void : Effect.forEach(hooks, (hook) => hook(change), { discard: true }))
  }
})

/** The hook list as a layer (one per gateway; provide it below the task store and the features). */
export const layer = Layer.effect(TransitionHooks, make)

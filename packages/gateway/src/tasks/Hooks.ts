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

/**
 * A hook: what it writes for a change, run on the transaction's connection (it fails the transition
 * if it fails), or `undefined` when the change is none of its business — decided without I/O, so a
 * change no hook writes for can go without a transaction of its own (see `plan`). A write that is
 * one SQL statement (an `@effect/sql` statement, not piped) may be run inside the change's own
 * statement on PostgreSQL (see `writes`).
 */
export type TransitionHook = (change: TaskChange) => Effect.Effect<unknown, SqlError> | undefined

/** The hooks in force: features register theirs when their layer is built. */
export interface TransitionHooksService {
  readonly register: (hook: TransitionHook) => Effect.Effect<void>
  /** What each hook writes for a change, in registration order (empty when none writes anything). */
  readonly writes: (change: TaskChange) => ReadonlyArray<Effect.Effect<unknown, SqlError>>
  /** The hooks' writes for a change as one effect; `undefined` when none writes anything. */
  readonly plan: (change: TaskChange) => Effect.Effect<void, SqlError> | undefined
}

/** The transition hooks of one gateway. */
export class TransitionHooks extends Context.Tag("@genway/gateway/TransitionHooks")<TransitionHooks, TransitionHooksService>() {}

/** An empty hook list. */
export const make = Effect.sync((): TransitionHooksService => {
  const hooks: Array<TransitionHook> = []
  const writes = (change: TaskChange) => {
    const out: Array<Effect.Effect<unknown, SqlError>> = []
    for (const hook of hooks) {
      const write = hook(change)
      if (write !== undefined) out.push(write)
    }
    return out
  }
  const plan = (change: TaskChange) => {
    const all = writes(change)
    return all.length === 0 ? undefined : Effect.all(all, { discard: true })
  }
  return {
    register: (hook) => Effect.sync(() => void hooks.push(hook)),
    writes,
    plan
  }
})

/** The hook list as a layer (one per gateway; provide it below the task store and the features). */
export const layer = Layer.effect(TransitionHooks, make)

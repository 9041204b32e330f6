/**
 * The vendor's own progress figure of a running task, kept beside the task (one row per task,
 * replaced by each newer figure). Read by the event stream, listings and webhooks.
 *
 * Written behind the poll that reported it: a poll hands its figure over and goes on, and the
 * figures handed over in one turn of the event loop are written together at its end, one
 * multi-row upsert (on SQLite a member of the group commit, platform/Sqlite.ts), a newer figure of
 * a task replacing an older one not yet written. A poll's own write used to be a statement alone:
 * on SQLite a commit of its own (and the end of the group open at that moment), on PostgreSQL a
 * round trip; a vendor that reports progress on every poll made that one per poll of every task
 * (bench/JOURNAL.md, "Progress written behind").
 *
 * A figure is advisory: this process reads the ones not yet written from here (`latest`), another
 * replica sees them once written, a few milliseconds later; a crash loses those of the turn, and the
 * task's next poll reports a figure again. A write that fails is logged and its figures dropped,
 * for the same reason. Not `WriteBatch` (platform/WriteBatch.ts): its callers wait for their row
 * to be durable, and each row there is written; here nobody waits and only a task's latest figure
 * counts.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import type * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Runtime from "effect/Runtime"
import * as Sqlite from "../platform/Sqlite.js"

/** A task's progress figure (0-100) and when the vendor reported it. */
export interface Figure {
  readonly percent: number
  readonly at: number
}

/** The rows one upsert writes, largest first: a write is split into these, so there are a few statement texts, not one per count. */
const chunkSizes = [256, 64, 16, 4, 1]

/** The progress figures: handed over by the workers' polls, read by listings, event streams and webhooks. */
export class ProgressWriter extends Context.Tag("@genway/gateway/tasks/ProgressWriter")<ProgressWriter, {
  /** Records `percent` (rounded, clamped to 0-100) as the task's latest figure, written behind (see above); not a finite number, ignored. */
  readonly record: (taskId: string, percent: number, at: number) => Effect.Effect<void>
  /** The task's latest figure, if any: one not yet written first. */
  readonly latest: (taskId: string) => Effect.Effect<Figure | undefined, SqlError>
  /** Writes the figures handed over so far and waits for the write (tests; the scope's close does it too). */
  readonly flush: Effect.Effect<void>
}>() {}

const make = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const runFork = Runtime.runFork(yield* Effect.runtime<never>())
  /** Figures not yet written, by task. */
  let pending = new Map<string, Figure>()
  /** The figures of the write under way (read from here until it ends). */
  let writing = new Map<string, Figure>()
  let running: Fiber.RuntimeFiber<void> | undefined
  let scheduled = false

  const upsert = (rows: ReadonlyArray<readonly [string, Figure]>) =>
    sql`INSERT INTO task_progress (task_id, percent, at) VALUES ${
      sql.csv(rows.map(([id, f]) => sql`(${id}, ${f.percent}, ${f.at})`))
    } ON CONFLICT (task_id) DO UPDATE SET percent = excluded.percent, at = excluded.at`

  const write = (figures: ReadonlyMap<string, Figure>) => {
    const rows = [...figures]
    const statements: Array<Effect.Effect<unknown, SqlError>> = []
    for (let i = 0; i < rows.length;) {
      const size = chunkSizes.find((n) => n <= rows.length - i)!
      statements.push(upsert(rows.slice(i, i + size)))
      i += size
    }
    const all = Effect.forEach(statements, (s) => s, { discard: true })
    return Sqlite.grouped(sql)(all).pipe(
      Effect.catchAllCause((cause) => Effect.logWarning(`could not write ${rows.length} task progress figure(s); the next polls report them again`, cause))
    )
  }

  /** Starts writing what is pending, unless a write is under way (its end starts the next). */
  const next = () => {
    scheduled = false
    if (running !== undefined || pending.size === 0) return
    writing = pending
    pending = new Map()
    const fiber = runFork(write(writing))
    running = fiber
    fiber.addObserver(() => {
      running = undefined
      writing = new Map()
      if (pending.size > 0) schedule()
    })
  }
  /** At the end of this turn of the event loop: the figures of the turn together. */
  const schedule = () => {
    if (scheduled) return
    scheduled = true
    setImmediate(next)
  }

  /** Writes everything pending and waits, until nothing is. */
  const flush: Effect.Effect<void> = Effect.suspend(function loop(): Effect.Effect<void> {
    next()
    const fiber = running
    return fiber === undefined ? Effect.void : Effect.flatMap(fiber.await, loop)
  })
  yield* Effect.addFinalizer(() => flush)

  const record = (taskId: string, percent: number, at: number) =>
    Effect.sync(() => {
      // A figure that is not a number is no figure: written with the others, it would fail their statement.
      if (!Number.isFinite(percent) || !Number.isFinite(at)) return
      pending.set(taskId, { percent: Math.max(0, Math.min(100, Math.round(percent))), at })
      schedule()
    })

  const latest = (taskId: string): Effect.Effect<Figure | undefined, SqlError> =>
    Effect.suspend(() => {
      const known = pending.get(taskId) ?? writing.get(taskId)
      if (known !== undefined) return Effect.succeed(known)
      return Effect.map(
        sql`SELECT percent, at FROM task_progress WHERE task_id = ${taskId}`,
        (rows) => (rows.length === 0 ? undefined : { percent: Number(rows[0]!.percent), at: Number(rows[0]!.at) })
      )
    })

  return { record, latest, flush }
})

/** The progress figures over the `SqlClient` in context; what is pending is written when the scope closes. */
export const layer = Layer.scoped(ProgressWriter, make)

/** The task's latest figure, if any (see `ProgressWriter.latest`). */
export const latest = (taskId: string) => Effect.flatMap(ProgressWriter, (w) => w.latest(taskId))

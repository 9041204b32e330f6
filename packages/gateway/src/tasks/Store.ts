/**
 * Durable tasks. Every change is a compare-and-set on `version` (and, for workers, on the lease
 * owner) and status changes are appended to `task_events` in the same transaction, so a crash at
 * any point leaves either the old row or the new one, never a half-written task.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import type { SqlError } from "@effect/sql/SqlError"
import * as Statement from "@effect/sql/Statement"
import { TaskInfo, TaskState } from "@genway/core"
import * as Chunk from "effect/Chunk"
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import { identity } from "effect/Function"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import * as Schema from "effect/Schema"
import * as TaskMetrics from "../observability/TaskMetrics.js"
import type { BudgetExceeded } from "../ledger/Ledger.js"
import * as Rows from "../platform/Rows.js"
import * as Sqlite from "../platform/Sqlite.js"
import { TransitionHooks } from "./Hooks.js"

/** Where the worker stands with the vendor. */
export type SubmitState = "new" | "submitting" | "submitted"

/** One entry of a finished task's result: a media key in the store, or a vendor URL kept as is. */
export type ResultItem = { readonly media: string } | { readonly url: string }

/** A task as stored. */
export interface Task {
  readonly id: string
  readonly tenant: string
  readonly entryId: string
  readonly vendor: string
  readonly mode: "live" | "sandbox"
  readonly status: TaskInfo.TaskStatus
  /** The validated request as JSON, large inline payloads replaced by spool references. */
  readonly request: string
  readonly hints: Readonly<Record<string, string>>
  readonly idempotencyKey: string | null
  readonly requestHash: string | null
  readonly upstreamModel: string
  readonly submitState: SubmitState
  readonly upstreamRef: string | null
  readonly attempts: number
  readonly nextRunAt: number
  readonly deadlineAt: number
  readonly leaseOwner: string | null
  readonly leaseUntil: number | null
  readonly submittedAt: number | null
  readonly createdAt: number
  readonly updatedAt: number
  readonly finishedAt: number | null
  readonly error: TaskInfo.TaskError | null
  readonly result: ReadonlyArray<ResultItem> | null
  /** The seconds of video the vendor reported for the result, where its protocol reports them. */
  readonly reportedSeconds: number | null
  readonly version: number
}

/** Fields a worker may change in one step. */
export type TaskPatch = Partial<
  Pick<
    Task,
    | "status" | "submitState" | "upstreamRef" | "attempts" | "nextRunAt" | "submittedAt" | "finishedAt"
    | "error" | "result" | "reportedSeconds" | "leaseOwner" | "leaseUntil"
  >
>

/** A new task. */
export type NewTask = Omit<
  Task,
  | "status" | "submitState" | "upstreamRef" | "attempts" | "leaseOwner" | "leaseUntil" | "submittedAt"
  | "finishedAt" | "error" | "result" | "reportedSeconds" | "version" | "updatedAt" | "nextRunAt"
> & {
  /** The API key that creates it, and that key's `max_in_flight` (checked in the insert's transaction). */
  readonly keyId?: string | null
  readonly maxInFlight?: number | null
  /** Runs first in the insert's transaction and may refuse the create (the usage ledger's budget check). */
  readonly guard?: Effect.Effect<void, SqlError | BudgetExceeded, SqlClient.SqlClient>
}

/** The idempotency key was used before with another body. */
export class IdempotencyConflict extends Data.TaggedError("IdempotencyConflict")<{ readonly existing: Task }> {}

/** The creating key already has `limit` tasks pending or processing. */
export class InFlightExceeded extends Data.TaggedError("InFlightExceeded")<{ readonly limit: number }> {}

/** The `hints` column's value: an object of strings. */
const isHints = (u: unknown): u is Readonly<Record<string, string>> =>
  u !== null && typeof u === "object" && !Array.isArray(u) && Object.values(u).every((v) => typeof v === "string")

/** The `result` column's value: media keys in the store or vendor URLs, each item one of the two. */
const isResult = (u: unknown): u is ReadonlyArray<ResultItem> =>
  Array.isArray(u) && u.every((item) =>
    item !== null && typeof item === "object" &&
    (typeof (item as { media?: unknown }).media === "string" || typeof (item as { url?: unknown }).url === "string"))

/** A `tasks` row as the database returns it; decoding fails (a defect) on a row that is not a task. */
const TaskRow = Schema.Struct({
  id: Schema.String,
  tenant: Schema.String,
  entry_id: Schema.String,
  vendor: Schema.String,
  mode: Schema.Literal("live", "sandbox"),
  status: TaskInfo.TaskStatus,
  request: Schema.String,
  hints: Rows.JsonText("Hints", "JSON text of an object of strings", isHints),
  idempotency_key: Rows.TextOrNull,
  request_hash: Rows.TextOrNull,
  upstream_model: Schema.String,
  submit_state: Schema.Literal("new", "submitting", "submitted"),
  upstream_ref: Rows.TextOrNull,
  attempts: Rows.Num,
  next_run_at: Rows.Num,
  deadline_at: Rows.Num,
  lease_owner: Rows.TextOrNull,
  lease_until: Rows.NumOrNull,
  submitted_at: Rows.NumOrNull,
  created_at: Rows.Num,
  updated_at: Rows.Num,
  finished_at: Rows.NumOrNull,
  error_code: Rows.NumOrNull,
  error_title: Rows.TextOrNull,
  error_detail: Rows.TextOrNull,
  result: Rows.JsonTextOrNull("Result", "JSON text of an array of {media} or {url} items, or NULL", isResult),
  reported_seconds: Rows.NumOrNull,
  version: Rows.Num
})

const toTask = (r: typeof TaskRow.Type): Task => ({
  id: r.id,
  tenant: r.tenant,
  entryId: r.entry_id,
  vendor: r.vendor,
  mode: r.mode,
  status: r.status,
  request: r.request,
  hints: r.hints,
  idempotencyKey: r.idempotency_key,
  requestHash: r.request_hash,
  upstreamModel: r.upstream_model,
  submitState: r.submit_state,
  upstreamRef: r.upstream_ref,
  attempts: r.attempts,
  nextRunAt: r.next_run_at,
  deadlineAt: r.deadline_at,
  leaseOwner: r.lease_owner,
  leaseUntil: r.lease_until,
  submittedAt: r.submitted_at,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
  finishedAt: r.finished_at,
  error: r.error_code === null ? null : { code: r.error_code, title: r.error_title ?? "", detail: r.error_detail ?? "" },
  result: r.result,
  reportedSeconds: r.reported_seconds,
  version: r.version
})

/** The tasks, or the first task, a statement returns, decoded. */
const { all: tasksOf, one: taskOf } = Rows.decoder(TaskRow, toTask)

const StatusCount = Schema.Struct({ status: Schema.String, n: Rows.Num })
/** At most this many rows in one batched statement (reschedules, lease renewals: four parameters at most each). */
const batchRows = 500

/** The row counts a batched statement is padded to (see `batched`). */
const batchSizes = [1, 4, 16, 64, 256, batchRows]

const EventRow = Schema.Struct({ at: Rows.Num, from_status: Rows.TextOrNull, to_status: Schema.String, note: Rows.TextOrNull })

const make = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  // Optional, so a store built without the hooks layer (tools, tests) simply has none.
  const hooks = yield* Effect.serviceOption(TransitionHooks)
  /** What the hooks write for a change; `undefined` when they write nothing. */
  const planHooks = (task: Task, from: Task["status"], at: number) =>
    Option.isNone(hooks) ? undefined : hooks.value.plan({ task, from, to: task.status, at })
  // On PostgreSQL a state change and its event are one statement (`withEvent`); SQLite runs two.
  const eventInStatement = yield* sql.onDialectOrElse({ pg: () => Effect.succeed(true), orElse: () => Effect.succeed(false) })

  const event = (taskId: string, at: number, from: string | null, to: string, note: string | null) =>
    sql`INSERT INTO task_events (task_id, at, from_status, to_status, note) VALUES (${taskId}, ${at}, ${from}, ${to}, ${note})`

  /**
   * A write of one task row (`… RETURNING id`) and, if it wrote one, the event that goes with it.
   * On PostgreSQL one statement (`WITH … INSERT INTO task_events … SELECT … FROM written`): each
   * statement of a transaction is a round trip that holds a pooled connection, and a create or a
   * state change is on every task's path. SQLite runs them one after the other (no round trips).
   */
  const withEvent = (
    write: Statement.Statement<Record<string, unknown>>,
    taskId: string,
    at: number,
    from: string | null,
    to: string,
    note: string | null
  ) =>
    sql.onDialectOrElse({
      pg: () =>
        sql`WITH written AS (${write}) INSERT INTO task_events (task_id, at, from_status, to_status, note)
          SELECT id, ${at}, ${from}, ${to}, ${note} FROM written RETURNING task_id AS id`,
      orElse: () => Effect.flatMap(write, (rows) => (rows.length === 0 ? Effect.succeed(rows) : Effect.as(event(taskId, at, from, to, note), rows)))
    })

  const findById = (id: string) => taskOf(sql`SELECT * FROM tasks WHERE id = ${id}`)

  const findByIdempotencyKey = (tenant: string, entryId: string, key: string) =>
    taskOf(sql`SELECT * FROM tasks WHERE tenant = ${tenant} AND entry_id = ${entryId} AND idempotency_key = ${key}`)

  /**
   * Inserts a task and its first event. With an idempotency key, a repeat with the same body
   * returns the first task; with another body it fails with `IdempotencyConflict`.
   */
  const create = (
    task: NewTask,
    now: number
  ): Effect.Effect<
    { readonly task: Task; readonly replay: boolean },
    SqlError | IdempotencyConflict | InFlightExceeded | BudgetExceeded
  > =>
    Effect.gen(function*() {
      if (task.idempotencyKey !== null) {
        const existing = yield* findByIdempotencyKey(task.tenant, task.entryId, task.idempotencyKey)
        if (Option.isSome(existing)) {
          if (existing.value.requestHash === task.requestHash) return { task: existing.value, replay: true }
          return yield* new IdempotencyConflict({ existing: existing.value })
        }
      }
      const { guard: _guard, ...fields } = task
      const created: Task = {
        ...fields,
        status: "pending",
        submitState: "new",
        upstreamRef: null,
        attempts: 0,
        nextRunAt: now,
        leaseOwner: null,
        leaseUntil: null,
        submittedAt: null,
        updatedAt: now,
        finishedAt: null,
        error: null,
        result: null,
        reportedSeconds: null,
        version: 0
      }
      const row = sql`INSERT INTO tasks (
          id, tenant, entry_id, vendor, mode, status, request, hints, idempotency_key, request_hash,
          upstream_model, submit_state, attempts, next_run_at, deadline_at, created_at, updated_at, version, key_id
        ) VALUES (
          ${task.id}, ${task.tenant}, ${task.entryId}, ${task.vendor}, ${task.mode}, 'pending', ${task.request},
          ${JSON.stringify(task.hints)}, ${task.idempotencyKey}, ${task.requestHash}, ${task.upstreamModel}, 'new', 0,
          ${now}, ${task.deadlineAt}, ${task.createdAt}, ${now}, 0, ${task.keyId ?? null}
        ) RETURNING id`
      const hookWrites = Option.isNone(hooks) ? [] : hooks.value.writes({ task: created, from: null, to: "pending", at: now })
      // On PostgreSQL a create with nothing to check first (no budget to guard, no in-flight limit)
      // whose hooks write single statements is one statement: the task, its first event and those
      // writes in one `WITH`, atomic without a transaction — one round trip where `BEGIN`, the
      // task, the ledger's reservation and `COMMIT` were four.
      const statements = hookWrites.filter(Statement.isFragment)
      const oneStatement = eventInStatement && task.guard === undefined && !(task.keyId != null && task.maxInFlight != null) &&
        statements.length === hookWrites.length
      const insert = oneStatement
        ? sql`WITH written AS (${row}), event AS (INSERT INTO task_events (task_id, at, from_status, to_status, note)
            SELECT id, ${now}, ${null}, 'pending', 'created' FROM written)${
          statements.reduce((ctes, write, i) => sql`${ctes}, ${sql(`hook_${i}`)} AS (${write})`, sql``)
        } SELECT id FROM written`
        : sql.withTransaction(Effect.gen(function*() {
        // max_in_flight: counted under a per-key lock (SQLite has one writer), so exact across replicas.
        if (task.keyId != null && task.maxInFlight != null) {
          yield* sql.onDialectOrElse({ pg: () => sql`SELECT pg_advisory_xact_lock(hashtext(${task.keyId}))`, orElse: () => Effect.void })
          const open = yield* sql`SELECT COUNT(*) AS n FROM tasks WHERE key_id = ${task.keyId} AND status IN ('pending', 'processing')`
          if (Number(open[0]?.n ?? 0) >= task.maxInFlight) return yield* new InFlightExceeded({ limit: task.maxInFlight })
        }
        if (task.guard !== undefined) yield* Effect.provideService(task.guard, SqlClient.SqlClient, sql)
        yield* withEvent(row, task.id, now, null, "pending", "created")
        for (const write of hookWrites) yield* write
      }))
      // Two creates racing with one idempotency key: the unique index lets one in; the other
      // answers as a repeat (or a conflict) of the winner.
      const lost = yield* insert.pipe(
        Effect.as(Option.none<Task>()),
        Effect.catchTag("SqlError", (error): Effect.Effect<Option.Option<Task>, SqlError | IdempotencyConflict> =>
          task.idempotencyKey === null
            ? Effect.fail(error)
            : Effect.flatMap(
              findByIdempotencyKey(task.tenant, task.entryId, task.idempotencyKey),
              (winner): Effect.Effect<Option.Option<Task>, SqlError | IdempotencyConflict> =>
                Option.isNone(winner)
                  ? Effect.fail(error)
                  : winner.value.requestHash === task.requestHash
                  ? Effect.succeed(winner)
                  : Effect.fail(new IdempotencyConflict({ existing: winner.value }))
            ))
      )
      if (Option.isSome(lost)) return { task: lost.value, replay: true }
      yield* TaskMetrics.created(created)
      return { task: created, replay: false }
    })

  /** How many tasks created with the key are pending or processing (its `max_in_flight` count). */
  const inFlight = (keyId: string) =>
    Effect.map(
      sql`SELECT COUNT(*) AS n FROM tasks WHERE key_id = ${keyId} AND status IN ('pending', 'processing')`,
      (rows) => Number(rows[0]?.n ?? 0)
    )

  /** A tenant's task of one entry; another tenant's or another entry's id is not found. */
  const find = (tenant: string, entryId: string, id: string) =>
    taskOf(sql`SELECT * FROM tasks WHERE id = ${id} AND tenant = ${tenant} AND entry_id = ${entryId}`)

  /**
   * Leases up to `limit` due active tasks to `owner` until `now + leaseMs`, oldest due first. A
   * task a worker keeps in hand (its lease held, its `next_run_at` past) is not due for the others:
   * the claim reads `tasks_claimable` (unleased tasks only), after dropping the leases that ran out
   * through `tasks_leased` (migration 0010). On SQLite the two statements are one transaction, one
   * commit of the group.
   */
  const claimDue = (owner: string, now: number, leaseMs: number, limit: number) => {
    const claim = Effect.zipRight(
      Rows.dropExpiredLeases(sql, "tasks", now, limit),
      Rows.claimDue(
        sql,
        "tasks",
        { where: sql`status IN ('pending', 'processing') AND next_run_at <= ${now}`, order: "next_run_at", unleasedOnly: true },
        owner,
        now,
        leaseMs,
        limit
      )
    )
    return tasksOf(Sqlite.grouped(sql)(claim))
  }

  /**
   * Applies `patch` if the task is still at `task.version` (every claim and change bumps it, so a
   * lease another worker took since fails this too).
   * Returns the updated task, or `None` when someone else changed it (the caller drops its work).
   * `also` is written in the same transaction once the update applied (the result's media rows of
   * a completing task: the result and its rows commit together, one transaction, not two).
   */
  const update = (task: Task, patch: TaskPatch, now: number, note?: string, also?: Effect.Effect<unknown, SqlError>) => {
    const next = { ...task, ...patch }
    const updatedAt = next.status !== task.status ? now : task.updatedAt
    // The row was `task` (its version matched) once the update below matches it, so it then is
    // `next` one version on: built here rather than read back and decoded.
    const updated: Task = { ...next, updatedAt, version: task.version + 1 }
    const hookWrites = next.status !== task.status ? planHooks(updated, task.status, now) : undefined
    // A step that changes no state and notes nothing (a poll that found the task still running)
    // writes one row; on PostgreSQL so does a change whose hooks write nothing (the event is in
    // the same statement). There such a statement runs alone: it is atomic on its own, and a
    // transaction around it would cost two more round trips on the workers' busiest path. On
    // SQLite it runs in a transaction all the same: there a transaction joins the group commit
    // (platform/Sqlite.ts), where a statement alone commits the open group, then itself — two
    // commits where the group needed one. Under task-create load these statements were most of
    // the commits (commits 7,317 → 502 in 10 s; CPU per create 0.93–0.96 ×, within the noise). A
    // shared commit that fails then reaches such a step as a defect, as it reaches a state change:
    // logged, and the task is taken up again once its lease expires.
    const single = next.status === task.status && note === undefined
    const alone = eventInStatement && also === undefined && (single || hookWrites === undefined)
    // The update and its event, one statement on PostgreSQL; no event when it matched no row.
    const noted = (update: Statement.Statement<Record<string, unknown>>) =>
      single ? update : withEvent(update, task.id, now, task.status, next.status, note ?? null)
    return Effect.gen(function*() {
      if (next.status !== task.status && !TaskState.canTransition(task.status, next.status)) {
        yield* Effect.logWarning(`refused transition ${task.status} → ${next.status}`).pipe(Effect.annotateLogs("task", task.id))
        return Option.none<Task>()
      }
      const changed = yield* noted(sql`UPDATE tasks SET
          status = ${next.status}, submit_state = ${next.submitState}, upstream_ref = ${next.upstreamRef},
          attempts = ${next.attempts}, next_run_at = ${next.nextRunAt}, submitted_at = ${next.submittedAt},
          finished_at = ${next.finishedAt}, error_code = ${next.error?.code ?? null},
          error_title = ${next.error?.title ?? null}, error_detail = ${next.error?.detail ?? null},
          result = ${next.result === null ? null : JSON.stringify(next.result)}, reported_seconds = ${next.reportedSeconds},
          lease_owner = ${next.leaseOwner}, lease_until = ${next.leaseUntil},
          updated_at = ${updatedAt}, version = version + 1
        WHERE id = ${task.id} AND version = ${task.version}
        RETURNING id`)
      if (changed.length === 0) return Option.none<Task>()
      if (hookWrites !== undefined) yield* hookWrites
      if (also !== undefined) yield* also
      return Option.some(updated)
    }).pipe(
      alone ? identity : sql.withTransaction,
      Effect.tap((o) => (Option.isSome(o) && o.value.status !== task.status ? TaskMetrics.transition(task, o.value, now) : Effect.void))
    )
  }

  /**
   * Rows written together: under load hundreds of polls end in the same moment, each with a small
   * write to its task. One `UPDATE … FROM (VALUES …)` writes all that are waiting (one commit, the
   * hot index pages written once); each caller still waits for its own row's outcome (whether its
   * task matched), so nothing is answered before it is durable. `row` is an item's `VALUES` row, or
   * a row that matches nothing for `undefined`: batches are padded to one of `batchSizes`, so there
   * is one statement text (and one prepared statement) per size, not one per batch length.
   */
  const batched = <A extends { readonly task: Task }>(
    what: string,
    row: (item: A | undefined) => Statement.Fragment,
    write: (rows: Statement.Fragment) => Effect.Effect<ReadonlyArray<{ readonly id: string }>, SqlError>
  ) =>
    Effect.gen(function*() {
      type Waiting = { readonly item: A; readonly done: Deferred.Deferred<boolean, SqlError> }
      const queue = yield* Queue.unbounded<Waiting>()
      // At shutdown (after the writer below is interrupted): whoever still waits is interrupted, and
      // a late caller is too, rather than waiting for a writer that is gone.
      yield* Effect.addFinalizer(() =>
        Effect.flatMap(Queue.takeAll(queue), (rest) =>
          Effect.zipRight(Effect.forEach(rest, ({ done }) => Deferred.interrupt(done), { discard: true }), Queue.shutdown(queue))))
      const writeBatch = Effect.gen(function*() {
        const batch = Chunk.toReadonlyArray(yield* Queue.takeBetween(queue, 1, batchRows))
        const size = batchSizes.find((n) => n >= batch.length)!
        const written = yield* write(sql.csv(Array.from({ length: size }, (_, i) => row(batch[i]?.item)))).pipe(
          // Every caller of the batch gets its outcome, whatever happens to the statement (an error, a
          // defect, an interruption at shutdown), so none waits forever.
          Effect.onExit((exit) =>
            exit._tag === "Success"
              ? Effect.void
              : Effect.forEach(batch, ({ done }) => Deferred.failCause(done, exit.cause), { discard: true })
          ),
          // A database error reaches the callers (each logs it and retries later); a defect is logged below.
          Effect.orElseSucceed(() => undefined)
        )
        if (written === undefined) return
        const applied = new Set(written.map((r) => r.id))
        for (const { done, item } of batch) yield* Deferred.succeed(done, applied.has(item.task.id))
      })
      yield* Effect.forkScoped(Effect.forever(Effect.catchAllDefect(writeBatch, (defect) => Effect.logError(`${what} failed`, defect))))
      return (item: A): Effect.Effect<boolean, SqlError> =>
        Effect.flatMap(Deferred.make<boolean, SqlError>(), (done) => Effect.zipRight(Queue.offer(queue, { item, done }), Deferred.await(done)))
    })

  /**
   * Rescheduling: a poll that finds its task still running, and does not keep it in hand, only
   * moves the task's next run and gives its lease back. An autocommitted update per poll was the
   * workers' costliest statement; they are written together (`batched`).
   */
  const writeReschedule = yield* batched<{ readonly task: Task; readonly nextRunAt: number }>(
    "rescheduling tasks",
    (item) =>
      item === undefined
        ? sql`(CAST(${""} AS TEXT), CAST(${-1} AS INTEGER), CAST(${0} AS BIGINT))`
        : sql`(CAST(${item.task.id} AS TEXT), CAST(${item.task.version} AS INTEGER), CAST(${item.nextRunAt} AS BIGINT))`,
    (rows) =>
      sql<{ readonly id: string }>`UPDATE tasks
        SET next_run_at = v.next_run_at, attempts = 0, lease_owner = NULL, lease_until = NULL, version = tasks.version + 1
        FROM (SELECT column1 AS id, column2 AS version, column3 AS next_run_at FROM (VALUES ${rows}) AS given) AS v
        WHERE tasks.id = v.id AND tasks.version = v.version
        RETURNING tasks.id`
  )

  /**
   * The task stays in its status and runs next at `nextRunAt` (whole milliseconds; attempts reset,
   * lease given back), if it is still at `task.version`; `None` when someone else changed it.
   * Written with the other reschedules waiting at the same moment (see `batched`).
   */
  const reschedule = (task: Task, at: number): Effect.Effect<Option.Option<Task>, SqlError> => {
    const nextRunAt = Math.round(at)
    return Effect.map(writeReschedule({ task, nextRunAt }), (applied) =>
      applied
        ? Option.some<Task>({ ...task, nextRunAt, attempts: 0, leaseOwner: null, leaseUntil: null, version: task.version + 1 })
        : Option.none())
  }

  /**
   * Lease renewals of tasks a worker keeps in hand (tasks/Scheduler.ts, `keep`), written together
   * (`batched`): the lease `owner` holds on the task at `task.version` extended to `until`, its
   * version left alone.
   */
  const writeRenewal = yield* batched<{ readonly task: Task; readonly owner: string; readonly until: number }>(
    "renewing task leases",
    (item) =>
      item === undefined
        ? sql`(CAST(${""} AS TEXT), CAST(${-1} AS INTEGER), CAST(${""} AS TEXT), CAST(${0} AS BIGINT))`
        : sql`(CAST(${item.task.id} AS TEXT), CAST(${item.task.version} AS INTEGER), CAST(${item.owner} AS TEXT), CAST(${item.until} AS BIGINT))`,
    (rows) =>
      sql<{ readonly id: string }>`UPDATE tasks
        SET lease_until = v.lease_until
        FROM (SELECT column1 AS id, column2 AS version, column3 AS owner, column4 AS lease_until FROM (VALUES ${rows}) AS given) AS v
        WHERE tasks.id = v.id AND tasks.version = v.version AND tasks.lease_owner = v.owner
          AND tasks.status IN ('pending', 'processing')
        RETURNING tasks.id`
  )

  /**
   * The task with the lease `owner` holds on it extended to `until` (whole milliseconds), if it is
   * still at `task.version` under that lease and unfinished; `None` when the lease is gone or the
   * task changed. Written with the other renewals waiting at the same moment.
   */
  const renewHeld = (task: Task, owner: string, until: number): Effect.Effect<Option.Option<Task>, SqlError> => {
    const leaseUntil = Math.round(until)
    return Effect.map(writeRenewal({ task, owner, until: leaseUntil }), (applied) =>
      applied ? Option.some<Task>({ ...task, leaseUntil }) : Option.none())
  }

  /** The event log of a task, oldest first. */
  const eventRows = SqlSchema.findAll({
    Request: Schema.String,
    Result: EventRow,
    execute: (taskId) => sql`SELECT at, from_status, to_status, note FROM task_events WHERE task_id = ${taskId} ORDER BY id`
  })
  const events = (id: string) =>
    eventRows(id).pipe(
      Effect.map((rows) => rows.map((r) => ({ at: r.at, from: r.from_status, to: r.to_status, note: r.note }))),
      Rows.orDieOnParse
    )

  /**
   * Drops every lease. Only for the embedded SQLite database, which one process owns: after a
   * crash its tasks are taken up at once instead of when their leases run out.
   */
  const releaseAllLeasesIfEmbedded = sql.onDialectOrElse({
    sqlite: () =>
      sql`UPDATE tasks SET lease_owner = NULL, lease_until = NULL, version = version + 1 WHERE lease_owner IS NOT NULL RETURNING id`.pipe(
        Effect.map((rows) => rows.length)
      ),
    orElse: () => Effect.succeed(0)
  })

  /**
   * A tenant's tasks, newest first (ties by id, descending), optionally of one entry and status,
   * strictly after the `after` position; at most `limit`.
   */
  const list = (
    tenant: string,
    filter: {
      readonly entryId?: string | undefined
      readonly status?: string | undefined
      readonly after?: { readonly createdAt: number; readonly id: string } | undefined
    },
    limit: number
  ) =>
    sql`SELECT * FROM tasks WHERE tenant = ${tenant}
      ${filter.entryId !== undefined ? sql`AND entry_id = ${filter.entryId}` : sql``}
      ${filter.status !== undefined ? sql`AND status = ${filter.status}` : sql``}
      ${
      filter.after !== undefined
        ? sql`AND (created_at < ${filter.after.createdAt} OR (created_at = ${filter.after.createdAt} AND id < ${filter.after.id}))`
        : sql``
    }
      ORDER BY created_at DESC, id DESC LIMIT ${limit}`.pipe(tasksOf)
  /** Releases the leases `owner` holds (at shutdown), so another worker takes its tasks at once. */
  const releaseLeasesOf = (owner: string) =>
    sql`UPDATE tasks SET lease_owner = NULL, lease_until = NULL, version = version + 1 WHERE lease_owner = ${owner}`.pipe(
      Effect.asVoid
    )

  /**
   * Extends the lease `owner` holds on the task at `task.version` to `until`: `false` when the
   * lease is gone (claimed by another worker, released, or the task changed). It leaves `version`
   * alone, so the worker's own next compare-and-set still applies. Written with the other renewals
   * waiting at the same moment (`renewHeld`).
   */
  const renewLease = (task: Task, owner: string, until: number) => Effect.map(renewHeld(task, owner, until), Option.isSome)

  /** Counts tasks by status (for `/readyz` and metrics). */
  const counts = SqlSchema.findAll({ Request: Schema.Void, Result: StatusCount, execute: () => sql`SELECT status, COUNT(*) AS n FROM tasks GROUP BY status` })(
    undefined
  ).pipe(Effect.map((rows) => Object.fromEntries(rows.map((r) => [r.status, r.n]))), Rows.orDieOnParse)

  return { create, find, findById, claimDue, update, reschedule, renewHeld, events, list, counts, releaseAllLeasesIfEmbedded, releaseLeasesOf, renewLease, inFlight } as const
})

/** The task store. */
export class TaskStore extends Context.Tag("@genway/gateway/TaskStore")<
  TaskStore,
  Effect.Effect.Success<typeof make>
>() {}

/** The task store over the `SqlClient` in context. */
export const layer = Layer.scoped(TaskStore, make)

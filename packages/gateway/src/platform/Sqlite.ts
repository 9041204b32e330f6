/**
 * The embedded SQLite client: `@effect/sql`'s `SqlClient` (statements, compiler, transactions and
 * savepoints are the library's) over one `better-sqlite3` connection, with a leaner connection
 * than `@effect/sql-sqlite-node`'s.
 *
 * Why not that package's client: it takes a semaphore permit and an Effect `Cache` lookup of the
 * prepared statement for every statement, which measured about 60 µs per trivial `SELECT`
 * against 1.4 µs for the statement itself (the gateway runs 5 to 10 statements per request and
 * about 20 per task). Here a statement outside a transaction runs at once unless a transaction
 * holds the connection (then it waits for it, as before) or transactions wait for their shared
 * commit (then it commits them first; see "Group commit" below), and prepared statements sit in a
 * plain `Map`. better-sqlite3 is synchronous, so nothing else can run between the check and the call.
 */
import * as Reactivity from "@effect/experimental/Reactivity"
import * as Client from "@effect/sql/SqlClient"
import type { Connection } from "@effect/sql/SqlConnection"
import { SqlError } from "@effect/sql/SqlError"
import * as Statement from "@effect/sql/Statement"
import Database from "better-sqlite3"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type * as Fiber from "effect/Fiber"
import * as FiberRef from "effect/FiberRef"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Scope from "effect/Scope"

/** Prepared statements kept per connection (the gateway writes fewer distinct statements). */
const cacheSize = 500

/** The most transactions one commit carries (bounds how long the first of them waits). */
const groupLimit = 64

/** A group this large shares its commit enough: the next one does not wait for the gap. */
const fullGroup = 16

/** What a member's `COMMIT` returns: no rows once the group's commit is durable, or its error. */
type Outcome = Exit.Exit<ReadonlyArray<never>, SqlError>

/** Transactions committed together; `outcome` is set once their commit is durable (or failed). */
interface Group {
  members: number
  flushing: boolean
  outcome: Outcome | undefined
  /** The members waiting for `outcome`. */
  readonly waiting: Array<(outcome: Outcome) => void>
}

const committed: Outcome = Exit.succeed([])

/** Sets the group's outcome and resumes the members waiting for it. */
const settle = (g: Group, outcome: Outcome) => {
  g.outcome = outcome
  for (const resume of g.waiting) resume(outcome)
  g.waiting.length = 0
}

/**
 * Waits for the group's outcome. A plain callback rather than a `Deferred`: a member waits where
 * it cannot be interrupted (its commit runs in the transaction's uninterruptible end), and a
 * `Deferred` costs each member its creation, an interruptible wait (a finalizer and two runtime
 * flag changes) and its completion as an effect — about 15 Effect steps per transaction.
 */
const outcomeOf = (g: Group): Effect.Effect<ReadonlyArray<never>, SqlError> =>
  g.outcome ?? Effect.async<ReadonlyArray<never>, SqlError>((resume) => {
    if (g.outcome !== undefined) resume(g.outcome)
    else g.waiting.push(resume)
  })

/** Resumes after the current event-loop turn: the requests read in this turn reach the group. */
const nextTurn = Effect.async<void>((resume) => {
  const handle = setImmediate(() => resume(Effect.void))
  return Effect.sync(() => clearImmediate(handle))
})

/**
 * Resumes `ms` from now, or as soon as the group has its outcome (another statement or a full
 * group committed it meanwhile), whichever comes first.
 */
const gapOrOutcome = (g: Group, ms: number) =>
  Effect.async<void>((resume) => {
    if (g.outcome !== undefined) return resume(Effect.void)
    let resumed = false
    const once = () => {
      if (resumed) return
      resumed = true
      clearTimeout(handle)
      resume(Effect.void)
    }
    const handle = setTimeout(once, Math.ceil(ms))
    g.waiting.push(once)
    return Effect.sync(() => clearTimeout(handle))
  })

/** `GATEWAY_SQLITE_COMMIT_GAP_MS` when unset. */
export const defaultCommitGapMs = 5

/** How long a statement finding the database locked by another connection is tried again, by default. */
export const defaultBusyTimeoutMs = 5_000

/** The database is locked by another connection (not a snapshot gone stale, which a new try cannot mend). */
const isBusy = (cause: unknown): boolean => {
  const code = (cause as { readonly code?: unknown } | null)?.code
  return typeof code === "string" && code.startsWith("SQLITE_BUSY") && code !== "SQLITE_BUSY_SNAPSHOT"
}

/** A millisecond, on the event loop (not the fiber's clock: a test's clock stands still). */
const aMoment = Effect.async<void>((resume) => {
  const handle = setTimeout(() => resume(Effect.void), 1)
  return Effect.sync(() => clearTimeout(handle))
})

/** How the client commits. */
export interface Options {
  /**
   * The least time between the starts of two group commits, in milliseconds. A group whose first
   * member commits sooner after the last commit stays open until then, so the transactions of
   * those milliseconds share one commit; one that commits later, or after a commit that carried
   * `fullGroup` members or more (the load batches them already), commits at the end of its turn,
   * as every group does with 0. Default `defaultCommitGapMs` (`genway serve` takes
   * `GATEWAY_SQLITE_COMMIT_GAP_MS`).
   */
  readonly commitGapMs?: number
  /**
   * How long a write (or a transaction's begin) that finds the database locked by another
   * connection — the answers' commit thread (platform/AnswerWriter.ts), a CLI writing keys — is
   * tried again, every millisecond, before it fails. Default `defaultBusyTimeoutMs`.
   */
  readonly busyTimeoutMs?: number
}

const failure = (cause: unknown) => new SqlError({ cause, message: "Failed to execute statement" })

/** A SqlClient on the SQLite file `filename` (WAL journal). */
export const make = (filename: string, options: Options = {}) =>
  Effect.gen(function*() {
    const commitGapMs = options.commitGapMs ?? defaultCommitGapMs
    const busyTimeoutMs = options.busyTimeoutMs ?? defaultBusyTimeoutMs
    const db = new Database(filename)
    yield* Effect.addFinalizer(() => Effect.sync(() => db.close()))
    // Opening may meet another connection's checkpoint or recovery: SQLite's busy handler waits
    // for it here (at start, nothing else runs yet). From then on it would wait by sleeping the
    // thread, the event loop with it: a statement that finds the database locked fails at once,
    // and `whileBusy` runs it again a millisecond later, asynchronously.
    db.pragma("journal_mode = WAL")
    db.pragma("busy_timeout = 0")

    /** `f`'s result, or its error as an `SqlError` (one step, as `Effect.try`). */
    const attempt = <A>(f: () => A): Effect.Effect<A, SqlError> =>
      Effect.suspend(() => {
        try {
          return Effect.succeed(f())
        } catch (cause) {
          return Effect.fail(failure(cause))
        }
      })
    /**
     * `effect` again, a millisecond later, while it fails because another connection holds the
     * database's lock, for up to `busyTimeoutMs`; whole each time, so that a statement outside a
     * transaction goes through its gate again (a transaction begun meanwhile is waited for, never
     * joined). `effect` changes nothing when it fails so (one statement, or a transaction's begin).
     */
    const whileBusy = <A>(effect: Effect.Effect<A, SqlError>, until?: number): Effect.Effect<A, SqlError> =>
      Effect.catchIf(effect, (error) => isBusy(error.cause), (error) => {
        const deadline = until ?? performance.now() + busyTimeoutMs
        return performance.now() < deadline ? Effect.zipRight(aMoment, whileBusy(effect, deadline)) : Effect.fail(error)
      })

    const prepared = new Map<string, Database.Statement>()
    const prepare = (sql: string) => {
      let statement = prepared.get(sql)
      if (statement === undefined) {
        statement = db.prepare(sql)
        if (prepared.size >= cacheSize) prepared.clear()
        prepared.set(sql, statement)
      }
      return statement
    }
    const run = (sql: string, params: ReadonlyArray<unknown>, raw: boolean): Effect.Effect<any, SqlError> =>
      attempt(() => {
        const statement = prepare(sql)
        if (statement.reader) return statement.all(...params)
        const result = statement.run(...params)
        return raw ? result : []
      })
    const values = (sql: string, params: ReadonlyArray<unknown>): Effect.Effect<ReadonlyArray<ReadonlyArray<unknown>>, SqlError> =>
      attempt(() => {
        const statement = prepare(sql)
        if (!statement.reader) {
          statement.run(...params)
          return []
        }
        try {
          return statement.raw(true).all(...params) as Array<Array<unknown>>
        } finally {
          statement.raw(false)
        }
      })

    const exec = (text: string) => {
      prepare(text).run()
    }

    // Group commit. A transaction opened with `withTransaction` is one member of a group: one
    // SQLite transaction that the members run in turn, each inside its own savepoint. The group
    // commits once no member is left to join it (at the end of the event-loop turn, or as soon
    // as another statement needs the connection, or when it holds `groupLimit` members), and
    // each member's commit returns only after that: nothing is answered before it is durable.
    // One commit writes each page it changed once, whatever the number of members: on SQLite
    // in WAL a commit costs about one write per page changed, most of a small transaction's cost.
    // Under a steady load (a task's steps, creates arriving a few milliseconds apart) the turns
    // are short and each would commit a group of a few members; `commitGapMs` keeps a group that
    // starts sooner than that after the last commit open until then, so commits come at most
    // once per gap and each carries the transactions of its milliseconds (bench/JOURNAL.md,
    // "Commits at most once per gap"). A lone transaction after a quiet moment commits at the
    // end of its turn, as before, and so does a group after a full one: under a full load the
    // turns are long and the groups large, and a gap would only delay the workers' steps.
    const lock = yield* Effect.makeSemaphore(1)
    let group: Group | undefined
    let memberActive = false
    /** When the last group commit started (`performance.now()`). */
    let lastCommitAt = -Infinity
    /** How many members the last group commit carried. */
    let lastMembers = 0

    /** Commits the open group; the caller holds the connection and no member is active. */
    const flush = Effect.suspend(() => {
      const g = group
      if (g === undefined) return Effect.void
      group = undefined
      let exit: Outcome = committed
      lastCommitAt = performance.now()
      lastMembers = g.members
      try {
        exec("COMMIT")
      } catch (cause) {
        exit = Exit.fail(failure(cause))
        if (db.inTransaction) {
          try {
            exec("ROLLBACK")
          } catch {
            // The rollback's own failure adds nothing: the members fail with the commit's error.
          }
        }
      }
      settle(g, exit)
      return Effect.void
    })
    const flushIf = (g: Group) => Effect.suspend(() => (group === g ? flush : Effect.void))
    /** Fails the open group whose SQLite transaction is gone (SQLite rolled it back on an error). */
    const brokenGroup = (cause: unknown) =>
      Effect.suspend(() => {
        const g = group
        if (g === undefined || db.inTransaction) return Effect.void
        group = undefined
        settle(g, Exit.fail(failure(cause)))
        return Effect.void
      })

    const member = () => {
      const self = { holds: true, open: false, group: undefined as Group | undefined }
      const leave = Effect.suspend(() => {
        if (!self.holds) return Effect.void
        self.holds = false
        memberActive = false
        return lock.release(1)
      })
      // `IMMEDIATE`: the group takes the write lock as it begins, so that another connection's
      // commit (the answers' thread) cannot come between its reads and its writes — a deferred
      // transaction that had read before it could not write at all (`SQLITE_BUSY_SNAPSHOT`).
      const begin = whileBusy(attempt(() => {
        if (group === undefined) {
          exec("BEGIN IMMEDIATE")
          group = { members: 0, flushing: false, outcome: undefined, waiting: [] }
        }
        exec("SAVEPOINT genway_member")
        group.members++
        self.group = group
        self.open = true
        return []
      }))
      const commit = Effect.suspend(() => {
        const g = self.group!
        self.open = false
        try {
          exec("RELEASE genway_member")
        } catch (cause) {
          return Effect.zipRight(Effect.zipRight(brokenGroup(cause), leave), Effect.fail(failure(cause)))
        }
        if (g.members >= groupLimit) return Effect.zipRight(Effect.zipRight(flushIf(g), leave), Effect.suspend(() => outcomeOf(g)))
        if (g.flushing) return Effect.zipRight(leave, outcomeOf(g))
        g.flushing = true
        return leave.pipe(
          Effect.zipRight(Effect.suspend(() => {
            const wait = lastMembers >= fullGroup ? 0 : lastCommitAt + commitGapMs - performance.now()
            return wait <= 0 ? nextTurn : gapOrOutcome(g, wait)
          })),
          Effect.zipRight(Effect.suspend(() => (group !== g ? Effect.void : memberActive ? lock.withPermits(1)(flushIf(g)) : flush))),
          Effect.zipRight(Effect.suspend(() => outcomeOf(g)))
        )
      })
      const rollback = Effect.suspend(() => {
        const g = self.group
        if (!self.open || g === undefined) return Effect.as(leave, [])
        self.open = false
        let error: unknown
        try {
          exec("ROLLBACK TO genway_member")
          exec("RELEASE genway_member")
        } catch (cause) {
          error = cause
        }
        if (error !== undefined && !db.inTransaction) return Effect.as(Effect.zipRight(brokenGroup(error), leave), [])
        g.members--
        // No member of the group committed: nothing is left to write, the group ends here.
        if (g.members === 0 && !g.flushing && group === g) {
          group = undefined
          try {
            exec("ROLLBACK")
          } catch {
            // Nothing was written: a failed rollback leaves nothing behind either.
          }
          settle(g, committed)
          return Effect.as(leave, [])
        }
        return Effect.as(leave, [])
      })
      const own: Connection = {
        ...direct,
        executeUnprepared: (sql, params, transformRows) =>
          sql === "BEGIN" ? begin : sql === "COMMIT" ? commit : sql === "ROLLBACK" ? rollback : direct.executeUnprepared(sql, params, transformRows)
      }
      return { connection: own, release: Effect.asVoid(rollback) }
    }

    const connection = (gate: <A>(e: Effect.Effect<A, SqlError>) => Effect.Effect<A, SqlError>): Connection => {
      // Every statement is prepared (and cached): unprepared is the same.
      const execute: Connection["execute"] = (sql, params, transformRows) =>
        whileBusy(gate(transformRows ? Effect.map(run(sql, params, false), transformRows) : run(sql, params, false)))
      return {
        execute,
        executeRaw: (sql, params) => whileBusy(gate(run(sql, params, true))),
        executeValues: (sql, params) => whileBusy(gate(values(sql, params))),
        executeUnprepared: execute,
        executeStream: () => Effect.dieMessage("executeStream is not supported by the embedded SQLite client") as never
      }
    }
    // Outside a transaction: once the open group is committed (a statement outside a transaction
    // never sees, nor joins, writes not yet durable), at once if no transaction is running, else
    // after it. Between members the connection is free: committing the group needs no lock.
    const outside = connection((e) =>
      Effect.suspend(() => (memberActive ? lock.withPermits(1)(Effect.zipRight(flush, e)) : group === undefined ? e : Effect.zipRight(flush, e)))
    )
    // Inside a member: the member holds the connection.
    const direct = connection((e) => e)

    /** A new member of the group, once the caller holds the connection's lock. */
    const enter = () => {
      memberActive = true
      return member()
    }

    const transactionAcquirer = Effect.uninterruptibleMask((restore) =>
      Effect.zipRight(
        restore(lock.take(1)),
        Effect.flatMap(Effect.scope, (scope) => {
          const m = enter()
          return Effect.as(Scope.addFinalizer(scope, m.release), m.connection)
        })
      )
    )

    const client = yield* Client.make({
      acquirer: Effect.succeed(outside),
      transactionAcquirer,
      compiler: Statement.makeCompilerSqlite(),
      spanAttributes: [["db.system.name", "sqlite"]]
    })

    // Without a tracer (no OTLP exporter) and without a statement transformer, a statement runs
    // as one step on its connection, and a transaction as its member's steps: the library's path
    // makes a span, a scope and a connection lookup for each statement (about 15 µs against the
    // 1 µs of a `SELECT 1`) and a span and a scope for each transaction. With a tracer on, the
    // library's own path runs, spans and all.
    const library = client.withTransaction
    const traced = (fiber: Fiber.RuntimeFiber<unknown, unknown>) =>
      fiber.getFiberRef(FiberRef.currentTracerEnabled) || Option.isSome(fiber.getFiberRef(Statement.currentTransformer))
    runs.set(statementAcquirer(client), (statement, viaLibrary) =>
      Effect.withFiberRuntime((fiber) => {
        if (traced(fiber)) return viaLibrary()
        const transaction = Context.getOption(fiber.currentContext, Client.TransactionConnection)
        const [text, params] = statement.compile()
        return (transaction._tag === "Some" ? transaction.value[0] : outside).execute(text, params, statement.transformRows)
      }))
    const withTransaction = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E | SqlError, R> =>
      Effect.withFiberRuntime((fiber) => {
        const context = fiber.currentContext
        // Nested transactions (savepoints) stay the library's.
        if (traced(fiber) || Context.getOption(context, Client.TransactionConnection)._tag === "Some") return library(effect)
        return Effect.uninterruptibleMask((restore) =>
          Effect.zipRight(
            restore(lock.take(1)),
            Effect.suspend(() => {
              const m = enter()
              const conn = m.connection
              return conn.executeUnprepared("BEGIN", [], undefined).pipe(
                Effect.zipRight(Effect.locally(restore(effect), FiberRef.currentContext, Context.add(context, Client.TransactionConnection, [conn, 0]))),
                Effect.exit,
                Effect.flatMap((exit) =>
                  Effect.zipRight(
                    Effect.ensuring(Effect.orDie(conn.executeUnprepared(Exit.isSuccess(exit) ? "COMMIT" : "ROLLBACK", [], undefined)), m.release),
                    exit
                  )
                )
              )
            })
          )
        )
      })
    return Object.assign(client, { withTransaction }) as Client.SqlClient
  })

/**
 * `effect` as one member of the group commit on the embedded SQLite client (see "Group commit" in
 * `make`), as it is elsewhere: there a statement alone commits the open group, then itself — two
 * commits where the group needed one. On PostgreSQL a transaction around a single statement would
 * cost two more round trips, so the effect runs as it is.
 */
export const grouped = (sql: Client.SqlClient) => <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E | SqlError, R> =>
  sql.onDialectOrElse({ sqlite: () => sql.withTransaction(effect), orElse: () => effect })

/** How a statement of an embedded client runs, by the client's statement acquirer. */
const runs = new WeakMap<object, (statement: Executable, viaLibrary: () => Effect.Effect<any, SqlError>) => Effect.Effect<any, SqlError>>()

/** What a statement of the library carries, read by the lean path. */
interface Executable {
  readonly acquirer: object
  readonly transformRows: (<A extends object>(rows: ReadonlyArray<A>) => ReadonlyArray<A>) | undefined
  compile(): readonly [string, ReadonlyArray<unknown>]
}

/**
 * The acquirer the client's statements carry, after routing the statements of every client in
 * `runs` through it (once per process): the library's statement class runs a statement in its
 * `commit`, which is where the lean path takes over; statements of other clients (PostgreSQL)
 * are untouched.
 */
const statementAcquirer = (client: Client.SqlClient): object => {
  const probe = client`SELECT 1` as unknown as Executable & { commit(): Effect.Effect<any, SqlError> }
  const prototype = Object.getPrototypeOf(probe) as { commit(this: Executable): Effect.Effect<any, SqlError>; [leanPath]?: true }
  if (prototype[leanPath] !== true) {
    const commit = prototype.commit
    prototype.commit = function(this: Executable) {
      const run = runs.get(this.acquirer)
      return run === undefined ? commit.call(this) : run(this, () => commit.call(this))
    }
    prototype[leanPath] = true
  }
  return probe.acquirer
}

const leanPath: unique symbol = Symbol.for("@genway/gateway/Sqlite/leanPath")

/** The client as a layer. */
export const layer = (filename: string, options: Options = {}): Layer.Layer<Client.SqlClient> =>
  Layer.scoped(Client.SqlClient, make(filename, options)).pipe(Layer.provide(Reactivity.layer))

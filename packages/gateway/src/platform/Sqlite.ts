/**
 * The embedded SQLite client: `@effect/sql`'s `SqlClient` (statements, compiler and nested
 * transactions' savepoints are the library's; so are transactions with a tracer on) over one
 * `better-sqlite3` connection, with a leaner connection than `@effect/sql-sqlite-node`'s and a
 * leaner transaction without a tracer (see `withTransaction` below).
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

const failure = (cause: unknown) => new SqlError({ cause, message: "Failed to execute statement" })

/** A SqlClient on the SQLite file `filename` (WAL journal). */
export const make = (filename: string) =>
  Effect.gen(function*() {
    const db = new Database(filename)
    yield* Effect.addFinalizer(() => Effect.sync(() => db.close()))
    db.pragma("journal_mode = WAL")

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
      Effect.try({
        try: () => {
          const statement = prepare(sql)
          if (statement.reader) return statement.all(...params)
          const result = statement.run(...params)
          return raw ? result : []
        },
        catch: failure
      })
    const values = (sql: string, params: ReadonlyArray<unknown>): Effect.Effect<ReadonlyArray<ReadonlyArray<unknown>>, SqlError> =>
      Effect.try({
        try: () => {
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
        },
        catch: failure
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
    let group: Group | undefined

    // The connection's lock: held by the member running (from its `BEGIN` to its `RELEASE`), or
    // by a statement outside a transaction that had to wait for one (it commits the open group
    // first). A commit that falls due while the lock is held is made as it is released. A free lock is taken in the step that asks for it. Released, it wakes every waiter and each
    // tries again in its own step, as Effect's `Semaphore` does: a waiter interrupted once woken
    // takes nothing and leaves the others awake. (Effect's `Semaphore` costs about 20 Effect steps
    // for a free permit taken and given back, and a transaction's `BEGIN` and commit as effects of
    // their own about 60 more: measured 98 steps for a transaction of one `INSERT` against 5 for
    // the `INSERT` alone.) Waiters are rare: a transaction holds the lock only while its effect
    // runs, and the gateway's transactions run their statements without waiting on anything else.
    let locked = false
    const waiting = new Set<() => void>()
    /** A group whose commit is due but found the lock held: committed as the lock is released. */
    let flushDue = false
    const unlock = () => {
      locked = false
      if (flushDue) {
        flushDue = false
        flushNow()
      }
      if (waiting.size > 0) for (const wake of Array.from(waiting)) wake()
    }
    /** Takes the lock, once free (interruptible while it waits; the caller makes the rest safe). */
    const take: Effect.Effect<void> = Effect.suspend(() => {
      if (!locked) {
        locked = true
        return Effect.void
      }
      return Effect.async<void>((resume) => {
        const wake = () => {
          waiting.delete(wake)
          resume(take)
        }
        waiting.add(wake)
        return Effect.sync(() => {
          waiting.delete(wake)
        })
      })
    })
    const released = Effect.sync(unlock)
    /** Runs `e` holding the lock. */
    const withLock = <A, E>(e: Effect.Effect<A, E>) =>
      Effect.uninterruptibleMask((restore) => Effect.zipRight(restore(take), Effect.ensuring(e, released)))

    /** Commits the open group; the caller holds the connection and no member is active. */
    const flushNow = () => {
      const g = group
      if (g === undefined) return
      group = undefined
      let exit: Outcome = committed
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
    }
    const flush = Effect.sync(flushNow)
    /** Commits `g` if it is still the open group: now if the connection is free, else as it is released. */
    const flushGroup = (g: Group) => {
      if (group !== g) return
      if (locked) flushDue = true
      else flushNow()
    }
    /**
     * Calls `done` with `g`'s outcome once its commit is durable (or failed). The first member to
     * wait schedules the commit for the end of the event-loop turn, so that the transactions begun
     * in this turn join it; a full group commits at once. A plain callback rather than a
     * `Deferred` or a chain of effects: a member waits where it cannot be interrupted (the end of
     * its transaction is), and each effect on the way would be a step of every transaction.
     */
    const awaitGroup = (g: Group, done: (outcome: Outcome) => void) => {
      if (g.outcome !== undefined) return done(g.outcome)
      g.waiting.push(done)
      if (g.members >= groupLimit) {
        flushGroup(g)
      } else if (!g.flushing) {
        g.flushing = true
        setImmediate(() => flushGroup(g))
      }
    }
    /** Fails the open group whose SQLite transaction is gone (SQLite rolled it back on an error). */
    const brokenGroup = (cause: unknown) => {
      const g = group
      if (g === undefined || db.inTransaction) return
      group = undefined
      settle(g, Exit.fail(failure(cause)))
    }

    /** A new member of the open group (opening it if none is): its savepoint. The caller holds the lock. */
    const beginMember = (): Group => {
      if (group === undefined) {
        exec("BEGIN")
        group = { members: 0, flushing: false, outcome: undefined, waiting: [] }
      }
      exec("SAVEPOINT genway_member")
      group.members++
      return group
    }
    /** Ends a member that succeeded: its savepoint released, the lock given up. Returns the error if the release failed. */
    const releaseMember = (): SqlError | undefined => {
      try {
        exec("RELEASE genway_member")
      } catch (cause) {
        brokenGroup(cause)
        unlock()
        return failure(cause)
      }
      unlock()
      return undefined
    }
    /** Ends a member that failed: its savepoint rolled back, the lock given up. */
    const rollbackMember = (g: Group) => {
      let error: unknown
      try {
        exec("ROLLBACK TO genway_member")
        exec("RELEASE genway_member")
      } catch (cause) {
        error = cause
      }
      if (error !== undefined && !db.inTransaction) {
        brokenGroup(error)
        return unlock()
      }
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
      }
      unlock()
    }

    /** A member as the library's transactions use it (with a tracer on): `BEGIN`, `COMMIT`, `ROLLBACK` as statements. */
    const member = () => {
      let g: Group | undefined
      let holds = true
      let open = false
      const begin = Effect.try({
        try: () => {
          g = beginMember()
          open = true
          return []
        },
        catch: (cause) => {
          holds = false
          unlock()
          return failure(cause)
        }
      })
      const commit = Effect.suspend(() => {
        open = false
        holds = false
        const error = releaseMember()
        if (error !== undefined) return Effect.fail(error)
        return Effect.async<ReadonlyArray<never>, SqlError>((resume) => awaitGroup(g!, resume))
      })
      const rollback = Effect.sync(() => {
        if (!holds) return []
        holds = false
        if (open && g !== undefined) {
          open = false
          rollbackMember(g)
        } else {
          unlock()
        }
        return []
      })
      const own: Connection = {
        ...direct,
        executeUnprepared: (sql, params, transformRows) =>
          sql === "BEGIN" ? begin : sql === "COMMIT" ? commit : sql === "ROLLBACK" ? rollback : direct.executeUnprepared(sql, params, transformRows)
      }
      return { connection: own, release: Effect.asVoid(rollback) }
    }

    const connection = (gate: <A>(e: Effect.Effect<A, SqlError>) => Effect.Effect<A, SqlError>): Connection => ({
      execute: (sql, params, transformRows) => gate(transformRows ? Effect.map(run(sql, params, false), transformRows) : run(sql, params, false)),
      executeRaw: (sql, params) => gate(run(sql, params, true)),
      executeValues: (sql, params) => gate(values(sql, params)),
      executeUnprepared: (sql, params, transformRows) =>
        gate(transformRows ? Effect.map(run(sql, params, false), transformRows) : run(sql, params, false)),
      executeStream: () => Effect.dieMessage("executeStream is not supported by the embedded SQLite client") as never
    })
    // Outside a transaction: once the open group is committed (a statement outside a transaction
    // never sees, nor joins, writes not yet durable), at once if the connection is free, else
    // after whoever holds it. Between members the connection is free: committing needs no lock.
    const outside = connection((e) =>
      Effect.suspend(() => (locked ? withLock(Effect.zipRight(flush, e)) : group === undefined ? e : (flushNow(), e)))
    )
    // Inside a member: the member holds the connection.
    const direct = connection((e) => e)

    const transactionAcquirer = Effect.uninterruptibleMask((restore) =>
      Effect.zipRight(
        restore(take),
        Effect.flatMap(Effect.scope, (scope) => {
          const m = member()
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
    // A transaction without a tracer: the lock taken in the step that asks for it when free, the
    // member's `BEGIN`, `RELEASE` and `ROLLBACK TO` run as plain code around `effect`, and the
    // transaction's connection set in the fiber's context for `effect` alone (what
    // `Effect.locally` does, restored on every way out of it: the region is uninterruptible but
    // for `effect` and the wait for the lock). About 15 Effect steps besides `effect`'s own.
    const withTransaction = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E | SqlError, R> =>
      Effect.withFiberRuntime<A, E | SqlError, R>((runtimeFiber) => {
        const fiber = runtimeFiber as typeof runtimeFiber & Settable
        const context = fiber.currentContext
        // Nested transactions (savepoints) stay the library's.
        if (traced(fiber) || Context.getOption(context, Client.TransactionConnection)._tag === "Some") return library(effect)
        return Effect.uninterruptibleMask((restore) => {
          const run = (): Effect.Effect<A, E | SqlError, R> => {
            let g: Group
            try {
              g = beginMember()
            } catch (cause) {
              unlock()
              return Effect.fail(failure(cause))
            }
            fiber.setFiberRef(FiberRef.currentContext, Context.add(context, Client.TransactionConnection, [direct, 0]))
            return Effect.matchCauseEffect(restore(effect), {
              onFailure: (cause) => {
                fiber.setFiberRef(FiberRef.currentContext, context)
                rollbackMember(g)
                return Effect.failCause(cause)
              },
              onSuccess: (a) => {
                fiber.setFiberRef(FiberRef.currentContext, context)
                // A failed commit is a defect of the transaction, as in the library's path.
                const error = releaseMember()
                if (error !== undefined) return Effect.die(error)
                return Effect.async<A>((resume) => awaitGroup(g, (outcome) => resume(Exit.isSuccess(outcome) ? Effect.succeed(a) : Effect.as(Effect.orDie(outcome), a))))
              }
            })
          }
          if (!locked) {
            locked = true
            return run()
          }
          return Effect.flatMap(restore(take), run)
        })
      })
    return Object.assign(client, { withTransaction }) as Client.SqlClient
  })

/**
 * The fiber's own setter of a fiber-local value (what `FiberRef.set` runs, as one step of its own),
 * which the runtime's fibers have and the `RuntimeFiber` interface does not show.
 */
interface Settable {
  setFiberRef<A>(self: FiberRef.FiberRef<A>, value: A): void
}

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
export const layer = (filename: string): Layer.Layer<Client.SqlClient> =>
  Layer.scoped(Client.SqlClient, make(filename)).pipe(Layer.provide(Reactivity.layer))

/**
 * The embedded SQLite client (platform/Sqlite.ts): statements outside a transaction never run
 * inside another fiber's open transaction (they wait for it), savepoints and rollbacks behave as
 * `@effect/sql` defines them, a failing statement is an `SqlError` with nothing half-applied, and
 * transactions that meet commit together: each returns only once the shared commit is durable, a
 * member that fails rolls back alone, and a commit that fails fails every member; a transaction
 * interrupted while it waits for the connection writes nothing, the transaction's connection is in
 * the fiber's context inside it only, and a commit that falls due while another transaction holds
 * the connection is made as that one ends. The gateway's own database runs WAL, `synchronous =
 * NORMAL` and its temporary store in memory.
 * Ordering is driven by Deferreds, not timers. Every case runs twice: untraced (the gateway without
 * an OTLP exporter: the client's lean statement and transaction path) and traced (the library's
 * path, with its spans, which telemetry keeps).
 */
import * as SqlClient from "@effect/sql/SqlClient"
import Database from "better-sqlite3"
import { assert, describe, it } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as Tracer from "effect/Tracer"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as GatewayDatabase from "../src/platform/Database.js"
import * as Sqlite from "../src/platform/Sqlite.js"

const modes = ["untraced", "traced"] as const

const withDb = <A, E>(
  mode: typeof modes[number],
  body: (sql: SqlClient.SqlClient, file: string) => Effect.Effect<A, E>,
  options: Sqlite.Options = {}
) => {
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "genway-sqlite-")), "t.db")
  return Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    yield* sql`CREATE TABLE t (id TEXT PRIMARY KEY, n INTEGER NOT NULL)`
    return yield* body(sql, file)
  }).pipe(Effect.provide(Sqlite.layer(file, options)), Effect.withTracerEnabled(mode === "traced"))
}

/** What another connection to the file sees: only what is committed. */
const committedIds = (file: string) => {
  const other = new Database(file, { readonly: true })
  try {
    return other.prepare("SELECT id FROM t ORDER BY id").all().map((r) => (r as { id: string }).id)
  } finally {
    other.close()
  }
}

const ids = (sql: SqlClient.SqlClient) => Effect.map(sql`SELECT id FROM t ORDER BY id`, (rows) => rows.map((r) => r.id as string))

/**
 * Forks a transaction that inserts `id` (telling `inserted`), then waits for `go` and commits, or
 * gives up if `fails`.
 */
const holding = (sql: SqlClient.SqlClient, id: string, fails = false) =>
  Effect.gen(function*() {
    const inserted = yield* Deferred.make<void>()
    const go = yield* Deferred.make<void>()
    const fiber = yield* sql.withTransaction(Effect.gen(function*() {
      yield* sql`INSERT INTO t (id, n) VALUES (${id}, 1)`
      yield* Deferred.succeed(inserted, undefined)
      yield* Deferred.await(go)
      if (fails) return yield* Effect.fail(`${id} gives up` as const)
    })).pipe(Effect.fork)
    return { fiber, inserted, go }
  })

/** Lets every other runnable fiber run until it blocks. */
const settle = Effect.repeatN(Effect.yieldNow(), 50)

/** Lets the event loop finish its turn (a group's commit is scheduled for the end of one). */
const nextTurn = Effect.promise(() => new Promise<void>((resolve) => setImmediate(resolve)))

/** Whether the fiber runs inside a transaction (its context holds the transaction's connection). */
const inTransaction = Effect.map(Effect.serviceOption(SqlClient.TransactionConnection), Option.isSome)

describe.each(modes)("embedded SQLite client (%s)", (mode) => {
  it.effect("a statement outside a transaction waits for the open one, and is not rolled back with it", () =>
    withDb(mode, (sql) =>
      Effect.gen(function*() {
        const inserted = yield* Deferred.make<void>()
        const release = yield* Deferred.make<void>()
        const tx = yield* sql.withTransaction(Effect.gen(function*() {
          yield* sql`INSERT INTO t (id, n) VALUES ('a', 1)`
          yield* Deferred.succeed(inserted, undefined)
          yield* Deferred.await(release)
          return yield* Effect.fail("roll back" as const)
        })).pipe(Effect.fork)
        yield* Deferred.await(inserted)
        // Another fiber reads and writes while the transaction is open: it must wait for it.
        const other = yield* Effect.gen(function*() {
          const seen = yield* ids(sql)
          yield* sql`INSERT INTO t (id, n) VALUES ('b', 2)`
          return seen
        }).pipe(Effect.fork)
        yield* settle
        assert.isTrue((yield* Fiber.poll(other))._tag === "None", "the outside statement ran inside the open transaction")
        yield* Deferred.succeed(release, undefined)
        const txExit = yield* Fiber.await(tx)
        assert.isTrue(Exit.isFailure(txExit))
        // It saw no uncommitted row, and its own write survived the rollback.
        assert.deepStrictEqual(yield* Fiber.join(other), [])
        assert.deepStrictEqual(yield* ids(sql), ["b"])
      })
    ))

  it.effect("a failed savepoint rolls back alone; the outer transaction commits the rest", () =>
    withDb(mode, (sql) =>
      Effect.gen(function*() {
        yield* sql.withTransaction(Effect.gen(function*() {
          yield* sql`INSERT INTO t (id, n) VALUES ('a', 1)`
          const inner = yield* Effect.exit(sql.withTransaction(Effect.gen(function*() {
            yield* sql`INSERT INTO t (id, n) VALUES ('b', 2)`
            // The primary key refuses a second 'a'.
            yield* sql`INSERT INTO t (id, n) VALUES ('a', 3)`
          })))
          assert.isTrue(Exit.isFailure(inner))
          yield* sql`INSERT INTO t (id, n) VALUES ('c', 4)`
        }))
        assert.deepStrictEqual(yield* ids(sql), ["a", "c"])
      })
    ))

  it.effect("a failing statement is an SqlError and leaves the connection usable", () =>
    withDb(mode, (sql) =>
      Effect.gen(function*() {
        const failed = yield* Effect.flip(sql`INSERT INTO missing_table (x) VALUES (1)`)
        assert.strictEqual(failed._tag, "SqlError")
        const failedTx = yield* Effect.exit(sql.withTransaction(sql`INSERT INTO t (id, n) VALUES (NULL, NULL)`))
        assert.isTrue(Exit.isFailure(failedTx))
        yield* sql`INSERT INTO t (id, n) VALUES ('z', 1)`
        assert.deepStrictEqual(yield* ids(sql), ["z"])
        const raw = yield* sql`SELECT n FROM t WHERE id = ${"z"}`.values
        assert.deepStrictEqual(raw, [[1]])
      })
    ))

  it.effect("transactions that meet commit together: each returns only once the shared commit is done; one that fails rolls back alone", () =>
    withDb(mode, (sql, file) =>
      Effect.gen(function*() {
        const a = yield* holding(sql, "a")
        yield* Deferred.await(a.inserted)
        // b waits for the connection while a runs, then joins a's commit.
        const b = yield* holding(sql, "b", true)
        yield* settle
        yield* Deferred.succeed(a.go, undefined)
        yield* Deferred.await(b.inserted)
        yield* settle
        // a's work is done, but its commit is b's too: a has not returned, nothing is visible.
        assert.isTrue((yield* Fiber.poll(a.fiber))._tag === "None", "a returned before its commit")
        assert.deepStrictEqual(committedIds(file), [])
        yield* Deferred.succeed(b.go, undefined)
        assert.isTrue(Exit.isFailure(yield* Fiber.await(b.fiber)))
        yield* Fiber.join(a.fiber)
        assert.deepStrictEqual(committedIds(file), ["a"])
      })
    ))

  it.effect("a transaction interrupted while it waits for the connection writes nothing; the others still get it, in turn", () =>
    withDb(mode, (sql, file) =>
      Effect.gen(function*() {
        const a = yield* holding(sql, "a")
        yield* Deferred.await(a.inserted)
        const b = yield* sql.withTransaction(sql`INSERT INTO t (id, n) VALUES ('b', 1)`).pipe(Effect.fork)
        const c = yield* sql.withTransaction(sql`INSERT INTO t (id, n) VALUES ('c', 1)`).pipe(Effect.fork)
        yield* settle
        assert.isTrue((yield* Fiber.poll(c))._tag === "None", "c ran while a held the connection")
        // (Untraced, b stops waiting at once; traced, the library waits for the connection
        // uninterruptibly, and b's work is interrupted as it starts: either way it writes nothing.)
        yield* Fiber.interruptFork(b)
        yield* Deferred.succeed(a.go, undefined)
        yield* Fiber.join(a.fiber)
        yield* Fiber.join(c)
        assert.isTrue(Exit.isInterrupted(yield* Fiber.await(b)))
        assert.deepStrictEqual(committedIds(file), ["a", "c"])
        // Nothing is left holding the connection.
        yield* sql.withTransaction(sql`INSERT INTO t (id, n) VALUES ('d', 1)`)
        yield* sql`INSERT INTO t (id, n) VALUES ('e', 1)`
        assert.deepStrictEqual(committedIds(file), ["a", "c", "d", "e"])
      })
    ))

  it.effect("the transaction's connection is in the fiber's context inside it only: after a commit, a failure, an interruption", () =>
    withDb(mode, (sql) =>
      Effect.gen(function*() {
        assert.isFalse(yield* inTransaction)
        assert.isTrue(yield* sql.withTransaction(inTransaction))
        assert.isFalse(yield* inTransaction)
        const failed = yield* Effect.exit(sql.withTransaction(Effect.zipRight(sql`INSERT INTO t (id, n) VALUES ('a', 1)`, Effect.fail("no" as const))))
        assert.isTrue(Exit.isFailure(failed))
        assert.isFalse(yield* inTransaction)
        const interrupted = yield* Effect.exit(sql.withTransaction(Effect.zipRight(sql`INSERT INTO t (id, n) VALUES ('b', 1)`, Effect.interrupt)))
        assert.isTrue(Exit.isInterrupted(interrupted))
        assert.isFalse(yield* inTransaction)
        // Both were rolled back, and what follows runs outside any transaction.
        yield* sql`INSERT INTO t (id, n) VALUES ('c', 1)`
        assert.deepStrictEqual(yield* ids(sql), ["c"])
      })
    ))

  it.effect("a commit that falls due while another transaction holds the connection is made as that one ends", () =>
    withDb(mode, (sql, file) =>
      Effect.gen(function*() {
        // a ends its work and waits for its group's commit, due at the end of this event-loop turn.
        const a = yield* sql.withTransaction(sql`INSERT INTO t (id, n) VALUES ('a', 1)`).pipe(Effect.fork)
        yield* settle
        // b joins the open group and holds the connection past that turn.
        const b = yield* holding(sql, "b")
        yield* Deferred.await(b.inserted)
        yield* nextTurn
        yield* nextTurn
        assert.isTrue((yield* Fiber.poll(a))._tag === "None", "a returned before its commit")
        assert.deepStrictEqual(committedIds(file), [], "the group was committed while b was still running")
        yield* Deferred.succeed(b.go, undefined)
        yield* Fiber.join(b.fiber)
        yield* Fiber.join(a)
        assert.deepStrictEqual(committedIds(file), ["a", "b"])
      })
    ))

  it.effect("a commit that fails fails every transaction in it, and the connection stays usable", () =>
    withDb(mode, (sql, file) =>
      Effect.gen(function*() {
        yield* sql`PRAGMA foreign_keys = ON`
        yield* sql`CREATE TABLE parent (id TEXT PRIMARY KEY)`
        yield* sql`CREATE TABLE child (id TEXT PRIMARY KEY, parent TEXT REFERENCES parent (id) DEFERRABLE INITIALLY DEFERRED)`
        const a = yield* holding(sql, "a")
        yield* Deferred.await(a.inserted)
        // b's row breaks a deferred foreign key: the shared commit refuses both.
        const b = yield* sql.withTransaction(sql`INSERT INTO child (id, parent) VALUES ('c', 'missing')`).pipe(Effect.fork)
        yield* settle
        yield* Deferred.succeed(a.go, undefined)
        assert.isTrue(Exit.isFailure(yield* Fiber.await(a.fiber)))
        assert.isTrue(Exit.isFailure(yield* Fiber.await(b)))
        assert.deepStrictEqual(committedIds(file), [])
        yield* sql.withTransaction(sql`INSERT INTO t (id, n) VALUES ('z', 1)`)
        assert.deepStrictEqual(committedIds(file), ["z"])
        assert.deepStrictEqual(yield* ids(sql), ["z"])
      })
    ))
})

describe.each(modes)("embedded SQLite client, another connection writing the file (%s)", (mode) => {
  it.live("a write and a transaction that find the database locked wait without holding up the event loop, then run once it is free", () =>
    withDb(mode, (sql, file) =>
      Effect.gen(function*() {
        // Another connection (the answers' commit thread, a CLI) holds the write lock.
        const other = new Database(file)
        other.exec("BEGIN IMMEDIATE")
        other.prepare("INSERT INTO t (id, n) VALUES ('other', 1)").run()
        const write = yield* Effect.fork(sql`INSERT INTO t (id, n) VALUES ('direct', 1)`)
        const member = yield* Effect.fork(sql.withTransaction(sql`INSERT INTO t (id, n) VALUES ('member', 1)`))
        // The event loop turns while both wait: SQLite's own busy handler would sleep the thread
        // (this fiber with it) until its timeout, and then fail them.
        for (let i = 0; i < 20; i++) yield* nextTurn
        assert.isNull(write.unsafePoll(), "the write waits")
        assert.isNull(member.unsafePoll(), "the transaction waits")
        other.exec("COMMIT")
        other.close()
        yield* Fiber.join(write)
        yield* Fiber.join(member)
        assert.deepStrictEqual(committedIds(file), ["direct", "member", "other"])
      })
    ))

  it.live("a write tried again while the database was locked waits for a transaction begun meanwhile, and is not rolled back with it", () =>
    withDb(mode, (sql, file) =>
      Effect.gen(function*() {
        const other = new Database(file)
        other.exec("BEGIN IMMEDIATE")
        // The write finds the file locked and waits to try again.
        const write = yield* Effect.fork(sql`INSERT INTO t (id, n) VALUES ('w', 1)`)
        for (let i = 0; i < 5; i++) yield* nextTurn
        assert.isNull(write.unsafePoll())
        other.exec("COMMIT")
        other.close()
        // Before the write's next try, a transaction begins, writes, and holds its group open.
        const tx = yield* holding(sql, "t", true)
        yield* Deferred.await(tx.inserted)
        for (let i = 0; i < 5; i++) yield* nextTurn
        assert.isNull(write.unsafePoll(), "the write waits for the transaction instead of running inside it")
        // The transaction gives up: its write is rolled back, the other one is not.
        yield* Deferred.succeed(tx.go, undefined)
        assert.isTrue(Exit.isFailure(yield* Fiber.await(tx.fiber)))
        yield* Fiber.join(write)
        assert.deepStrictEqual(committedIds(file), ["w"])
      })
    ))

  it.live("past its busy timeout, a write that finds the database locked fails as an SqlError; the client stays usable", () =>
    withDb(mode, (sql, file) =>
      Effect.gen(function*() {
        const other = new Database(file)
        other.exec("BEGIN IMMEDIATE")
        const started = performance.now()
        const failed = yield* Effect.exit(sql`INSERT INTO t (id, n) VALUES ('late', 1)`)
        assert.isTrue(Exit.isFailure(failed) && failed.cause._tag === "Fail" && failed.cause.error._tag === "SqlError")
        // Tried again until the timeout, not given up at the first refusal.
        assert.isAtLeast(performance.now() - started, 20)
        other.exec("ROLLBACK")
        other.close()
        yield* sql.withTransaction(sql`INSERT INTO t (id, n) VALUES ('after', 1)`)
        assert.deepStrictEqual(committedIds(file), ["after"])
      }), { busyTimeoutMs: 20 }))
})

describe.each(modes)("embedded SQLite client with a commit gap (%s)", (mode) => {
  // A gap no test outlasts: what commits early here is committed by the rules, not by the timer.
  const gap = { commitGapMs: 600_000 }
  const insert = (sql: SqlClient.SqlClient, id: string) => sql.withTransaction(sql`INSERT INTO t (id, n) VALUES (${id}, 1)`)
  const turns = Effect.repeatN(nextTurn, 3)

  it.effect("a group that starts within the gap after the last commit waits; the next statement outside commits it, and its members return", () =>
    withDb(mode, (sql, file) =>
      Effect.gen(function*() {
        // The first commit has no commit before it: it is made at the end of its turn.
        yield* insert(sql, "a")
        assert.deepStrictEqual(committedIds(file), ["a"])
        const b = yield* Effect.fork(insert(sql, "b"))
        yield* settle
        const c = yield* Effect.fork(insert(sql, "c"))
        yield* settle
        yield* turns
        assert.isTrue((yield* Fiber.poll(b))._tag === "None", "b returned before its commit")
        assert.isTrue((yield* Fiber.poll(c))._tag === "None", "c returned before its commit")
        assert.deepStrictEqual(committedIds(file), ["a"], "a group within the gap was committed")
        // A statement outside a transaction commits the open group before it runs.
        assert.deepStrictEqual(yield* ids(sql), ["a", "b", "c"])
        assert.deepStrictEqual(committedIds(file), ["a", "b", "c"])
        yield* Fiber.join(b)
        yield* Fiber.join(c)
      }), gap))

  it.effect("after a commit that carried a full group, the next group commits at the end of its turn", () =>
    withDb(mode, (sql, file) =>
      Effect.gen(function*() {
        yield* insert(sql, "a")
        const many = yield* Effect.forEach(Array.from({ length: 16 }, (_, i) => `m${String(i).padStart(2, "0")}`), (id) => Effect.fork(insert(sql, id)))
        yield* settle
        yield* turns
        assert.deepStrictEqual(committedIds(file), ["a"])
        yield* sql`SELECT 1`
        yield* Effect.forEach(many, Fiber.join)
        assert.strictEqual(committedIds(file).length, 17)
        const z = yield* Effect.fork(insert(sql, "z"))
        yield* turns
        assert.isTrue((yield* Fiber.poll(z))._tag === "Some", "the group after a full one waited for the gap")
        assert.include(committedIds(file), "z")
      }), gap))

  it.effect("without a gap, a group right after a commit commits at the end of its turn", () =>
    withDb(mode, (sql, file) =>
      Effect.gen(function*() {
        yield* insert(sql, "a")
        const b = yield* Effect.fork(insert(sql, "b"))
        yield* turns
        assert.isTrue((yield* Fiber.poll(b))._tag === "Some")
        assert.deepStrictEqual(committedIds(file), ["a", "b"])
      }), { commitGapMs: 0 }))
})

describe("embedded SQLite client, spans", () => {
  it.effect("traced, statements and transactions make the library's spans; untraced, none is made", () =>
    Effect.gen(function*() {
      const names: Array<string> = []
      const tracer = Tracer.make({
        span: (name, parent, context, links, startTime, kind, options) => {
          names.push(name)
          return Effect.runSync(Effect.map(Effect.tracer, (t) => t.span(name, parent, context, links, startTime, kind, options)))
        },
        context: (f) => f()
      })
      const run = (traced: boolean) =>
        withDb(traced ? "traced" : "untraced", (sql) =>
          Effect.gen(function*() {
            names.length = 0
            yield* sql.withTransaction(sql`INSERT INTO t (id, n) VALUES ('a', 1)`)
            assert.deepStrictEqual(yield* ids(sql), ["a"])
            return [...names]
          })).pipe(Effect.withTracer(tracer))
      assert.deepStrictEqual(yield* run(false), [])
      const traced = yield* run(true)
      assert.includeMembers(traced, ["sql.transaction", "sql.execute"])
    }))
})

describe("the gateway's SQLite database", () => {
  it.effect("WAL, synchronous NORMAL, and a statement's temporary journal kept in memory", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const one = (rows: ReadonlyArray<Record<string, unknown>>) => Object.values(rows[0] ?? {})[0]
      assert.strictEqual(one(yield* sql`PRAGMA journal_mode`), "wal")
      // 1 = NORMAL; 2 = MEMORY (a multi-row write inside a savepoint would otherwise spill its
      // undo journal into a temporary file past 64 KiB, one file per batch of kept answers).
      assert.strictEqual(one(yield* sql`PRAGMA synchronous`), 1)
      assert.strictEqual(one(yield* sql`PRAGMA temp_store`), 2)
    }).pipe(
      Effect.provide(GatewayDatabase.sqlite(path.join(fs.mkdtempSync(path.join(os.tmpdir(), "genway-sqlite-")), "genway.db"))),
      Effect.withTracerEnabled(false)
    ))
})

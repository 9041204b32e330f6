/**
 * The embedded SQLite client (platform/Sqlite.ts): statements outside a transaction never run
 * inside another fiber's open transaction (they wait for it), savepoints and rollbacks behave as
 * `@effect/sql` defines them, a failing statement is an `SqlError` with nothing half-applied, and
 * transactions that meet commit together: each returns only once the shared commit is durable, a
 * member that fails rolls back alone, and a commit that fails fails every member.
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
import * as Tracer from "effect/Tracer"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as Sqlite from "../src/platform/Sqlite.js"

const modes = ["untraced", "traced"] as const

const withDb = <A, E>(mode: typeof modes[number], body: (sql: SqlClient.SqlClient, file: string) => Effect.Effect<A, E>) => {
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "genway-sqlite-")), "t.db")
  return Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    yield* sql`CREATE TABLE t (id TEXT PRIMARY KEY, n INTEGER NOT NULL)`
    return yield* body(sql, file)
  }).pipe(Effect.provide(Sqlite.layer(file)), Effect.withTracerEnabled(mode === "traced"))
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

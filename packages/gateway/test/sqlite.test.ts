/**
 * The embedded SQLite client (platform/Sqlite.ts): statements outside a transaction never run
 * inside another fiber's open transaction (they wait for it), savepoints and rollbacks behave as
 * `@effect/sql` defines them, and a failing statement is an `SqlError` with nothing half-applied.
 * Ordering is driven by Deferreds, not timers.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { assert, describe, it } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as Sqlite from "../src/platform/Sqlite.js"

const withDb = <A, E>(body: (sql: SqlClient.SqlClient) => Effect.Effect<A, E>) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    yield* sql`CREATE TABLE t (id TEXT PRIMARY KEY, n INTEGER NOT NULL)`
    return yield* body(sql)
  }).pipe(Effect.provide(Sqlite.layer(path.join(fs.mkdtempSync(path.join(os.tmpdir(), "genway-sqlite-")), "t.db"))))

const ids = (sql: SqlClient.SqlClient) => Effect.map(sql`SELECT id FROM t ORDER BY id`, (rows) => rows.map((r) => r.id as string))

/** Lets every other runnable fiber run until it blocks. */
const settle = Effect.repeatN(Effect.yieldNow(), 50)

describe("embedded SQLite client", () => {
  it.effect("a statement outside a transaction waits for the open one, and is not rolled back with it", () =>
    withDb((sql) =>
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
    withDb((sql) =>
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
    withDb((sql) =>
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
})

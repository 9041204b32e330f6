/**
 * Vendor progress figures written behind the polls (tasks/Progress.ts): read at once in this
 * process, written together (a task's latest figure only), in one commit for many tasks, at the
 * scope's close too; a write that fails is logged, not the poll's failure. On SQLite, and on
 * PostgreSQL when `GATEWAY_TEST_DATABASE_URL` is set (skipped otherwise, saying so).
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { assert, describe, it, layer } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Scope from "effect/Scope"
import * as Progress from "../src/tasks/Progress.js"
import * as Harness from "./harness.js"
import * as Pg from "./pg.js"

/** What the table holds for `ids`, as `id → percent`. */
const stored = (ids: ReadonlyArray<string>) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.map(
      sql<{ readonly task_id: string; readonly percent: number }>`SELECT task_id, percent FROM task_progress WHERE ${sql.in("task_id", ids)}`,
      (rows) => Object.fromEntries(rows.map((r) => [r.task_id, Number(r.percent)]))
    ))

/** Figures of 300 tasks (more than the largest statement's rows), one task's twice, then written. */
const manyAtOnce = (writer: Context.Tag.Service<Progress.ProgressWriter>, prefix: string) =>
  Effect.gen(function*() {
    const ids = Array.from({ length: 300 }, (_, i) => `${prefix}-${i}`)
    for (const [i, id] of ids.entries()) yield* writer.record(id, i % 101, 1_000 + i)
    yield* writer.record(ids[7]!, 42.6, 5_000)
    yield* writer.record(ids[8]!, 250, 5_000)
    // Not a number: ignored, not a failure of the others' statement.
    yield* writer.record(ids[9]!, Number.NaN, 5_000)
    // Before any write, this process reads what it was given.
    assert.deepStrictEqual(yield* writer.latest(ids[7]!), { percent: 43, at: 5_000 })
    yield* writer.flush
    const rows = yield* stored(ids)
    assert.strictEqual(Object.keys(rows).length, 300)
    for (const [i, id] of ids.entries()) assert.strictEqual(rows[id], i === 7 ? 43 : i === 8 ? 100 : i % 101, id)
    assert.deepStrictEqual(yield* writer.latest(ids[299]!), { percent: 299 % 101, at: 1_299 })
    // A newer figure replaces the stored one.
    yield* writer.record(ids[0]!, 99, 6_000)
    yield* writer.flush
    assert.strictEqual((yield* stored([ids[0]!]))[ids[0]!], 99)
    assert.isUndefined(yield* writer.latest(`${prefix}-none`))
  })

describe("progress figures written behind the polls", () => {
  layer(Harness.layer())((it) => {
    it.effect("SQLite: read at once, written together, the latest figure of a task only", () =>
      Effect.flatMap(Progress.ProgressWriter, (writer) => manyAtOnce(writer, "sqlite")))

    it.effect("SQLite: the figures of one turn are one commit (fewer WAL frames than figures), without anyone waiting", () =>
      Effect.gen(function*() {
        const writer = yield* Progress.ProgressWriter
        const sql = yield* SqlClient.SqlClient
        const ids = Array.from({ length: 40 }, (_, i) => `turn-${i}`)
        yield* sql`PRAGMA wal_checkpoint(TRUNCATE)`
        // Each poll hands its figure over and goes on; the write comes at the turn's end.
        yield* Effect.forEach(ids, (id, i) => writer.record(id, i, 1), { concurrency: "unbounded", discard: true })
        yield* Effect.promise(() => new Promise<void>((resolve) => setImmediate(resolve)))
        yield* writer.flush
        const [wal] = yield* sql<{ readonly log: number }>`PRAGMA wal_checkpoint(PASSIVE)`
        assert.deepStrictEqual(Object.keys(yield* stored(ids)).length, 40)
        assert.isTrue(wal!.log < ids.length, `${wal!.log} WAL frames for ${ids.length} figures: each was committed on its own`)
      }))

    it.effect("SQLite: a write that fails drops its figures (logged) and the next ones are written", () =>
      Effect.gen(function*() {
        const writer = yield* Progress.ProgressWriter
        const sql = yield* SqlClient.SqlClient
        yield* sql`ALTER TABLE task_progress RENAME TO task_progress_away`
        yield* writer.record("lost", 10, 1)
        const exit = yield* Effect.exit(writer.flush)
        yield* sql`ALTER TABLE task_progress_away RENAME TO task_progress`
        assert.isTrue(Exit.isSuccess(exit))
        assert.deepStrictEqual(yield* stored(["lost"]), {})
        // Not kept in memory either: the next poll reports it again.
        assert.isUndefined(yield* writer.latest("lost"))
        yield* writer.record("kept", 20, 2)
        yield* writer.flush
        assert.deepStrictEqual(yield* stored(["kept"]), { kept: 20 })
      }))

    it.effect("SQLite: closing the writer's scope writes what is pending", () =>
      Effect.gen(function*() {
        const scope = yield* Scope.make()
        const ctx = yield* Layer.buildWithScope(Progress.layer, scope)
        const own = Context.get(ctx, Progress.ProgressWriter)
        yield* own.record("at-close", 77, 3)
        yield* Scope.close(scope, Exit.void)
        assert.deepStrictEqual(yield* stored(["at-close"]), { "at-close": 77 })
      }))
  })

  describe.skipIf(!Pg.available("progress.test.ts"))("PostgreSQL", () => {
    it.scoped("read at once, written together, the latest figure of a task only", () =>
      Effect.gen(function*() {
        const { replica } = yield* Pg.privateSchema
        const ctx = yield* Layer.build(replica(Harness.tempDir()))
        yield* manyAtOnce(Context.get(ctx, Progress.ProgressWriter), "pg").pipe(
          Effect.provideService(SqlClient.SqlClient, Context.get(ctx, SqlClient.SqlClient))
        )
      }))
  })
})

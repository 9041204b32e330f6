/**
 * The SQL client: embedded SQLite under the data directory by default, PostgreSQL when
 * `GATEWAY_DATABASE_URL` is set. Migrations run at startup; every store is written against
 * `SqlClient` and branches on the dialect only where SQL differs.
 */
import * as Migrator from "@effect/sql/Migrator"
import * as SqlClient from "@effect/sql/SqlClient"
import { PgClient } from "@effect/sql-pg"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type * as Redacted from "effect/Redacted"
import * as path from "node:path"
import init from "./migrations/0001_init.js"
import responses from "./migrations/0002_responses.js"
import webhooks from "./migrations/0003_webhooks.js"
import keys from "./migrations/0004_keys.js"
import taskCounts from "./migrations/0005_task_counts.js"
import responseInputs from "./migrations/0006_response_inputs.js"
import usage from "./migrations/0007_usage.js"
import reportedUsage from "./migrations/0008_reported_usage.js"
import taskCountShards from "./migrations/0009_task_count_shards.js"
import taskClaims from "./migrations/0010_task_claims.js"
import answerLog from "./migrations/0011_answer_log.js"
import mediaBody from "./migrations/0012_media_body.js"
import { Settings } from "./Config.js"
import * as Files from "./Files.js"
import * as Sqlite from "./Sqlite.js"

const migrate = Migrator.make({})({
  loader: Migrator.fromRecord({
    "0001_init": init,
    "0002_responses": responses,
    "0003_webhooks": webhooks,
    "0004_keys": keys,
    "0005_task_counts": taskCounts,
    "0006_response_inputs": responseInputs,
    "0007_usage": usage,
    "0008_reported_usage": reportedUsage,
    "0009_task_count_shards": taskCountShards,
    "0010_task_claims": taskClaims,
    "0011_answer_log": answerLog,
    "0012_media_body": mediaBody
  }),
  table: "genway_migrations"
})

/**
 * WAL with `synchronous = NORMAL`: a commit survives a crash of the process (SIGKILL included);
 * only a power loss may drop the last commits, never corrupt the file. A write that finds the
 * database locked by another connection (the answers' commit thread, a CLI writing keys while a
 * server runs) is tried again by the client itself (platform/Sqlite.ts), not in SQLite's busy
 * handler, which would sleep the event loop. `temp_store = MEMORY`: a statement's undo journal (a
 * multi-row write inside a savepoint, such as a batch of kept answers) stays in memory instead of
 * spilling past 64 KiB into a temporary file that is created, written and deleted for each batch
 * (measured: one such file per kept-answer batch, about 0.7 file writes per kept E2 request). Only
 * what one statement or transaction needs meanwhile is held; nothing durable moves.
 */
export const connectionPragmas: ReadonlyArray<string> = ["synchronous = NORMAL", "temp_store = MEMORY"]

const sqlitePragmas = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  for (const pragma of connectionPragmas) yield* sql.unsafe(`PRAGMA ${pragma}`)
})

/**
 * A SQLite client on `file` (created with its folder if missing) with migrations applied; its group
 * commits at most once per `commitGapMs` (platform/Sqlite.ts; its default when not given).
 */
export const sqlite = (file: string, commitGapMs?: number): Layer.Layer<SqlClient.SqlClient, unknown> =>
  Layer.unwrapEffect(Effect.sync(() => {
    if (file !== ":memory:") {
      Files.privateDir(path.dirname(file))
      // SQLite gives its -wal and -shm files the database file's mode.
      Files.privateFile(file)
    }
    return Layer.effectDiscard(Effect.zipRight(sqlitePragmas, migrate)).pipe(
      Layer.provideMerge(Sqlite.layer(file, commitGapMs === undefined ? {} : { commitGapMs }))
    )
  }))

/** A PostgreSQL client with migrations applied. */
export const postgres = (url: Redacted.Redacted<string>): Layer.Layer<SqlClient.SqlClient, unknown> =>
  Layer.effectDiscard(migrate).pipe(Layer.provideMerge(PgClient.layer({ url, maxConnections: 10 })))

/** The embedded SQLite database's file in the data directory `dataDir`. */
export const sqliteFile = (dataDir: string): string => path.join(dataDir, "genway.db")

/** The database of the settings: SQLite in the data directory, or PostgreSQL. */
export const layer: Layer.Layer<SqlClient.SqlClient, unknown, Settings> = Layer.unwrapEffect(
  Effect.map(Settings, (s) =>
    Option.match(s.databaseUrl, {
      onNone: () => sqlite(sqliteFile(s.dataDir), s.sqliteCommitGapMs),
      onSome: postgres
    })
  )
)

/** Whether the database answers (for `/readyz`). */
export const ping = Effect.flatMap(SqlClient.SqlClient, (sql) => sql`SELECT 1 AS ok`).pipe(Effect.asVoid)

/**
 * The schema: API keys, tasks with their lease and compare-and-set version, the task event log,
 * mirrored media, and settings shared by replicas (the media signing secret).
 * Times are epoch milliseconds in both dialects.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const big = sql.onDialectOrElse({ pg: () => sql.literal("BIGINT"), orElse: () => sql.literal("INTEGER") })
  const serial = sql.onDialectOrElse({
    pg: () => sql.literal("BIGSERIAL PRIMARY KEY"),
    orElse: () => sql.literal("INTEGER PRIMARY KEY AUTOINCREMENT")
  })

  yield* sql`CREATE TABLE api_keys (
    id TEXT PRIMARY KEY,
    tenant TEXT NOT NULL,
    name TEXT,
    hash TEXT NOT NULL UNIQUE,
    prefix TEXT NOT NULL,
    created_at ${big} NOT NULL,
    revoked_at ${big}
  )`

  yield* sql`CREATE TABLE tasks (
    id TEXT PRIMARY KEY,
    tenant TEXT NOT NULL,
    entry_id TEXT NOT NULL,
    vendor TEXT NOT NULL,
    mode TEXT NOT NULL,
    status TEXT NOT NULL,
    request TEXT NOT NULL,
    hints TEXT NOT NULL,
    idempotency_key TEXT,
    request_hash TEXT,
    upstream_model TEXT NOT NULL,
    submit_state TEXT NOT NULL,
    upstream_ref TEXT,
    attempts INTEGER NOT NULL DEFAULT 0,
    next_run_at ${big} NOT NULL,
    deadline_at ${big} NOT NULL,
    lease_owner TEXT,
    lease_until ${big},
    submitted_at ${big},
    created_at ${big} NOT NULL,
    updated_at ${big} NOT NULL,
    finished_at ${big},
    error_code INTEGER,
    error_title TEXT,
    error_detail TEXT,
    result TEXT,
    version INTEGER NOT NULL DEFAULT 0
  )`
  yield* sql`CREATE INDEX tasks_due ON tasks (next_run_at) WHERE status IN ('pending', 'processing')`
  yield* sql`CREATE UNIQUE INDEX tasks_idempotency ON tasks (tenant, entry_id, idempotency_key) WHERE idempotency_key IS NOT NULL`

  yield* sql`CREATE TABLE task_events (
    id ${serial},
    task_id TEXT NOT NULL,
    at ${big} NOT NULL,
    from_status TEXT,
    to_status TEXT NOT NULL,
    note TEXT
  )`
  yield* sql`CREATE INDEX task_events_task ON task_events (task_id)`

  yield* sql`CREATE TABLE media (
    key TEXT PRIMARY KEY,
    task_id TEXT NOT NULL,
    content_type TEXT NOT NULL,
    bytes ${big} NOT NULL,
    created_at ${big} NOT NULL,
    expires_at ${big},
    deleted_at ${big}
  )`
  yield* sql`CREATE INDEX media_expiry ON media (expires_at) WHERE deleted_at IS NULL`

  yield* sql`CREATE TABLE settings (
    name TEXT PRIMARY KEY,
    value TEXT NOT NULL
  )`
})

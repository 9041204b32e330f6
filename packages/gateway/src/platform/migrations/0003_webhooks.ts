/**
 * Webhooks (DESIGN.md §8): endpoints per tenant, and the durable outbox — one delivery row per
 * event and endpoint, written in the transaction of the task change it reports, claimed by the
 * delivery workers of every replica with a lease. Also the index the task listing pages on.
 * Times are epoch milliseconds in both dialects.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const big = sql.onDialectOrElse({ pg: () => sql.literal("BIGINT"), orElse: () => sql.literal("INTEGER") })

  // `events` is a JSON array of event types; `secret` the `whsec_…` signing secret.
  yield* sql`CREATE TABLE webhook_endpoints (
    id TEXT PRIMARY KEY,
    tenant TEXT NOT NULL,
    url TEXT NOT NULL,
    events TEXT NOT NULL,
    description TEXT,
    secret TEXT NOT NULL,
    created_at ${big} NOT NULL,
    deleted_at ${big}
  )`
  yield* sql`CREATE INDEX webhook_endpoints_tenant ON webhook_endpoints (tenant) WHERE deleted_at IS NULL`

  // `payload` is the event as of the change (media as store keys, signed at delivery time).
  yield* sql`CREATE TABLE webhook_deliveries (
    id TEXT PRIMARY KEY,
    endpoint_id TEXT NOT NULL,
    tenant TEXT NOT NULL,
    event_id TEXT NOT NULL,
    type TEXT NOT NULL,
    task_id TEXT,
    payload TEXT NOT NULL,
    status TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    next_attempt_at ${big} NOT NULL,
    last_status_code INTEGER,
    last_error TEXT,
    lease_owner TEXT,
    lease_until ${big},
    created_at ${big} NOT NULL
  )`
  yield* sql`CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending'`
  yield* sql`CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries (endpoint_id, created_at)`

  yield* sql`CREATE INDEX tasks_listing ON tasks (tenant, created_at, id)`

  // The vendor's latest progress figure of a running task (DESIGN.md §8 "honest progress").
  yield* sql`CREATE TABLE task_progress (
    task_id TEXT PRIMARY KEY,
    percent INTEGER NOT NULL,
    at ${big} NOT NULL
  )`
})

/**
 * Keys a platform team can hand out (DESIGN.md §9): each key's model allow-list, request rate,
 * in-flight cap, expiry and budget; the hash of the previous token while a rotation's grace runs;
 * tenant budgets; and which key created each task (for `max_in_flight`). Times are epoch
 * milliseconds in both dialects.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const big = sql.onDialectOrElse({ pg: () => sql.literal("BIGINT"), orElse: () => sql.literal("INTEGER") })
  const real = sql.onDialectOrElse({ pg: () => sql.literal("DOUBLE PRECISION"), orElse: () => sql.literal("REAL") })

  // `models` is a JSON array of entry ids (with `*` wildcards); NULL allows every model.
  yield* sql`ALTER TABLE api_keys ADD COLUMN models TEXT`
  yield* sql`ALTER TABLE api_keys ADD COLUMN rpm INTEGER`
  yield* sql`ALTER TABLE api_keys ADD COLUMN max_in_flight INTEGER`
  yield* sql`ALTER TABLE api_keys ADD COLUMN expires_at ${big}`
  yield* sql`ALTER TABLE api_keys ADD COLUMN budget_usd ${real}`
  yield* sql`ALTER TABLE api_keys ADD COLUMN budget_period TEXT`
  yield* sql`ALTER TABLE api_keys ADD COLUMN previous_hash TEXT`
  yield* sql`ALTER TABLE api_keys ADD COLUMN previous_expires_at ${big}`
  yield* sql`ALTER TABLE api_keys ADD COLUMN updated_at ${big}`
  yield* sql`CREATE INDEX api_keys_previous_hash ON api_keys (previous_hash) WHERE previous_hash IS NOT NULL`
  yield* sql`CREATE INDEX api_keys_tenant ON api_keys (tenant)`

  yield* sql`CREATE TABLE tenant_budgets (
    tenant TEXT PRIMARY KEY,
    budget_usd ${real},
    budget_period TEXT,
    updated_at ${big} NOT NULL
  )`

  yield* sql`ALTER TABLE tasks ADD COLUMN key_id TEXT`
  yield* sql`CREATE INDEX tasks_key_in_flight ON tasks (key_id) WHERE status IN ('pending', 'processing')`
})

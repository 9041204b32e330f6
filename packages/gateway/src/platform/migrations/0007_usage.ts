/**
 * The usage ledger (DESIGN.md §10): one row per task (reserved at create, settled on completion,
 * released on failure or cancel) and per E1/E2 request (recorded from its `usage`). Money is kept
 * in whole micro-dollars so that sums and budget comparisons are exact; the entry's price at
 * create is snapshotted on the row.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const big = sql.onDialectOrElse({ pg: () => sql.literal("BIGINT"), orElse: () => sql.literal("INTEGER") })
  const real = sql.onDialectOrElse({ pg: () => sql.literal("DOUBLE PRECISION"), orElse: () => sql.literal("REAL") })
  yield* sql`CREATE TABLE usage_ledger (
    id TEXT PRIMARY KEY,
    source TEXT NOT NULL,
    tenant TEXT NOT NULL,
    key_id TEXT,
    entry_id TEXT NOT NULL,
    unit TEXT NOT NULL,
    price TEXT NOT NULL,
    state TEXT NOT NULL,
    outcome TEXT,
    seconds ${real} NOT NULL DEFAULT 0,
    images ${big} NOT NULL DEFAULT 0,
    input_tokens ${big} NOT NULL DEFAULT 0,
    output_tokens ${big} NOT NULL DEFAULT 0,
    reserved_micros ${big} NOT NULL DEFAULT 0,
    cost_micros ${big} NOT NULL DEFAULT 0,
    created_at ${big} NOT NULL,
    settled_at ${big}
  )`
  yield* sql`CREATE INDEX usage_ledger_tenant ON usage_ledger (tenant, created_at)`
  yield* sql`CREATE INDEX usage_ledger_key ON usage_ledger (key_id, created_at)`
})

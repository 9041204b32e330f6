/**
 * Model responses (E2) kept by the gateway: those a client may read again (`store` not false, or
 * `background`), owned by a tenant, with the lease and poll schedule of the background poller and
 * an expiry for the retention sweep. Times are epoch milliseconds in both dialects.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const big = sql.onDialectOrElse({ pg: () => sql.literal("BIGINT"), orElse: () => sql.literal("INTEGER") })

  // `body` is the response object as the gateway last returned it. `sandbox_final` holds the
  // finished object of a sandboxed background response, revealed at `next_poll_at`.
  yield* sql`CREATE TABLE responses (
    id TEXT PRIMARY KEY,
    tenant TEXT NOT NULL,
    entry_id TEXT NOT NULL,
    mode TEXT NOT NULL,
    status TEXT NOT NULL,
    background INTEGER NOT NULL,
    body TEXT NOT NULL,
    sandbox_final TEXT,
    attempts INTEGER NOT NULL DEFAULT 0,
    next_poll_at ${big},
    deadline_at ${big} NOT NULL,
    lease_owner TEXT,
    lease_until ${big},
    created_at ${big} NOT NULL,
    updated_at ${big} NOT NULL,
    finished_at ${big},
    expires_at ${big} NOT NULL,
    version INTEGER NOT NULL DEFAULT 0
  )`
  yield* sql`CREATE INDEX responses_due ON responses (next_poll_at) WHERE next_poll_at IS NOT NULL`
  yield* sql`CREATE INDEX responses_expiry ON responses (expires_at)`
})

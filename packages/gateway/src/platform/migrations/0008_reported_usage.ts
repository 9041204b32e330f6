/**
 * What a vendor reports about usage (DESIGN.md §10): the seconds of video a completed task's
 * vendor reported (`tasks.reported_seconds`; `NULL` when its protocol reports none, and on rows
 * finished before this migration), on which its ledger row is settled; and the API key that
 * created a kept model response (`responses.key_id`), so a response the background poller
 * finishes is recorded against that key.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const real = sql.onDialectOrElse({ pg: () => sql.literal("DOUBLE PRECISION"), orElse: () => sql.literal("REAL") })
  yield* sql`ALTER TABLE tasks ADD COLUMN reported_seconds ${real}`
  yield* sql`ALTER TABLE responses ADD COLUMN key_id TEXT`
})

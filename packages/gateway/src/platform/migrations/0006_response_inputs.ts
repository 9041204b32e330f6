/**
 * The input items of a kept model response (E2), as `GET …/responses/{id}/input_items` lists them:
 * a JSON array kept with the response. Rows kept before this migration have none (`NULL`), and
 * list no items.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE responses ADD COLUMN input_items TEXT`
})

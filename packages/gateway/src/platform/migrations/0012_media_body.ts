/**
 * A small result's bytes in its row (platform/MediaStore.ts): `NULL` for an object kept in the
 * media store (the data directory's files, or the bucket), the object itself otherwise.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql.onDialectOrElse({
    pg: () => sql`ALTER TABLE media ADD COLUMN body BYTEA`,
    orElse: () => sql`ALTER TABLE media ADD COLUMN body BLOB`
  })
})

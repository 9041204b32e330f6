/**
 * The watermark of the answers' log (platform/AnswerRows.ts): the number of the last answer whose
 * rows are committed, written in the same transaction as those rows. At start-up the log's lines
 * past it are committed, and only those. One row (`id` 1); PostgreSQL, which does not use the log,
 * has the table too, empty, so the schema is one.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE answer_log (id INTEGER PRIMARY KEY, written BIGINT NOT NULL)`
})

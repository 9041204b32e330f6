/**
 * PostgreSQL: the task counts in shards, so that transactions on different connections never wait
 * for each other on a count.
 *
 * With one row per model and status, every create of a model updated the same `(model, pending)`
 * row, and PostgreSQL holds that row's lock until the transaction commits: concurrent creates and
 * state changes of a model ran one at a time, whatever the pool size (measured: task create at
 * about 0.6 × round 1's rate, the gateway idle a third of the time). Now each connection adds its
 * +1 and −1 to the row of its own shard (`pg_backend_pid() % 64`); a count is the sum of its shards
 * (`SUM(n) … GROUP BY entry_id, status`), a single shard may go below zero. Existing counts become
 * shard 0, so the sums are unchanged.
 *
 * SQLite is left as it is: it has one writer at a time, and its transactions commit in groups
 * (`platform/Sqlite.ts`), so a shared count costs nothing there; the same summing query reads it.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"

/** How many rows one count is spread over (PostgreSQL). */
export const shards = 64

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql.onDialectOrElse({
    pg: () =>
      Effect.gen(function*() {
        yield* sql.unsafe(`ALTER TABLE task_counts ADD COLUMN shard INTEGER NOT NULL DEFAULT 0`)
        yield* sql.unsafe(`ALTER TABLE task_counts DROP CONSTRAINT task_counts_pkey`)
        yield* sql.unsafe(`ALTER TABLE task_counts ADD PRIMARY KEY (entry_id, status, shard)`)
        yield* sql.unsafe(`CREATE OR REPLACE FUNCTION genway_task_counts() RETURNS trigger LANGUAGE plpgsql AS $fn$
DECLARE
  s INTEGER := pg_backend_pid() % ${shards};
BEGIN
  IF TG_OP IN ('UPDATE', 'DELETE') THEN
    INSERT INTO task_counts (entry_id, status, shard, n) VALUES (OLD.entry_id, OLD.status, s, -1)
      ON CONFLICT (entry_id, status, shard) DO UPDATE SET n = task_counts.n - 1;
  END IF;
  IF TG_OP IN ('INSERT', 'UPDATE') THEN
    INSERT INTO task_counts (entry_id, status, shard, n) VALUES (NEW.entry_id, NEW.status, s, 1)
      ON CONFLICT (entry_id, status, shard) DO UPDATE SET n = task_counts.n + 1;
  END IF;
  RETURN NULL;
END
$fn$`)
      }),
    orElse: () => Effect.void
  })
})

/**
 * Counts of tasks by model and status, kept by triggers in the same transaction as every insert,
 * status change and delete of a task, so `/metrics` reads a handful of rows instead of scanning
 * `tasks`. Filled from the existing rows when the migration runs.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE task_counts (
    entry_id TEXT NOT NULL,
    status TEXT NOT NULL,
    n ${sql.onDialectOrElse({ pg: () => sql.literal("BIGINT"), orElse: () => sql.literal("INTEGER") })} NOT NULL,
    PRIMARY KEY (entry_id, status)
  )`
  yield* sql`INSERT INTO task_counts (entry_id, status, n) SELECT entry_id, status, COUNT(*) FROM tasks GROUP BY entry_id, status`
  yield* sql.onDialectOrElse({
    pg: () =>
      Effect.gen(function*() {
        yield* sql.unsafe(`CREATE FUNCTION genway_task_counts() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
  IF TG_OP IN ('UPDATE', 'DELETE') THEN
    UPDATE task_counts SET n = n - 1 WHERE entry_id = OLD.entry_id AND status = OLD.status;
  END IF;
  IF TG_OP IN ('INSERT', 'UPDATE') THEN
    INSERT INTO task_counts (entry_id, status, n) VALUES (NEW.entry_id, NEW.status, 1)
      ON CONFLICT (entry_id, status) DO UPDATE SET n = task_counts.n + 1;
  END IF;
  RETURN NULL;
END
$fn$`)
        yield* sql.unsafe(`CREATE TRIGGER task_counts_insert AFTER INSERT OR DELETE ON tasks
  FOR EACH ROW EXECUTE FUNCTION genway_task_counts()`)
        yield* sql.unsafe(`CREATE TRIGGER task_counts_update AFTER UPDATE OF status, entry_id ON tasks
  FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status OR OLD.entry_id IS DISTINCT FROM NEW.entry_id)
  EXECUTE FUNCTION genway_task_counts()`)
      }),
    orElse: () =>
      Effect.gen(function*() {
        yield* sql.unsafe(`CREATE TRIGGER task_counts_insert AFTER INSERT ON tasks BEGIN
  INSERT INTO task_counts (entry_id, status, n) VALUES (NEW.entry_id, NEW.status, 1)
    ON CONFLICT (entry_id, status) DO UPDATE SET n = n + 1;
END`)
        yield* sql.unsafe(`CREATE TRIGGER task_counts_update AFTER UPDATE OF status, entry_id ON tasks
  WHEN OLD.status IS NOT NEW.status OR OLD.entry_id IS NOT NEW.entry_id BEGIN
  UPDATE task_counts SET n = n - 1 WHERE entry_id = OLD.entry_id AND status = OLD.status;
  INSERT INTO task_counts (entry_id, status, n) VALUES (NEW.entry_id, NEW.status, 1)
    ON CONFLICT (entry_id, status) DO UPDATE SET n = n + 1;
END`)
        yield* sql.unsafe(`CREATE TRIGGER task_counts_delete AFTER DELETE ON tasks BEGIN
  UPDATE task_counts SET n = n - 1 WHERE entry_id = OLD.entry_id AND status = OLD.status;
END`)
      })
  })
})

/**
 * Indexes for claiming tasks while a worker keeps the ones it polls in hand (tasks/Scheduler.ts).
 *
 * A worker now polls a task it holds again and again under one lease, writing nothing while the
 * task is still where it was, so a task in hand keeps its past `next_run_at` in the database. The
 * claim walked `tasks_due` (every unfinished task by `next_run_at`) and skipped leased rows by
 * reading each one's `lease_until` from the table: with 10,000 tasks in hand, each claim would
 * read them all. Now:
 * - `tasks_claimable` holds only the unleased unfinished tasks, by `next_run_at`: the claim reads
 *   the due ones and nothing else;
 * - `tasks_leased` holds the leased ones by `lease_until`: before each claim, the leases that ran
 *   out (a replica that died) are dropped through it, so those tasks are claimable at once, as
 *   they were.
 * `tasks_due` stays for now: replicas still running the previous release claim through it during
 * a rolling upgrade (without it their claims would read the whole table); a later migration drops
 * it. The two new indexes hold unfinished (or leased) tasks only, so they are small.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE INDEX tasks_claimable ON tasks (next_run_at) WHERE status IN ('pending', 'processing') AND lease_owner IS NULL`
  yield* sql`CREATE INDEX tasks_leased ON tasks (lease_until) WHERE lease_owner IS NOT NULL`
})

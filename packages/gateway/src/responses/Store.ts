/**
 * Model responses (E2) kept by the gateway, one row per response, owned by a tenant. A row that is
 * not finished carries a poll schedule and a lease, so the background poller and a read that
 * finds it due never refresh it both; every change is a compare-and-set on `version`.
 *
 * The functions take the `SqlClient` from the caller's context: the store is used by the request
 * handlers and by the poller, which both run where the database is.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"

/** A kept response. */
export interface StoredResponse {
  readonly id: string
  readonly tenant: string
  readonly entryId: string
  readonly mode: "live" | "sandbox"
  readonly status: string
  readonly background: boolean
  /** The response object as the gateway last returned it, as JSON text. */
  readonly body: string
  /** Sandboxed background responses: the finished object, revealed at `nextPollAt`. */
  readonly sandboxFinal: string | null
  readonly attempts: number
  /** When the response is next refreshed; `null` once it is finished. */
  readonly nextPollAt: number | null
  /** When the gateway stops waiting for the vendor and fails the response. */
  readonly deadlineAt: number
  readonly leaseOwner: string | null
  readonly leaseUntil: number | null
  readonly createdAt: number
  readonly updatedAt: number
  readonly finishedAt: number | null
  /** When the row is deleted (retention). */
  readonly expiresAt: number
  readonly version: number
  /** The request's input items as `input_items` lists them, JSON text; `null` when not known. */
  readonly inputItems: string | null
}

/** A response to keep. */
export type NewStoredResponse = Omit<StoredResponse, "attempts" | "leaseOwner" | "leaseUntil" | "updatedAt" | "version" | "inputItems"> & {
  readonly inputItems?: string | null
}

/** Fields a refresh may change. */
export type StoredPatch = Partial<Pick<StoredResponse, "status" | "body" | "attempts" | "nextPollAt" | "finishedAt">>

const num = (v: unknown): number => (typeof v === "number" ? v : Number(v))
const numOrNull = (v: unknown): number | null => (v === null || v === undefined ? null : num(v))

const fromRow = (r: Record<string, unknown>): StoredResponse => ({
  id: r.id as string,
  tenant: r.tenant as string,
  entryId: r.entry_id as string,
  mode: r.mode as StoredResponse["mode"],
  status: r.status as string,
  background: num(r.background) === 1,
  body: r.body as string,
  sandboxFinal: (r.sandbox_final as string | null) ?? null,
  attempts: num(r.attempts),
  nextPollAt: numOrNull(r.next_poll_at),
  deadlineAt: num(r.deadline_at),
  leaseOwner: (r.lease_owner as string | null) ?? null,
  leaseUntil: numOrNull(r.lease_until),
  createdAt: num(r.created_at),
  updatedAt: num(r.updated_at),
  finishedAt: numOrNull(r.finished_at),
  expiresAt: num(r.expires_at),
  version: num(r.version),
  inputItems: (r.input_items as string | null | undefined) ?? null
})

const first = (rows: ReadonlyArray<Record<string, unknown>>) => (rows.length === 0 ? Option.none<StoredResponse>() : Option.some(fromRow(rows[0]!)))

/** Keeps a response. An id kept already stays as it is (the first writer wins). */
export const insert = (row: NewStoredResponse, now: number): Effect.Effect<void, SqlError, SqlClient.SqlClient> =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql`INSERT INTO responses (
      id, tenant, entry_id, mode, status, background, body, sandbox_final, attempts, next_poll_at, deadline_at,
      created_at, updated_at, finished_at, expires_at, version, input_items
    ) VALUES (
      ${row.id}, ${row.tenant}, ${row.entryId}, ${row.mode}, ${row.status}, ${row.background ? 1 : 0}, ${row.body},
      ${row.sandboxFinal}, 0, ${row.nextPollAt}, ${row.deadlineAt}, ${row.createdAt}, ${now}, ${row.finishedAt},
      ${row.expiresAt}, 0, ${row.inputItems ?? null}
    ) ON CONFLICT (id) DO NOTHING`.pipe(Effect.asVoid))

/** A tenant's unexpired response of one entry; another tenant's id is not found. */
export const find = (tenant: string, entryId: string, id: string, now: number) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql`SELECT * FROM responses
      WHERE id = ${id} AND tenant = ${tenant} AND entry_id = ${entryId} AND expires_at > ${now}`.pipe(Effect.map(first)))

/** Leases one response if it is due and nobody holds it. */
export const claim = (id: string, owner: string, now: number, leaseMs: number) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql`UPDATE responses SET lease_owner = ${owner}, lease_until = ${now + leaseMs}, version = version + 1
      WHERE id = ${id} AND next_poll_at IS NOT NULL AND next_poll_at <= ${now}
        AND (lease_until IS NULL OR lease_until < ${now})
      RETURNING *`.pipe(Effect.map(first)))

/** Leases up to `limit` due responses to `owner`. */
export const claimDue = (owner: string, now: number, leaseMs: number, limit: number) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) => {
    const until = now + leaseMs
    const lock = sql.onDialectOrElse({ pg: () => sql.literal("FOR UPDATE SKIP LOCKED"), orElse: () => sql.literal("") })
    return sql`UPDATE responses SET lease_owner = ${owner}, lease_until = ${until}, version = version + 1
      WHERE id IN (
        SELECT id FROM responses
        WHERE next_poll_at IS NOT NULL AND next_poll_at <= ${now} AND (lease_until IS NULL OR lease_until < ${now})
        ORDER BY next_poll_at LIMIT ${limit}
        ${lock}
      )
      RETURNING *`.pipe(Effect.map((rows) => rows.map(fromRow)))
  })

/**
 * Applies `patch` and drops the lease if the row is still at `row.version`. `None` when someone
 * else changed it meanwhile (the caller's work is dropped).
 */
export const update = (row: StoredResponse, patch: StoredPatch, now: number) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) => {
    const next = { ...row, ...patch }
    return sql`UPDATE responses SET
        status = ${next.status}, body = ${next.body}, attempts = ${next.attempts}, next_poll_at = ${next.nextPollAt},
        finished_at = ${next.finishedAt}, lease_owner = NULL, lease_until = NULL, updated_at = ${now},
        version = version + 1
      WHERE id = ${row.id} AND version = ${row.version}
      RETURNING *`.pipe(Effect.map(first))
  })

/** Deletes a tenant's response of one entry; whether there was one. */
export const remove = (tenant: string, entryId: string, id: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql`DELETE FROM responses WHERE id = ${id} AND tenant = ${tenant} AND entry_id = ${entryId} RETURNING id`.pipe(
      Effect.map((rows) => rows.length > 0)
    ))

/** Deletes responses past their retention; returns how many. */
export const sweep = (now: number) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql`DELETE FROM responses WHERE expires_at <= ${now} RETURNING id`.pipe(Effect.map((rows) => rows.length)))

/**
 * Drops every lease. Only for the embedded SQLite database, which one process owns: after a crash
 * its responses are refreshed at once instead of when their leases run out.
 */
export const releaseAllLeasesIfEmbedded = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.onDialectOrElse({
    sqlite: () =>
      sql`UPDATE responses SET lease_owner = NULL, lease_until = NULL, version = version + 1
        WHERE lease_owner IS NOT NULL RETURNING id`.pipe(Effect.map((rows) => rows.length)),
    orElse: () => Effect.succeed(0)
  }))

/**
 * Model responses (E2) kept by the gateway, one row per response, owned by a tenant. A row that is
 * not finished carries a poll schedule and a lease, so the background poller and a read that
 * finds it due never refresh it both; every change is a compare-and-set on `version`.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as Rows from "../platform/Rows.js"

/** A kept response. */
export interface StoredResponse {
  readonly id: string
  readonly tenant: string
  /** The API key that created it (its usage is recorded against it); `null` on rows kept before keys were recorded. */
  readonly keyId: string | null
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

/** A `responses` row as the database returns it. */
const ResponseRow = Schema.Struct({
  id: Schema.String,
  tenant: Schema.String,
  key_id: Rows.TextOrNull,
  entry_id: Schema.String,
  mode: Schema.Literal("live", "sandbox"),
  status: Schema.String,
  background: Rows.Num,
  body: Schema.String,
  sandbox_final: Rows.TextOrNull,
  attempts: Rows.Num,
  next_poll_at: Rows.NumOrNull,
  deadline_at: Rows.Num,
  lease_owner: Rows.TextOrNull,
  lease_until: Rows.NumOrNull,
  created_at: Rows.Num,
  updated_at: Rows.Num,
  finished_at: Rows.NumOrNull,
  expires_at: Rows.Num,
  version: Rows.Num,
  input_items: Rows.TextOrNull
})

const toResponse = (r: typeof ResponseRow.Type): StoredResponse => ({
  id: r.id,
  tenant: r.tenant,
  keyId: r.key_id,
  entryId: r.entry_id,
  mode: r.mode,
  status: r.status,
  background: r.background === 1,
  body: r.body,
  sandboxFinal: r.sandbox_final,
  attempts: r.attempts,
  nextPollAt: r.next_poll_at,
  deadlineAt: r.deadline_at,
  leaseOwner: r.lease_owner,
  leaseUntil: r.lease_until,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
  finishedAt: r.finished_at,
  expiresAt: r.expires_at,
  version: r.version,
  inputItems: r.input_items
})

/** The responses, or the first response, a statement returns, decoded. */
const { all: responsesOf, one: responseOf } = Rows.decoder(ResponseRow, toResponse)

/** The `responses` row of a response to keep, kept at `now`. */
export const columnsOf = (row: NewStoredResponse, now: number) => ({
  id: row.id,
  tenant: row.tenant,
  entry_id: row.entryId,
  mode: row.mode,
  status: row.status,
  background: row.background ? 1 : 0,
  body: row.body,
  sandbox_final: row.sandboxFinal,
  attempts: 0,
  next_poll_at: row.nextPollAt,
  deadline_at: row.deadlineAt,
  created_at: row.createdAt,
  updated_at: now,
  finished_at: row.finishedAt,
  expires_at: row.expiresAt,
  version: 0,
  input_items: row.inputItems ?? null,
  key_id: row.keyId
})

const make = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient

  /** A tenant's unexpired response of one entry; another tenant's id is not found. */
  const find = (tenant: string, entryId: string, id: string, now: number) =>
    responseOf(sql`SELECT * FROM responses
      WHERE id = ${id} AND tenant = ${tenant} AND entry_id = ${entryId} AND expires_at > ${now}`)

  /** Leases one response if it is due and nobody holds it. */
  const claim = (id: string, owner: string, now: number, leaseMs: number) =>
    responseOf(sql`UPDATE responses SET lease_owner = ${owner}, lease_until = ${now + leaseMs}, version = version + 1
      WHERE id = ${id} AND next_poll_at IS NOT NULL AND next_poll_at <= ${now}
        AND (lease_until IS NULL OR lease_until < ${now})
      RETURNING *`)

  /** Leases up to `limit` due responses to `owner`. */
  const claimDue = (owner: string, now: number, leaseMs: number, limit: number) =>
    responsesOf(Rows.claimDue(
      sql,
      "responses",
      { where: sql`next_poll_at IS NOT NULL AND next_poll_at <= ${now}`, order: "next_poll_at" },
      owner,
      now,
      leaseMs,
      limit
    ))

  /**
   * Applies `patch` and drops the lease if the row is still at `row.version`. `None` when someone
   * else changed it meanwhile (the caller's work is dropped).
   */
  const update = (row: StoredResponse, patch: StoredPatch, now: number) => {
    const next = { ...row, ...patch }
    return responseOf(sql`UPDATE responses SET
        status = ${next.status}, body = ${next.body}, attempts = ${next.attempts}, next_poll_at = ${next.nextPollAt},
        finished_at = ${next.finishedAt}, lease_owner = NULL, lease_until = NULL, updated_at = ${now},
        version = version + 1
      WHERE id = ${row.id} AND version = ${row.version}
      RETURNING *`)
  }

  /** Deletes a tenant's response of one entry; whether there was one. */
  const remove = (tenant: string, entryId: string, id: string) =>
    sql`DELETE FROM responses WHERE id = ${id} AND tenant = ${tenant} AND entry_id = ${entryId} RETURNING id`.pipe(
      Effect.map((rows) => rows.length > 0)
    )

  /** Deletes responses past their retention; returns how many. */
  const sweep = (now: number) => sql`DELETE FROM responses WHERE expires_at <= ${now} RETURNING id`.pipe(Effect.map((rows) => rows.length))

  /** Releases the leases `owner` holds (at shutdown), so another replica refreshes them at once. */
  const releaseLeasesOf = (owner: string) =>
    sql`UPDATE responses SET lease_owner = NULL, lease_until = NULL, version = version + 1
      WHERE lease_owner = ${owner}`.pipe(Effect.asVoid)

  /**
   * Drops every lease. Only for the embedded SQLite database, which one process owns: after a crash
   * its responses are refreshed at once instead of when their leases run out.
   */
  const releaseAllLeasesIfEmbedded = sql.onDialectOrElse({
    sqlite: () =>
      sql`UPDATE responses SET lease_owner = NULL, lease_until = NULL, version = version + 1
        WHERE lease_owner IS NOT NULL RETURNING id`.pipe(Effect.map((rows) => rows.length)),
    orElse: () => Effect.succeed(0)
  })

  return { find, claim, claimDue, update, remove, sweep, releaseAllLeasesIfEmbedded, releaseLeasesOf } as const
})

/** The store of kept responses. */
export class ResponseStore extends Context.Tag("@genway/gateway/ResponseStore")<
  ResponseStore,
  Effect.Effect.Success<typeof make>
>() {}

/** The response store over the `SqlClient` in context. */
export const layer = Layer.effect(ResponseStore, make)

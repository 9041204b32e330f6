/**
 * The background poller of kept responses: leases due rows (`claimDue`, one replica per row),
 * refreshes each from the live upstream (or reveals a sandboxed one), backs off on failures
 * (`Cadence`), fails what outlives its deadline, and deletes rows past their retention. A read that
 * finds its row due refreshes it through the same `refresh`. A row that finishes records its usage
 * in the same transaction (`finish`), so a crash can neither lose nor double it.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import { type ModelEntry, Responses } from "@genway/core"
import { Registry } from "@genway/registry"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Ledger from "../ledger/Ledger.js"
import * as AnswerRows from "../platform/AnswerRows.js"
import * as Cadence from "../platform/Cadence.js"
import { Settings } from "../platform/Config.js"
import * as Store from "./Store.js"
import * as WorkPool from "../platform/WorkPool.js"

/** How long a refresh owns a kept response before another replica may take it. */
export const leaseMs = 30_000

/** Idle wait of the poller between passes that found little to do. */
export const idleMs = 1_000

/** How often the poller deletes responses past their retention. */
export const sweepEveryMs = 60_000

/** The poller of one service instance; `owner` names its leases. */
export interface Poller {
  /**
   * Applies `patch` (one that finishes the row: a terminal status, `finishedAt`, the final body)
   * and records the response's usage in the same transaction; `None` when someone else changed
   * the row meanwhile.
   */
  readonly finish: (
    row: Store.StoredResponse,
    entry: ModelEntry.ModelEntry | undefined,
    patch: Store.StoredPatch,
    now: number
  ) => Effect.Effect<Option.Option<Store.StoredResponse>, SqlError>
  /** One refresh of a leased response; returns the row as it now is. */
  readonly refresh: (
    row: Store.StoredResponse,
    entry: ModelEntry.ModelEntry | undefined,
    now: number
  ) => Effect.Effect<Store.StoredResponse, SqlError>
  /** One pass: leases due responses and refreshes them; returns how many it leased. */
  readonly runOnce: Effect.Effect<number, SqlError, Registry.Registry>
  /** Passes forever, sweeping expired responses now and then. */
  readonly loop: Effect.Effect<never, never, Registry.Registry>
}

/** The poller over `live` (none: the sandbox) and the response store. */
export const make = (live: Option.Option<Responses.ResponsesUpstream>, owner: string) =>
  Effect.gen(function*() {
    const settings = yield* Settings
    const store = yield* Store.ResponseStore
    const sql = yield* SqlClient.SqlClient

    const finish = (row: Store.StoredResponse, entry: ModelEntry.ModelEntry | undefined, patch: Store.StoredPatch, now: number) =>
      sql.withTransaction(Effect.gen(function*() {
        const updated = yield* store.update(row, patch, now)
        if (Option.isNone(updated) || entry === undefined) return updated
        const response = JSON.parse(updated.value.body) as Responses.ResponseObject
        yield* Ledger.recordResponse({ tenant: row.tenant, keyId: row.keyId, entry }, response, now).pipe(
          Effect.provideService(SqlClient.SqlClient, sql)
        )
        return updated
      }))

    const pollDelay = (entry: ModelEntry.ModelEntry, first: boolean) =>
      Cadence.pollDelay(entry, { override: settings.pollIntervalMs, first })

    /** One refresh of a leased response; returns the row as it now is. */
    const refresh = (row: Store.StoredResponse, entry: ModelEntry.ModelEntry | undefined, now: number) =>
      Effect.gen(function*() {
        const settle = (patch: Store.StoredPatch) => Effect.map(store.update(row, patch, now), Option.getOrElse(() => row))
        const done = (body: string, status: string) =>
          Effect.map(finish(row, entry, { status, body, nextPollAt: null, finishedAt: now }, now), Option.getOrElse(() => row))
        const fail = (code: string, message: string) =>
          done(JSON.stringify({ ...JSON.parse(row.body), status: "failed", error: { code, message } }), "failed")
        const timedOut = () =>
          fail("gateway_timeout", `the response did not finish before the gateway's deadline (${Duration.format(Duration.millis(row.deadlineAt - row.createdAt))}); the gateway stopped waiting for it`)

        if (row.mode === "sandbox") {
          if (row.sandboxFinal !== null && now >= (row.nextPollAt ?? 0)) {
            return yield* done(row.sandboxFinal, (JSON.parse(row.sandboxFinal) as { status: string }).status)
          }
          return yield* settle({})
        }
        if (entry === undefined) return yield* fail("model_unavailable", "this gateway no longer serves the model of this response")
        if (Option.isNone(live)) {
          if (now >= row.deadlineAt) return yield* timedOut()
          return yield* settle({ attempts: row.attempts + 1, nextPollAt: now + 60_000 })
        }
        const outcome = yield* Effect.either(live.value.retrieve(row.id))
        if (outcome._tag === "Right") {
          const response = Responses.withOutputText(outcome.right)
          const body = JSON.stringify(response)
          if (Responses.isTerminal(response.status)) return yield* done(body, response.status)
          if (now >= row.deadlineAt) return yield* timedOut()
          return yield* settle({ status: response.status, body, attempts: 0, nextPollAt: now + (yield* pollDelay(entry, false)) })
        }
        const error = outcome.left
        if (error._tag === "ResponseNotFound") {
          return yield* fail("response_lost", "the vendor no longer knows this response, and it had not finished when last seen")
        }
        if (now >= row.deadlineAt) return yield* timedOut()
        yield* Effect.logWarning("a kept response could not be refreshed; trying again later", error.message).pipe(
          Effect.annotateLogs("response", row.id)
        )
        const hint = "retryAfterMs" in error ? error.retryAfterMs : undefined
        return yield* settle({ attempts: row.attempts + 1, nextPollAt: now + (yield* Cadence.backoff(row.attempts, hint)) })
      })

    // Every answer already given first, rows written behind it included (platform/AnswerRows.ts):
    // a kept response due in less than the wait for its commit is refreshed all the same.
    const claim = (limit: number) =>
      Effect.zipRight(AnswerRows.settled, Effect.flatMap(Clock.currentTimeMillis, (now) => store.claimDue(owner, now, leaseMs, limit)))

    /** Refreshes a claimed row as of when the refresh starts (a row may wait in hand for a slot after its claim). */
    const refreshLogged = (entries: ReadonlyMap<string, ModelEntry.ModelEntry>) => (row: Store.StoredResponse) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => refresh(row, entries.get(row.entryId), now)).pipe(
        Effect.catchAllCause((cause) =>
          Effect.logError("refreshing a kept response failed; its lease will expire and it will be retried", cause).pipe(
            Effect.annotateLogs("response", row.id)
          )
        )
      )

    const runOnce = Effect.gen(function*() {
      const entries = Registry.indexById((yield* Registry.Registry).entries)
      const claimed = yield* claim(settings.workerBatch)
      yield* Effect.forEach(claimed, refreshLogged(entries), { concurrency: settings.workerConcurrency, discard: true })
      return claimed.length
    })

    const sweep = Effect.gen(function*() {
      const n = yield* store.sweep(yield* Clock.currentTimeMillis)
      if (n > 0) yield* Effect.logInfo(`retention: deleted ${n} kept response(s)`)
    }).pipe(Effect.catchAllCause((cause) => Effect.logWarning("response retention sweep failed; will retry", cause)))

    /** Refreshes run in a pool refilled as they finish (see `WorkPool`); the sweep beside it. */
    const loop = Effect.gen(function*() {
      const entries = Registry.indexById((yield* Registry.Registry).entries)
      const pool = WorkPool.run<Store.StoredResponse>({
        slots: settings.workerConcurrency,
        batch: settings.workerBatch,
        claim: (limit) =>
          claim(limit).pipe(Effect.catchAllCause((cause) => Effect.as(Effect.logError("claiming kept responses to refresh failed", cause), []))),
        run: refreshLogged(entries),
        idleMs,
        coalesceMs: WorkPool.coalesceMs
      })
      const sweeping = Effect.zipRight(sweep, Effect.sleep(sweepEveryMs)).pipe(Effect.forever)
      return yield* Effect.raceFirst(pool, sweeping)
    })

    return { finish, refresh, runOnce, loop } satisfies Poller
  })

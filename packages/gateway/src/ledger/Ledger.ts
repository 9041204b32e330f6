/**
 * The usage ledger and budgets (DESIGN.md §10). A task's row is written by transition hooks, so
 * each step commits with the task's own state change: reserved at create (the expected cost of
 * the request), settled on completion (the actual units at the price snapshotted at create),
 * released to 0 on failure or cancel. E1/E2 requests are recorded from their `usage` when they
 * finish. Money is counted in whole micro-dollars, so sums and budget checks are exact.
 *
 * A create must fit the budget of its key and of its tenant: the check runs inside the task's
 * insert transaction under a per-tenant lock (PostgreSQL advisory lock; SQLite has one writer),
 * so concurrent creates cannot overshoot it, on one replica or many.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import type { ModelEntry, Responses } from "@genway/core"
import { Registry } from "@genway/registry"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { ApiKeys, BudgetPeriod, Principal } from "../platform/ApiKeys.js"
import { TransitionHooks } from "../tasks/Hooks.js"
import type { Task } from "../tasks/Store.js"

/** Units of one ledger row. */
export interface Units {
  readonly seconds: number
  readonly images: number
  readonly input_tokens: number
  readonly output_tokens: number
}

export const noUnits: Units = { seconds: 0, images: 0, input_tokens: 0, output_tokens: 0 }

/** USD to whole micro-dollars. */
export const micros = (usd: number): number => Math.round(usd * 1_000_000)

/** Whole micro-dollars to USD. */
export const usd = (m: number): number => m / 1_000_000

/** The cost of `units` at `price`, in micro-dollars (an entry without a price costs 0). */
export const costMicros = (price: ModelEntry.Price | undefined, units: Units): number => {
  if (price === undefined) return 0
  return micros(units.seconds * (price.per_second ?? 0)) +
    micros(units.images * (price.per_image ?? 0)) +
    Math.round(units.input_tokens * (price.per_1m_input_tokens ?? 0)) +
    Math.round(units.output_tokens * (price.per_1m_output_tokens ?? 0))
}

const positive = (v: unknown): number | undefined => {
  const n = typeof v === "string" ? Number(v) : v
  return typeof n === "number" && Number.isFinite(n) && n > 0 ? n : undefined
}

/** The units a task request is expected to use: its duration (or `n`) field, else the entry's default. */
export const expectedUnits = (billing: ModelEntry.Billing | undefined, body: Record<string, unknown>): Units => {
  if (billing === undefined || billing.unit === "tokens") return noUnits
  const given = billing.field !== undefined ? positive(body[billing.field]) : undefined
  return billing.unit === "seconds"
    ? { ...noUnits, seconds: given ?? billing.default }
    : { ...noUnits, images: Math.floor(given ?? billing.default) }
}

/**
 * The units a completed task used: images from its results; seconds from the vendor's reported
 * duration when its protocol reports one, else from the request (or the entry's default).
 */
export const settledUnits = (billing: ModelEntry.Billing | undefined, task: Task): Units => {
  if (billing?.unit === "images" && task.result !== null) return { ...noUnits, images: task.result.length }
  if (billing?.unit === "seconds" && task.reportedSeconds !== null && task.reportedSeconds > 0) {
    return { ...noUnits, seconds: task.reportedSeconds }
  }
  return expectedUnits(billing, parseBody(task.request))
}

const parseBody = (request: string): Record<string, unknown> => {
  try {
    const v = JSON.parse(request)
    return typeof v === "object" && v !== null ? v : {}
  } catch {
    return {}
  }
}

/** The expected cost of a create, in micro-dollars. */
export const reservationFor = (entry: ModelEntry.ModelEntry, body: Record<string, unknown>): number =>
  costMicros(entry.price, expectedUnits(entry.billing, body))

/** A create would pass a budget. */
export class BudgetExceeded extends Data.TaggedError("BudgetExceeded")<{
  readonly scope: "key" | "tenant"
  readonly budgetUsd: number
  readonly period: BudgetPeriod
}> {}

/** When the current budget period began (UTC calendar day or month; `total` never resets). */
export const periodStart = (period: BudgetPeriod, now: number): number => {
  const d = new Date(now)
  return period === "day"
    ? Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate())
    : period === "month"
    ? Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1)
    : 0
}

interface Budget {
  readonly scope: "key" | "tenant"
  readonly usd: number
  readonly period: BudgetPeriod
}

const periodOf = (v: unknown): BudgetPeriod => (v === "day" || v === "month" ? v : "total")

/**
 * Fails with `BudgetExceeded` when spending `reserve` micro-dollars now would pass the key's or
 * the tenant's budget (spent + reserved + this; reaching it exactly is allowed). Run it inside the
 * transaction that writes the reservation: it takes the tenant's lock first. Succeeds with whether
 * a budget applies at all.
 */
export const checkBudget = (tenant: string, keyId: string | null, reserve: number, now: number) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const budgets: Array<Budget> = []
    // Both scopes in one statement: this runs on every create and every E1/E2 request.
    const rows = yield* sql`SELECT 'key' AS scope, budget_usd, budget_period FROM api_keys WHERE id = ${keyId} AND budget_usd IS NOT NULL
      UNION ALL SELECT 'tenant' AS scope, budget_usd, budget_period FROM tenant_budgets WHERE tenant = ${tenant} AND budget_usd IS NOT NULL`
    for (const scope of ["key", "tenant"] as const) {
      const r = rows.find((row) => row.scope === scope)
      if (r !== undefined) budgets.push({ scope, usd: Number(r.budget_usd), period: periodOf(r.budget_period) })
    }
    if (budgets.length === 0) return false
    yield* sql.onDialectOrElse({
      pg: () => sql`SELECT pg_advisory_xact_lock(hashtext(${`genway-budget:${tenant}`}))`,
      orElse: () => Effect.void
    })
    for (const budget of budgets) {
      const since = periodStart(budget.period, now)
      const used = budget.scope === "key"
        ? yield* sql`SELECT COALESCE(SUM(cost_micros + reserved_micros), 0) AS n FROM usage_ledger
            WHERE key_id = ${keyId} AND created_at >= ${since}`
        : yield* sql`SELECT COALESCE(SUM(cost_micros + reserved_micros), 0) AS n FROM usage_ledger
            WHERE tenant = ${tenant} AND created_at >= ${since}`
      const spent = Number(used[0]?.n ?? 0)
      // E1/E2 reserve nothing: they are refused once the budget is used up.
      const over = reserve === 0 ? spent >= micros(budget.usd) : spent + reserve > micros(budget.usd)
      if (over) return yield* new BudgetExceeded({ scope: budget.scope, budgetUsd: budget.usd, period: budget.period })
    }
    return true
  })

type BudgetKeys = Pick<ApiKeys["Type"], "budgetFree" | "budgetEpoch" | "noteBudgetFree">

/**
 * The budget check of a caller at `now`, decided now: `undefined` while its key and tenant are
 * remembered without a budget (`ApiKeys.budgetFree`, the window of a verified token), else
 * `checkBudget`, whose finding no budget is remembered. For a request path that runs it at once.
 */
export const budgetCheck = (
  keys: BudgetKeys,
  principal: Principal,
  reserve: number,
  now: number
): Effect.Effect<void, SqlError | BudgetExceeded, SqlClient.SqlClient> | undefined => {
  if (keys.budgetFree(principal.tenant, principal.keyId, now)) return undefined
  const since = keys.budgetEpoch()
  return Effect.flatMap(checkBudget(principal.tenant, principal.keyId, reserve, now), (found) =>
    found ? Effect.void : Effect.sync(() => keys.noteBudgetFree(principal.tenant, principal.keyId, now, since)))
}

/** `budgetCheck` as an effect, decided when it runs (a guard handed to a transaction, say). */
export const checkBudgetOf = (
  keys: BudgetKeys,
  principal: Principal,
  reserve: number,
  now: number
): Effect.Effect<void, SqlError | BudgetExceeded, SqlClient.SqlClient> =>
  Effect.suspend(() => budgetCheck(keys, principal, reserve, now) ?? Effect.void)

/** The message of a refusal (no amounts of other scopes, nothing secret). */
export const describe = (e: BudgetExceeded): string =>
  `this request would pass the ${e.scope === "key" ? "API key's" : "tenant's"} budget of ${e.budgetUsd} USD ` +
  `(${e.period === "total" ? "in total" : `per ${e.period}`}, UTC)`

/** What one E1/E2 request used, to record. */
export interface RequestUsage {
  readonly id: string
  readonly tenant: string
  readonly keyId: string | null
  readonly entry: ModelEntry.ModelEntry
  readonly inputTokens: number
  readonly outputTokens: number
  readonly at: number
}

/** The `usage_ledger` row of an E1/E2 request. */
export const requestColumns = (row: RequestUsage) => ({
  id: row.id,
  source: "request",
  tenant: row.tenant,
  key_id: row.keyId,
  entry_id: row.entry.id,
  unit: "tokens",
  price: JSON.stringify(row.entry.price ?? {}),
  state: "settled",
  outcome: "request",
  input_tokens: row.inputTokens,
  output_tokens: row.outputTokens,
  reserved_micros: 0,
  cost_micros: costMicros(row.entry.price, { ...noUnits, input_tokens: row.inputTokens, output_tokens: row.outputTokens }),
  created_at: row.at,
  settled_at: row.at
})

/** Records a finished E1/E2 request from its `usage`, once per id (a repeat is ignored). */
export const recordRequest = (row: RequestUsage): Effect.Effect<void, SqlError, SqlClient.SqlClient> =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql`INSERT INTO usage_ledger ${sql.insert(requestColumns(row))} ON CONFLICT (id) DO NOTHING`.pipe(Effect.asVoid))

/**
 * The tokens a finished model response (E2) used: those of a `completed` or `incomplete` one
 * (the vendor bills what it generated before the limit), from its `usage`. A `failed` or
 * `cancelled` one, one still running, and one without `usage` record nothing.
 */
export const responseTokens = (response: Responses.ResponseObject): { readonly input: number; readonly output: number } | undefined => {
  if (response.status !== "completed" && response.status !== "incomplete") return undefined
  const usage = response.usage
  if (usage === undefined || usage === null) return undefined
  return { input: usage.input_tokens ?? usage.prompt_tokens ?? 0, output: usage.output_tokens ?? usage.completion_tokens ?? 0 }
}

/**
 * Records a finished model response (E2) from its `usage`, under the response's id, so whichever
 * way it finishes (answered, streamed, polled, read back) it is recorded once.
 */
export const recordResponse = (
  owner: { readonly tenant: string; readonly keyId: string | null; readonly entry: ModelEntry.ModelEntry },
  response: Responses.ResponseObject,
  at: number
): Effect.Effect<void, SqlError, SqlClient.SqlClient> => {
  const usage = responseUsage(owner, response, at)
  return usage === undefined ? Effect.void : recordRequest(usage)
}

/** The usage row of a finished model response (E2); `undefined` when it records nothing. */
export const responseUsage = (
  owner: { readonly tenant: string; readonly keyId: string | null; readonly entry: ModelEntry.ModelEntry },
  response: Responses.ResponseObject,
  at: number
): RequestUsage | undefined => {
  const tokens = responseTokens(response)
  return tokens === undefined ? undefined : {
    id: response.id,
    tenant: owner.tenant,
    keyId: owner.keyId,
    entry: owner.entry,
    inputTokens: tokens.input,
    outputTokens: tokens.output,
    at
  }
}

const unitOf = (billing: ModelEntry.Billing | undefined): string => billing?.unit ?? "none"

/**
 * The ledger's transition hook: reserve on create, settle on completion, release on failure or
 * cancel, in the task's own transaction.
 */
export const hook = (entries: () => ReadonlyArray<ModelEntry.ModelEntry>, sql: SqlClient.SqlClient) => {
  const byId = new Map<string, ModelEntry.ModelEntry>()
  const entryOf = (id: string) => {
    if (byId.size === 0) for (const e of entries()) byId.set(e.id, e)
    return byId.get(id)
  }
  return ({ at, from, task, to }: { readonly task: Task; readonly from: Task["status"] | null; readonly to: Task["status"]; readonly at: number }): Effect.Effect<unknown, SqlError> | undefined => {
    if (from === null) {
      const entry = entryOf(task.entryId)
      const units = expectedUnits(entry?.billing, parseBody(task.request))
      // The store's new task carries the creating key (it is not part of `Task` otherwise).
      const keyId = (task as { readonly keyId?: string | null }).keyId ?? null
      return sql`INSERT INTO usage_ledger (
        id, source, tenant, key_id, entry_id, unit, price, state, seconds, images, reserved_micros, cost_micros, created_at
      ) VALUES (
        ${task.id}, 'task', ${task.tenant}, ${keyId}, ${task.entryId}, ${unitOf(entry?.billing)},
        ${JSON.stringify(entry?.price ?? {})}, 'reserved', ${units.seconds}, ${units.images},
        ${costMicros(entry?.price, units)}, 0, ${at}
      )`
    }
    if (to === "completed") {
      const entry = entryOf(task.entryId)
      const units = settledUnits(entry?.billing, task)
      const settle = (price: ModelEntry.Price | undefined, snapshot: string | undefined) =>
        sql`UPDATE usage_ledger SET state = 'settled', outcome = 'completed', seconds = ${units.seconds},
          images = ${units.images}, reserved_micros = 0, cost_micros = ${costMicros(price, units)}, settled_at = ${at}
          WHERE id = ${task.id} AND state = 'reserved'${snapshot === undefined ? sql`` : sql` AND price = ${snapshot}`} RETURNING id`
      // The price snapshotted at create counts, not today's. It nearly always is today's: settled at
      // that price in one statement when the snapshot is it; otherwise the snapshot is read first.
      return Effect.gen(function*() {
        if ((yield* settle(entry?.price, JSON.stringify(entry?.price ?? {}))).length > 0) return
        const rows = yield* sql`SELECT price FROM usage_ledger WHERE id = ${task.id} AND state = 'reserved'`
        if (rows.length === 0) return
        yield* settle(JSON.parse(rows[0]!.price as string) as ModelEntry.Price, undefined)
      })
    }
    if (to === "failed") {
      // A cancel fails the task with code 499 (tasks/Routes.ts).
      const outcome = task.error?.code === 499 ? "canceled" : "failed"
      return sql`UPDATE usage_ledger SET state = 'released', outcome = ${outcome}, seconds = 0, images = 0,
        reserved_micros = 0, cost_micros = 0, settled_at = ${at}
        WHERE id = ${task.id} AND state = 'reserved'`.pipe(Effect.asVoid)
    }
    return undefined
  }
}

/** Registers the ledger's hook (provide below the task store's users, with the registry). */
export const layer = Layer.effectDiscard(Effect.gen(function*() {
  const hooks = yield* TransitionHooks
  const registry = yield* Registry.Registry
  const sql = yield* SqlClient.SqlClient
  yield* hooks.register(hook(() => registry.entries, sql))
}))

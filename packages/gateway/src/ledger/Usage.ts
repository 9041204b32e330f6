/**
 * Reading the usage ledger (DESIGN.md §10): `GET /v1/usage` (the caller's tenant), `GET
 * /admin/usage` (every tenant, or one), and `genway usage`; plus the E1/E2 side of budgets:
 * refuse a request once the budget is used up (429 `insufficient_quota`) and record each finished
 * request from its `usage`. Units are those of settled rows; open reservations count only in
 * `reserved_usd`.
 */
import * as HttpRouter from "@effect/platform/HttpRouter"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as SqlClient from "@effect/sql/SqlClient"
import type { Chat, ModelEntry } from "@genway/core"
import type { SqlError } from "@effect/sql/SqlError"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import { authorize } from "../admin/Http.js"
import { type HttpError, httpError } from "../http/Errors.js"
import { handle } from "../http/Handle.js"
import { authenticate, requestUrl } from "../http/Request.js"
import * as AnswerRows from "../platform/AnswerRows.js"
import { ApiKeys, type Principal } from "../platform/ApiKeys.js"
import { nowOf } from "../platform/FiberTime.js"
import * as Ledger from "./Ledger.js"

/** How a report groups rows. */
export type GroupBy = "model" | "key" | "day" | "tenant"

export interface Totals {
  readonly units: { seconds: number; images: number; input_tokens: number; output_tokens: number }
  readonly cost_usd: number
  readonly reserved_usd: number
  readonly counts: { completed: number; failed: number; canceled: number; requests: number }
}

export interface Report {
  readonly from: string
  readonly to: string
  readonly currency: "USD"
  readonly total: Totals
  readonly groups?: ReadonlyArray<Totals & { readonly key: string }>
}

const dayMs = 86_400_000
const dateOnly = /^\d{4}-\d{2}-\d{2}$/

/**
 * The window of a report: ISO 8601 dates or times (UTC when no offset is given). A date `to`
 * includes its whole day. Default: the current UTC month.
 */
export const window = (
  from: string | undefined,
  to: string | undefined,
  now: number
): Either.Either<{ readonly from: number; readonly to: number }, { readonly param: string; readonly message: string }> => {
  const parse = (raw: string, end: boolean): number | undefined => {
    const text = raw.trim()
    if (dateOnly.test(text)) {
      const t = Date.parse(`${text}T00:00:00Z`)
      return Number.isNaN(t) ? undefined : end ? t + dayMs : t
    }
    if (!/^\d{4}-\d{2}-\d{2}T/.test(text)) return undefined
    const t = Date.parse(/[zZ]|[+-]\d{2}:?\d{2}$/.test(text) ? text : `${text}Z`)
    return Number.isNaN(t) ? undefined : t
  }
  const d = new Date(now)
  let start = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1)
  let end = Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1)
  if (from !== undefined) {
    const t = parse(from, false)
    if (t === undefined) return Either.left({ param: "from", message: "must be an ISO 8601 date or time, e.g. 2026-11-01 or 2026-11-01T00:00:00Z" })
    start = t
  }
  if (to !== undefined) {
    const t = parse(to, true)
    if (t === undefined) return Either.left({ param: "to", message: "must be an ISO 8601 date or time, e.g. 2026-11-30 or 2026-12-01T00:00:00Z" })
    end = t
  }
  if (end <= start) return Either.left({ param: "to", message: "must be after from" })
  return Either.right({ from: start, to: end })
}

const emptyTotals = (): Totals => ({
  units: { seconds: 0, images: 0, input_tokens: 0, output_tokens: 0 },
  cost_usd: 0,
  reserved_usd: 0,
  counts: { completed: 0, failed: 0, canceled: 0, requests: 0 }
})

const num = (v: unknown) => Number(v ?? 0)

/** The usage of a window, over one tenant or all, optionally grouped. */
export const report = (options: {
  readonly from: number
  readonly to: number
  readonly tenant?: string | undefined
  readonly groupBy?: GroupBy | undefined
}) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const expression = options.groupBy === "model"
      ? "entry_id"
      : options.groupBy === "key"
      ? "COALESCE(key_id, '')"
      : options.groupBy === "tenant"
      ? "tenant"
      : options.groupBy === "day"
      ? `(created_at / ${dayMs})`
      : undefined
    const column = sql.literal(expression ?? "''")
    const rows = yield* sql`SELECT ${column} AS g,
        SUM(CASE WHEN state = 'settled' THEN seconds ELSE 0 END) AS seconds,
        SUM(CASE WHEN state = 'settled' THEN images ELSE 0 END) AS images,
        SUM(input_tokens) AS input_tokens, SUM(output_tokens) AS output_tokens, SUM(cost_micros) AS cost, SUM(reserved_micros) AS reserved,
        SUM(CASE WHEN outcome = 'completed' THEN 1 ELSE 0 END) AS completed,
        SUM(CASE WHEN outcome = 'failed' THEN 1 ELSE 0 END) AS failed,
        SUM(CASE WHEN outcome = 'canceled' THEN 1 ELSE 0 END) AS canceled,
        SUM(CASE WHEN source = 'request' THEN 1 ELSE 0 END) AS requests
      FROM usage_ledger WHERE created_at >= ${options.from} AND created_at < ${options.to}
      ${options.tenant !== undefined ? sql`AND tenant = ${options.tenant}` : sql``}
      ${expression !== undefined ? sql`GROUP BY ${column}` : sql``}`
    let cost = 0
    let reserved = 0
    const total = emptyTotals()
    const groups: Array<Totals & { key: string }> = []
    for (const r of rows) {
      const g: Totals & { key: string } = {
        key: options.groupBy === "day"
          ? new Date(Math.floor(num(r.g)) * dayMs).toISOString().slice(0, 10)
          : String(r.g ?? ""),
        units: { seconds: num(r.seconds), images: num(r.images), input_tokens: num(r.input_tokens), output_tokens: num(r.output_tokens) },
        cost_usd: Ledger.usd(num(r.cost)),
        reserved_usd: Ledger.usd(num(r.reserved)),
        counts: { completed: num(r.completed), failed: num(r.failed), canceled: num(r.canceled), requests: num(r.requests) }
      }
      groups.push(g)
      for (const k of ["seconds", "images", "input_tokens", "output_tokens"] as const) total.units[k] += g.units[k]
      for (const k of ["completed", "failed", "canceled", "requests"] as const) total.counts[k] += g.counts[k]
      cost += num(r.cost)
      reserved += num(r.reserved)
    }
    groups.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
    const out: Report = {
      from: new Date(options.from).toISOString(),
      to: new Date(options.to).toISOString(),
      currency: "USD",
      total: { ...total, cost_usd: Ledger.usd(cost), reserved_usd: Ledger.usd(reserved) },
      ...(options.groupBy !== undefined ? { groups } : {})
    }
    return out
  })

const groupings = (admin: boolean): ReadonlyArray<GroupBy> => (admin ? ["model", "key", "day", "tenant"] : ["model", "key", "day"])

/** The report a request asks for (`from`, `to`, `group_by`, and for the admin `tenant`). */
const fromQuery = (admin: boolean, tenant: string | undefined) =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const query = requestUrl(request.url)?.searchParams ?? new URLSearchParams()
    const get = (name: string) => query.get(name) ?? undefined
    const allowed = groupings(admin)
    const groupBy = get("group_by")
    if (groupBy !== undefined && !allowed.includes(groupBy as GroupBy)) {
      return yield* httpError(400, `group_by: must be one of ${allowed.join(", ")}`, { param: "group_by" })
    }
    const span = window(get("from"), get("to"), yield* Clock.currentTimeMillis)
    if (Either.isLeft(span)) return yield* httpError(400, `${span.left.param}: ${span.left.message}`, { param: span.left.param })
    // Reads every answer already given (rows written behind their answers: platform/AnswerRows.ts).
    yield* AnswerRows.settled
    const result = yield* report({
      ...span.right,
      tenant: admin ? get("tenant") : tenant,
      groupBy: groupBy as GroupBy | undefined
    }).pipe(Effect.orDie)
    return HttpServerResponse.unsafeJson(result, { headers: { "cache-control": "no-store" } })
  })

/** `GET /v1/usage`: the caller's tenant. */
export const tenantUsage = Effect.flatMap(authenticate, (principal) => fromQuery(false, principal.tenant))

/** `GET /admin/usage`: every tenant (or `tenant=`), `group_by=tenant` too. */
export const adminUsage = Effect.zipRight(authorize, fromQuery(true, undefined))

/** Adds the usage routes. */
export const mount = <R>(router: HttpRouter.HttpRouter<never, R>) =>
  router.pipe(
    HttpRouter.get("/v1/usage", handle("task", tenantUsage)),
    HttpRouter.get("/admin/usage", handle("task", adminUsage))
  )

/**
 * E1/E2 reserve nothing: a request is refused (429 `insufficient_quota`) once the key's or the
 * tenant's budget is used up.
 */
export const requireQuota = (principal: Principal) =>
  // One step of the runtime for a key and tenant known to have no budget (most): the key store and
  // the clock are read from the fiber; a budget found is checked against the ledger.
  Effect.withFiberRuntime<void, HttpError, ApiKeys | SqlClient.SqlClient>((fiber) => {
    const keys = Context.get(fiber.currentContext as Context.Context<ApiKeys>, ApiKeys)
    const check = Ledger.budgetCheck(keys, principal, 0, nowOf(fiber))
    if (check === undefined) return Effect.void
    // The budget counts every answer already given, rows written behind it included.
    return Effect.zipRight(AnswerRows.settled, check).pipe(
      Effect.catchTags({
        BudgetExceeded: (e) => httpError(429, Ledger.describe(e), { title: "Budget exceeded", openAiCode: "insufficient_quota" }),
        SqlError: (e) => Effect.zipRight(Effect.logError("budget check failed", e), httpError(503, "the gateway could not check the budget; try again"))
      })
    )
  })

/**
 * Where the usage rows of chat completions (E1) are written. By default each alone, in its own
 * statement; the gateway's services (`requestWriterLayer`) give them to the answers' rows
 * (platform/AnswerRows.ts): a completion recorded before its answer (not streamed) is durable
 * before the answer goes out — committed on PostgreSQL, in the answers' log on SQLite.
 */
export class RequestUsageWriter extends Context.Reference<RequestUsageWriter>()("@genway/gateway/ledger/RequestUsageWriter", {
  defaultValue: (): (row: Ledger.RequestUsage) => Effect.Effect<void, SqlError, SqlClient.SqlClient> => Ledger.recordRequest
}) {}

/** `RequestUsageWriter` through the answers' rows in context. */
export const requestWriterLayer = Layer.effect(
  RequestUsageWriter,
  Effect.map(AnswerRows.AnswerRows, (answers) => (row: Ledger.RequestUsage) =>
    answers.submit([{ table: "usage_ledger", values: Ledger.requestColumns(row) }]))
)

/** Records a finished chat completion from its `usage` (a failure to record is logged, not answered). */
export const recordChat = (principal: Principal, entry: ModelEntry.ModelEntry, id: string, usage: Chat.Usage) =>
  Effect.gen(function*() {
    const at = yield* Clock.currentTimeMillis
    const write = yield* RequestUsageWriter
    yield* write({
      id,
      tenant: principal.tenant,
      keyId: principal.keyId,
      entry,
      inputTokens: usage.promptTokens,
      outputTokens: usage.completionTokens,
      at
    })
  }).pipe(Effect.catchAll((e) => Effect.logError("usage of a chat completion was not recorded", e)))

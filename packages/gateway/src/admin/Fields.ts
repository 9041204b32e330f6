/**
 * The fields of a key as the admin API and `genway keys` take them (DESIGN.md §9), checked into
 * the store's form. Every problem names its field, as the API's 400 does.
 */
import type { ModelEntry } from "@genway/core"
import type { BudgetPeriod, KeyFields } from "../platform/ApiKeys.js"
import * as Limits from "../platform/Limits.js"

/** A field at fault. */
export interface FieldIssue {
  readonly param: string
  readonly message: string
}

/** The wire names of the settable fields. */
export const fieldNames = ["name", "models", "rpm", "max_in_flight", "expires_at", "budget_usd", "budget_period"] as const

const periods: ReadonlyArray<BudgetPeriod> = ["day", "month", "total"]
const modelPattern = /^[A-Za-z0-9._\-/*:]{1,200}$/
const tenantPattern = /^[A-Za-z0-9._:@-]{1,200}$/
const maxLimit = 1_000_000

/** Checks a tenant name. */
export const checkTenant = (tenant: unknown, param = "tenant"): FieldIssue | string =>
  typeof tenant === "string" && tenantPattern.test(tenant)
    ? tenant
    : { param, message: "must be 1 to 200 characters of letters, digits and . _ : @ -" }

const positiveInt = (param: string, v: unknown): FieldIssue | number | null =>
  v === null
    ? null
    : typeof v === "number" && Number.isInteger(v) && v >= 1 && v <= maxLimit
    ? v
    : { param, message: `must be an integer from 1 to ${maxLimit}, or null for no limit` }

/** The allow-list: every pattern an entry id (or a `*` pattern) matching at least one entry. */
export const checkModels = (v: unknown, entries: ReadonlyArray<ModelEntry.ModelEntry>): FieldIssue | ReadonlyArray<string> | null => {
  if (v === null) return null
  if (!Array.isArray(v) || v.length === 0 || v.length > 200) {
    return { param: "models", message: "must be a list of 1 to 200 entry ids (with * wildcards), or null for every model" }
  }
  for (const [i, p] of v.entries()) {
    if (typeof p !== "string" || !modelPattern.test(p)) {
      const example = entries[0]
      const e_g = example === undefined ? "" : `, e.g. ${example.vendor}/* or ${example.id}`
      return { param: `models[${i}]`, message: `must be an entry id as /v1/models lists it${e_g}` }
    }
    if (!entries.some((e) => Limits.allows({ tenant: "", keyId: "", models: [p] }, e.id))) {
      return { param: `models[${i}]`, message: `matches no model: ${p} (see GET /v1/models for the entry ids)` }
    }
  }
  return [...new Set(v as ReadonlyArray<string>)]
}

/** An ISO 8601 time after `now` (epoch ms). */
export const checkExpiresAt = (v: unknown, now: number): FieldIssue | number | null => {
  if (v === null) return null
  const ms = typeof v === "string" && /^\d{4}-\d{2}-\d{2}([T ][0-9:.]+(Z|[+-]\d{2}:?\d{2})?)?$/.test(v.trim()) ? Date.parse(v.trim()) : NaN
  if (!Number.isFinite(ms)) return { param: "expires_at", message: "must be an ISO 8601 time, e.g. 2030-01-31T00:00:00Z, or null for no expiry" }
  if (ms <= now) return { param: "expires_at", message: `is in the past (${new Date(ms).toISOString()}); give a future time` }
  return ms
}

/** The fields present in `body` (a PATCH) or all of them (a create, absent ones null). */
export const checkFields = (
  body: Readonly<Record<string, unknown>>,
  options: { readonly entries: ReadonlyArray<ModelEntry.ModelEntry>; readonly now: number }
): FieldIssue | Partial<KeyFields> => {
  const out: { -readonly [K in keyof KeyFields]?: KeyFields[K] } = {}
  if ("name" in body) {
    const v = body.name
    if (v !== null && (typeof v !== "string" || v.length > 200)) return { param: "name", message: "must be a string of at most 200 characters, or null" }
    out.name = v as string | null
  }
  if ("models" in body) {
    const v = checkModels(body.models, options.entries)
    if (v !== null && !Array.isArray(v)) return v as FieldIssue
    out.models = v as ReadonlyArray<string> | null
  }
  for (const [wire, field] of [["rpm", "rpm"], ["max_in_flight", "maxInFlight"]] as const) {
    if (!(wire in body)) continue
    const v = positiveInt(wire, body[wire])
    if (v !== null && typeof v !== "number") return v
    out[field] = v
  }
  if ("expires_at" in body) {
    const v = checkExpiresAt(body.expires_at, options.now)
    if (v !== null && typeof v !== "number") return v
    out.expiresAt = v
  }
  if ("budget_usd" in body) {
    const v = body.budget_usd
    if (v !== null && (typeof v !== "number" || !Number.isFinite(v) || v < 0 || v > 1e12)) {
      return { param: "budget_usd", message: "must be a number of US dollars >= 0, or null for no budget" }
    }
    out.budgetUsd = v as number | null
  }
  if ("budget_period" in body) {
    const v = body.budget_period
    if (v !== null && !periods.includes(v as BudgetPeriod)) return { param: "budget_period", message: "must be one of day, month, total, or null" }
    out.budgetPeriod = v as BudgetPeriod | null
  }
  return out
}

/** Whether a check returned an issue. */
export const isIssue = (v: unknown): v is FieldIssue =>
  typeof v === "object" && v !== null && !Array.isArray(v) && "param" in v && "message" in v

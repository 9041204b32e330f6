/**
 * Bearer tokens and tenants. Tokens are shown once at creation and stored as SHA-256 hashes; a
 * presented token is hashed and compared in constant time. `GATEWAY_API_KEYS` tokens are each their
 * own tenant (named by a hash prefix, never by the token). Keys made in the database carry the
 * scopes and limits of DESIGN.md §9: a model allow-list, `rpm`, `max_in_flight`, an expiry, budget
 * fields, and during a rotation's grace the hash of the previous token.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { hash, randomBytes, timingSafeEqual } from "node:crypto"
import { Settings } from "./Config.js"
import * as Remembered from "./Remembered.js"

/** Who is calling, with the key's scopes and limits (absent or null: unlimited). */
export interface Principal {
  readonly tenant: string
  readonly keyId: string
  /** Entry ids (with `*` wildcards) the key may use; null: every model. */
  readonly models?: ReadonlyArray<string> | null
  readonly rpm?: number | null
  readonly maxInFlight?: number | null
  /** When this token stops working (the key's expiry, or the end of a rotation's grace). */
  readonly expiresAt?: number | null
}

/** A budget period (DESIGN.md §10). */
export type BudgetPeriod = "day" | "month" | "total"

/** The settable fields of a key. */
export interface KeyFields {
  readonly name: string | null
  readonly models: ReadonlyArray<string> | null
  readonly rpm: number | null
  readonly maxInFlight: number | null
  readonly expiresAt: number | null
  readonly budgetUsd: number | null
  readonly budgetPeriod: BudgetPeriod | null
}

/** A stored key as listed (never the token). */
export interface KeyInfo extends KeyFields {
  readonly id: string
  readonly tenant: string
  readonly prefix: string
  readonly createdAt: number
  readonly revokedAt: number | null
  /** End of the grace of the token replaced by the last rotation, while it runs. */
  readonly previousTokenExpiresAt: number | null
}

/** A tenant's budget. */
export interface TenantBudget {
  readonly tenant: string
  readonly budgetUsd: number | null
  readonly budgetPeriod: BudgetPeriod | null
}

/** What a presented token resolves to. */
export type Verdict =
  | { readonly _tag: "Ok"; readonly principal: Principal }
  | { readonly _tag: "Expired" }
  | { readonly _tag: "Unknown" }

/**
 * A token's SHA-256, in hex: one call per request (`crypto.hash`, Node 20.12 and later) rather than a
 * `Hash` object made, fed and digested, then its digest turned to hex (1.5 µs against 0.4 µs).
 */
const sha256 = (s: string): string => hash("sha256", s, "hex")

const numOrNull = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v))

const parseModels = (raw: unknown): ReadonlyArray<string> | null => {
  if (typeof raw !== "string") return null
  try {
    const parsed = JSON.parse(raw)
    return Array.isArray(parsed) ? parsed.map(String) : null
  } catch {
    return null
  }
}

const keyInfo = (r: Record<string, unknown>, now: number): KeyInfo => {
  const previous = numOrNull(r.previous_expires_at)
  return {
    id: r.id as string,
    tenant: r.tenant as string,
    name: (r.name as string | null) ?? null,
    prefix: r.prefix as string,
    createdAt: Number(r.created_at),
    revokedAt: numOrNull(r.revoked_at),
    models: parseModels(r.models),
    rpm: numOrNull(r.rpm),
    maxInFlight: numOrNull(r.max_in_flight),
    expiresAt: numOrNull(r.expires_at),
    budgetUsd: numOrNull(r.budget_usd),
    budgetPeriod: (r.budget_period as BudgetPeriod | null) ?? null,
    previousTokenExpiresAt: previous !== null && previous > now && r.previous_hash !== null ? previous : null
  }
}

const unknownToken: Verdict = { _tag: "Unknown" }
/** A presented token no key can have (empty, or longer than any token this gateway makes by far): unknown unread. */
const unusable = (token: string) => token.length === 0 || token.length > 512
const expiredToken: Verdict = { _tag: "Expired" }

const newToken = () => `gw_${randomBytes(24).toString("base64url")}`

const make = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const settings = yield* Settings

  const bootstrap = new Map<string, Principal>()
  for (const token of settings.apiKeys) {
    const digest = sha256(Redacted.value(token))
    bootstrap.set(digest, { tenant: `env-${digest.slice(0, 12)}`, keyId: `env-${digest.slice(0, 12)}` })
  }

  // Verified tokens are remembered briefly so the hot path does not query the database each time;
  // a key revoked on another replica stops working within this window. Expiry (and the end of a
  // rotation's grace) is checked on every request against the remembered time, so it is exact.
  const cacheTtlMs = 5_000
  const tokens = Remembered.make<Option.Option<Principal>>(cacheTtlMs)

  // Keys and tenants found without a budget, remembered for the same window: their creates and
  // E1/E2 requests then skip the budget lookup. Every budget written through this service forgets
  // them all at once; one written by another replica (or the CLI) applies here within the window.
  // A budget found is never remembered: it is read again, with its spending, every time.
  // A lookup that began before a budget was written here is not remembered (`budgetEpoch`).
  const unbudgeted = Remembered.make<true>(cacheTtlMs)
  const budgetKey = (tenant: string, keyId: string) => `${tenant}\u0000${keyId}`
  const forgetBudgets = () => unbudgeted.forget()

  /** Whether the key and its tenant were found without a budget less than the window ago. */
  const budgetFree = (tenant: string, keyId: string, now: number): boolean => unbudgeted.get(budgetKey(tenant, keyId), now) === true

  /** Counts the budget writes made here: read it before a lookup, pass it to `noteBudgetFree`. */
  const budgetEpoch = (): number => unbudgeted.epoch()

  /** Remembers that the key and its tenant have no budget, unless a budget was written since `since`. */
  const noteBudgetFree = (tenant: string, keyId: string, now: number, since: number): void =>
    unbudgeted.remember(budgetKey(tenant, keyId), true, now, since)

  /** The verdict on a remembered principal (or a remembered unknown token) at `now`. */
  const verdictOf = (principal: Option.Option<Principal>, now: number): Verdict => {
    if (Option.isNone(principal)) return unknownToken
    const expiresAt = principal.value.expiresAt
    if (expiresAt !== undefined && expiresAt !== null && expiresAt <= now) return expiredToken
    return { _tag: "Ok", principal: principal.value }
  }

  /**
   * The verdict on a presented token when it needs no database read (a token of
   * `GATEWAY_API_KEYS`, or one verified less than the window ago), else `undefined`. Synchronous:
   * the request path asks it first and reads the database only when it answers `undefined`.
   */
  const known = (token: string, now: number): Verdict | undefined => {
    if (unusable(token)) return unknownToken
    const remembered = digests.get(token)
    const hex = remembered ?? sha256(token)
    const verdict = knownHash(hex, now)
    if (remembered === undefined && verdict?._tag === "Ok") rememberDigest(token, hex)
    return verdict
  }

  // The hashes of tokens that verified, by token: a client sends the same token with each request,
  // and hashing it again cost about 1 % of an E2 request's CPU. Only a hash is remembered (the
  // verdict is still found from it each time: a revoked key stops as before); bounded, and
  // forgotten all at once when full, so presented tokens never accumulate.
  const digests = new Map<string, string>()
  const rememberDigest = (token: string, hex: string) => {
    if (digests.size >= 10_000) digests.clear()
    digests.set(token, hex)
  }

  /** `known` for a token's hash. */
  const knownHash = (hex: string, now: number): Verdict | undefined => {
    const fromEnv = bootstrap.get(hex)
    if (fromEnv !== undefined) return { _tag: "Ok", principal: fromEnv }
    const principal = tokens.get(hex, now)
    return principal === undefined ? undefined : verdictOf(principal, now)
  }

  /** Resolves a presented token: its principal, an expired token, or an unknown one. */
  const resolve = (token: string): Effect.Effect<Verdict> =>
    Effect.flatMap(Clock.currentTimeMillis, (now) => {
      if (unusable(token)) return Effect.succeed(unknownToken)
      const hex = sha256(token)
      const verdict = knownHash(hex, now)
      return verdict !== undefined ? Effect.succeed(verdict) : lookUp(hex, now)
    })

  /** Reads the key of a token's hash from the database, and remembers what it found for the window. */
  const lookUp = (hex: string, now: number): Effect.Effect<Verdict> =>
    Effect.gen(function*() {
      // A revocation or rotation through this replica during the lookup is not undone by it.
      const since = tokens.epoch()
      const rows = yield* sql`SELECT id, tenant, hash, previous_hash, previous_expires_at, models, rpm, max_in_flight, expires_at
        FROM api_keys WHERE (hash = ${hex} OR previous_hash = ${hex}) AND revoked_at IS NULL`.pipe(Effect.orDie)
      let principal: Option.Option<Principal> = Option.none()
      for (const row of rows) {
        const current = row.hash === hex
        const stored = (current ? row.hash : row.previous_hash) as string
        if (!timingSafeEqual(Buffer.from(stored, "hex"), Buffer.from(hex, "hex"))) continue
        const keyExpiry = numOrNull(row.expires_at)
        const graceEnd = current ? null : numOrNull(row.previous_expires_at) ?? 0
        const expiresAt = keyExpiry === null ? graceEnd : graceEnd === null ? keyExpiry : Math.min(keyExpiry, graceEnd)
        principal = Option.some({
          tenant: row.tenant as string,
          keyId: row.id as string,
          models: parseModels(row.models),
          rpm: numOrNull(row.rpm),
          maxInFlight: numOrNull(row.max_in_flight),
          expiresAt
        })
        break
      }
      tokens.remember(hex, principal, now, since)
      return verdictOf(principal, now)
    })

  /** Resolves a presented token to its principal (expired and unknown tokens alike: none). */
  const verify = (token: string): Effect.Effect<Option.Option<Principal>> =>
    Effect.map(resolve(token), (v) => (v._tag === "Ok" ? Option.some(v.principal) : Option.none()))

  /** Creates a key; the returned token is the only time it is visible. */
  const create = (options: { readonly [K in keyof KeyFields]?: KeyFields[K] | undefined } & { readonly tenant?: string | undefined }) =>
    Effect.gen(function*() {
      const id = `key_${randomBytes(6).toString("hex")}`
      const token = newToken()
      const now = yield* Clock.currentTimeMillis
      const tenant = options.tenant ?? id
      yield* sql`INSERT INTO api_keys (id, tenant, name, hash, prefix, created_at, updated_at, models, rpm, max_in_flight,
          expires_at, budget_usd, budget_period)
        VALUES (${id}, ${tenant}, ${options.name ?? null}, ${sha256(token)}, ${token.slice(0, 8)}, ${now}, ${now},
          ${options.models == null ? null : JSON.stringify(options.models)}, ${options.rpm ?? null}, ${options.maxInFlight ?? null},
          ${options.expiresAt ?? null}, ${options.budgetUsd ?? null}, ${options.budgetPeriod ?? null})`
      forgetBudgets()
      const info = yield* find(id)
      return { id, tenant, token: Redacted.make(token), info: Option.getOrThrow(info) }
    })

  /** One key by id (revoked included). */
  const find = (id: string) =>
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const rows = yield* sql`SELECT * FROM api_keys WHERE id = ${id}`
      return rows.length === 0 ? Option.none<KeyInfo>() : Option.some(keyInfo(rows[0]!, now))
    })

  /** Every stored key, newest first; `tenant` narrows to one tenant. */
  const listWhere = (tenant?: string) =>
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const rows = tenant === undefined
        ? yield* sql`SELECT * FROM api_keys ORDER BY created_at DESC, id`
        : yield* sql`SELECT * FROM api_keys WHERE tenant = ${tenant} ORDER BY created_at DESC, id`
      return rows.map((r) => keyInfo(r, now))
    })

  /** Every stored key, newest first. */
  const list = listWhere()

  /** Changes the given fields of an active key; none when no active key has that id. */
  const update = (id: string, patch: Partial<KeyFields>) =>
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const set: Record<string, unknown> = { updated_at: now }
      if (patch.name !== undefined) set.name = patch.name
      if (patch.models !== undefined) set.models = patch.models === null ? null : JSON.stringify(patch.models)
      if (patch.rpm !== undefined) set.rpm = patch.rpm
      if (patch.maxInFlight !== undefined) set.max_in_flight = patch.maxInFlight
      if (patch.expiresAt !== undefined) set.expires_at = patch.expiresAt
      if (patch.budgetUsd !== undefined) set.budget_usd = patch.budgetUsd
      if (patch.budgetPeriod !== undefined) set.budget_period = patch.budgetPeriod
      const rows = yield* sql`UPDATE api_keys SET ${sql.update(set)} WHERE id = ${id} AND revoked_at IS NULL RETURNING id`
      tokens.forget()
      forgetBudgets()
      if (rows.length === 0) return Option.none<KeyInfo>()
      return yield* find(id)
    })

  /**
   * Gives an active key a new token; the old one keeps working for `graceSeconds` (0: stops now).
   * A token replaced by an earlier rotation stops at once.
   */
  const rotate = (id: string, graceSeconds: number) =>
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const token = newToken()
      const previousExpiresAt = now + graceSeconds * 1000
      const rows = yield* sql`UPDATE api_keys SET previous_hash = ${graceSeconds > 0 ? sql.literal("hash") : null},
          previous_expires_at = ${graceSeconds > 0 ? previousExpiresAt : null},
          hash = ${sha256(token)}, prefix = ${token.slice(0, 8)}, updated_at = ${now}
        WHERE id = ${id} AND revoked_at IS NULL RETURNING id`
      tokens.forget()
      if (rows.length === 0) return Option.none<{ id: string; token: Redacted.Redacted<string>; previousTokenExpiresAt: number }>()
      return Option.some({ id, token: Redacted.make(token), previousTokenExpiresAt: previousExpiresAt })
    })

  /** Revokes a key; `false` when no active key has that id. */
  const revoke = (id: string) =>
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const rows = yield* sql`UPDATE api_keys SET revoked_at = ${now} WHERE id = ${id} AND revoked_at IS NULL RETURNING id`
      tokens.forget()
      return rows.length > 0
    })

  /** Whether a tenant exists: it has a key (revoked included) or a budget. */
  const tenantExists = (tenant: string) =>
    Effect.map(
      sql`SELECT 1 AS ok FROM api_keys WHERE tenant = ${tenant} UNION ALL SELECT 1 AS ok FROM tenant_budgets WHERE tenant = ${tenant}`,
      (rows) => rows.length > 0
    )

  /** Sets a tenant's budget (enforced by the usage ledger). */
  const setTenantBudget = (tenant: string, budgetUsd: number | null, budgetPeriod: BudgetPeriod | null) =>
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      yield* sql`INSERT INTO tenant_budgets (tenant, budget_usd, budget_period, updated_at)
        VALUES (${tenant}, ${budgetUsd}, ${budgetPeriod}, ${now})
        ON CONFLICT (tenant) DO UPDATE SET budget_usd = ${budgetUsd}, budget_period = ${budgetPeriod}, updated_at = ${now}`
      forgetBudgets()
      return { tenant, budgetUsd, budgetPeriod } satisfies TenantBudget
    })

  /** A tenant's budget, if one was set. */
  const tenantBudget = (tenant: string) =>
    Effect.map(sql`SELECT * FROM tenant_budgets WHERE tenant = ${tenant}`, (rows) =>
      rows.length === 0
        ? Option.none<TenantBudget>()
        : Option.some({
          tenant,
          budgetUsd: numOrNull(rows[0]!.budget_usd),
          budgetPeriod: (rows[0]!.budget_period as BudgetPeriod | null) ?? null
        }))

  /** Whether any way to authenticate exists (for the startup hint). */
  const anyConfigured = Effect.map(
    sql`SELECT COUNT(*) AS n FROM api_keys WHERE revoked_at IS NULL`,
    (rows) => bootstrap.size > 0 || Number(rows[0]?.n ?? 0) > 0
  )

  return {
    resolve,
    known,
    verify,
    create,
    find,
    list,
    listWhere,
    update,
    rotate,
    revoke,
    tenantExists,
    setTenantBudget,
    tenantBudget,
    budgetFree,
    budgetEpoch,
    noteBudgetFree,
    anyConfigured
  } as const
})

/** The key store. */
export class ApiKeys extends Context.Tag("@genway/gateway/ApiKeys")<ApiKeys, Effect.Effect.Success<typeof make>>() {}

/** Keys over the `SqlClient` and settings in context. */
export const layer = Layer.effect(ApiKeys, make)

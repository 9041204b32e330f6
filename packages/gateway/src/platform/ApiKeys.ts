/**
 * Bearer tokens and tenants. Tokens are shown once at creation and stored as SHA-256 hashes; a
 * presented token is hashed and compared in constant time. `GATEWAY_API_KEYS` tokens are each their
 * own tenant (named by a hash prefix, never by the token).
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { createHash, randomBytes, timingSafeEqual } from "node:crypto"
import { Settings } from "./Config.js"

/** Who is calling. */
export interface Principal {
  readonly tenant: string
  readonly keyId: string
}

/** A stored key as listed (never the token). */
export interface KeyInfo {
  readonly id: string
  readonly tenant: string
  readonly name: string | null
  readonly prefix: string
  readonly createdAt: number
  readonly revokedAt: number | null
}

const sha256 = (s: string) => createHash("sha256").update(s).digest()

const make = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const settings = yield* Settings

  const bootstrap = new Map<string, Principal>()
  for (const token of settings.apiKeys) {
    const digest = sha256(Redacted.value(token)).toString("hex")
    bootstrap.set(digest, { tenant: `env-${digest.slice(0, 12)}`, keyId: `env-${digest.slice(0, 12)}` })
  }

  // Verified tokens are remembered briefly so the hot path does not query the database each time;
  // a revoked key stops working within this window.
  const cacheTtlMs = 5_000
  const cache = new Map<string, { readonly principal: Option.Option<Principal>; readonly until: number }>()

  /** Resolves a presented token to its principal. */
  const verify = (token: string): Effect.Effect<Option.Option<Principal>> =>
    Effect.gen(function*() {
      if (token.length === 0 || token.length > 512) return Option.none()
      const digest = sha256(token)
      const hex = digest.toString("hex")
      const fromEnv = bootstrap.get(hex)
      if (fromEnv !== undefined) return Option.some(fromEnv)
      const now = yield* Clock.currentTimeMillis
      const cached = cache.get(hex)
      if (cached !== undefined && cached.until > now) return cached.principal
      const rows = yield* sql`SELECT id, tenant, hash FROM api_keys WHERE hash = ${hex} AND revoked_at IS NULL`.pipe(
        Effect.orDie
      )
      const row = rows[0]
      const principal = row !== undefined && timingSafeEqual(Buffer.from(row.hash as string, "hex"), digest)
        ? Option.some({ tenant: row.tenant as string, keyId: row.id as string })
        : Option.none<Principal>()
      if (cache.size > 10_000) cache.clear()
      cache.set(hex, { principal, until: now + cacheTtlMs })
      return principal
    })

  /** Creates a key; the returned token is the only time it is visible. */
  const create = (options: { readonly name?: string | undefined; readonly tenant?: string | undefined }) =>
    Effect.gen(function*() {
      const id = `key_${randomBytes(6).toString("hex")}`
      const token = `gw_${randomBytes(24).toString("base64url")}`
      const now = yield* Clock.currentTimeMillis
      const tenant = options.tenant ?? id
      yield* sql`INSERT INTO api_keys (id, tenant, name, hash, prefix, created_at)
        VALUES (${id}, ${tenant}, ${options.name ?? null}, ${sha256(token).toString("hex")}, ${token.slice(0, 8)}, ${now})`
      return { id, tenant, token: Redacted.make(token) }
    })

  /** Every stored key, newest first. */
  const list = sql`SELECT id, tenant, name, prefix, created_at, revoked_at FROM api_keys ORDER BY created_at DESC, id`.pipe(
    Effect.map((rows) =>
      rows.map((r): KeyInfo => ({
        id: r.id as string,
        tenant: r.tenant as string,
        name: (r.name as string | null) ?? null,
        prefix: r.prefix as string,
        createdAt: Number(r.created_at),
        revokedAt: r.revoked_at === null ? null : Number(r.revoked_at)
      }))
    )
  )

  /** Revokes a key; `false` when no active key has that id. */
  const revoke = (id: string) =>
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const rows = yield* sql`UPDATE api_keys SET revoked_at = ${now} WHERE id = ${id} AND revoked_at IS NULL RETURNING id`
      cache.clear()
      return rows.length > 0
    })

  /** Whether any way to authenticate exists (for the startup hint). */
  const anyConfigured = Effect.map(
    sql`SELECT COUNT(*) AS n FROM api_keys WHERE revoked_at IS NULL`,
    (rows) => bootstrap.size > 0 || Number(rows[0]?.n ?? 0) > 0
  )

  return { verify, create, list, revoke, anyConfigured } as const
})

/** The key store. */
export class ApiKeys extends Context.Tag("@genway/gateway/ApiKeys")<ApiKeys, Effect.Effect.Success<typeof make>>() {}

/** Keys over the `SqlClient` and settings in context. */
export const layer = Layer.effect(ApiKeys, make)

/**
 * The admin API of DESIGN.md §9, for a platform team that hands out keys: create, list, change,
 * revoke and rotate keys, and set tenant budgets. Enabled by `GATEWAY_ADMIN_TOKEN` and called with
 * `Authorization: Bearer <admin token>`: 401 without it (a tenant's token included), and every
 * route answers 404 while the variable is unset, as if it did not exist. Errors take the task
 * surface's shape. Tokens appear once, in the answer that made them.
 */
import * as HttpRouter from "@effect/platform/HttpRouter"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { Registry } from "@genway/registry"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { createHash, timingSafeEqual } from "node:crypto"
import { httpError } from "../http/Errors.js"
import { handle } from "../http/Handle.js"
import { readJson, requestUrl } from "../http/Request.js"
import { ApiKeys, type KeyInfo } from "../platform/ApiKeys.js"
import { Settings } from "../platform/Config.js"
import * as Fields from "./Fields.js"

/** What the admin routes need. */
export type Services = ApiKeys | Settings | Registry.Registry

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString())

/** A key as the admin API shows it (never its token). */
export const keyJson = (k: KeyInfo) => ({
  id: k.id,
  object: "api_key" as const,
  tenant: k.tenant,
  name: k.name,
  prefix: k.prefix,
  models: k.models,
  rpm: k.rpm,
  max_in_flight: k.maxInFlight,
  expires_at: iso(k.expiresAt),
  budget_usd: k.budgetUsd,
  budget_period: k.budgetPeriod,
  created_at: iso(k.createdAt),
  revoked_at: iso(k.revokedAt),
  previous_token_expires_at: iso(k.previousTokenExpiresAt)
})

const digest = (s: string) => createHash("sha256").update(s).digest()

/** 404 unless the admin API is enabled, 401 unless the caller presents the admin token. */
/** Requires the admin token (404 while the admin API is not configured). */
export const authorize = Effect.gen(function*() {
  const settings = yield* Settings
  const request = yield* HttpServerRequest.HttpServerRequest
  if (Option.isNone(settings.adminToken)) {
    const path = requestUrl(request.url)?.pathname ?? "/admin"
    return yield* httpError(404, `no route for ${request.method} ${path}`)
  }
  const m = /^Bearer[ ]+(\S+)\s*$/i.exec(request.headers["authorization"] ?? "")
  const ok = m !== null && timingSafeEqual(digest(m[1]!), digest(Redacted.value(settings.adminToken.value)))
  if (!ok) {
    return yield* httpError(401, "the admin API needs Authorization: Bearer <GATEWAY_ADMIN_TOKEN>", {
      headers: { "www-authenticate": 'Bearer realm="genway-admin"' }
    })
  }
})

const maxBody = 64 * 1024

/** The JSON object of the body; an absent body (no content type, no length) is `{}` where allowed. */
const body = (optional: boolean) =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const length = request.headers["content-length"]
    if (optional && request.headers["content-type"] === undefined && (length === undefined || length === "0")) return {}
    const json = yield* readJson(maxBody)
    if (typeof json !== "object" || json === null || Array.isArray(json)) {
      return yield* httpError(400, "the request body must be a JSON object", { param: "body" })
    }
    return json as Readonly<Record<string, unknown>>
  })

const refuseUnknown = (json: Readonly<Record<string, unknown>>, allowed: ReadonlyArray<string>) => {
  const unknown = Object.keys(json).find((k) => !allowed.includes(k))
  return unknown === undefined
    ? Effect.void
    : httpError(400, `unknown field ${unknown}; the fields are ${allowed.join(", ")}`, { param: unknown })
}

const fail = (issue: Fields.FieldIssue) => httpError(400, `${issue.param}: ${issue.message}`, { param: issue.param })

const checked = (json: Readonly<Record<string, unknown>>) =>
  Effect.gen(function*() {
    const registry = yield* Registry.Registry
    const now = yield* Clock.currentTimeMillis
    const fields = Fields.checkFields(json, { entries: registry.entries, now })
    if (Fields.isIssue(fields)) return yield* fail(fields)
    return fields
  })

const keyId = Effect.map(HttpRouter.params, (p) => p.id ?? "")

const notFound = (id: string) => httpError(404, `no active key ${id.slice(0, 100)}`, { param: "id" })

/** `POST /admin/keys` → 201 with the key and its token (the only time it is shown). */
export const createKey = Effect.gen(function*() {
  yield* authorize
  const json = yield* body(true)
  yield* refuseUnknown(json, ["tenant", ...Fields.fieldNames])
  const fields = yield* checked(json)
  let tenant: string | undefined
  if (json.tenant !== undefined && json.tenant !== null) {
    const t = Fields.checkTenant(json.tenant)
    if (typeof t !== "string") return yield* fail(t)
    tenant = t
  }
  const keys = yield* ApiKeys
  const made = yield* keys.create({
    ...fields,
    ...(fields.budgetUsd != null && fields.budgetPeriod == null ? { budgetPeriod: "month" as const } : {}),
    tenant
  }).pipe(Effect.orDie)
  return HttpServerResponse.unsafeJson({ ...keyJson(made.info), token: Redacted.value(made.token) }, {
    status: 201,
    headers: { location: `/admin/keys/${made.id}`, "cache-control": "no-store" }
  })
})

/** `GET /admin/keys[?tenant=]` → `{data: [...]}`, newest first, without tokens. */
export const listKeys = Effect.gen(function*() {
  yield* authorize
  const request = yield* HttpServerRequest.HttpServerRequest
  const tenant = requestUrl(request.url)?.searchParams.get("tenant") ?? undefined
  const keys = yield* ApiKeys
  const all = yield* keys.listWhere(tenant).pipe(Effect.orDie)
  return HttpServerResponse.unsafeJson({ object: "list", data: all.map(keyJson) })
})

/** `GET /admin/keys/{id}`. */
export const getKey = Effect.gen(function*() {
  yield* authorize
  const id = yield* keyId
  const found = yield* Effect.flatMap(ApiKeys, (k) => k.find(id)).pipe(Effect.orDie)
  if (Option.isNone(found)) return yield* httpError(404, `no key ${id.slice(0, 100)}`, { param: "id" })
  return HttpServerResponse.unsafeJson(keyJson(found.value))
})

/** `PATCH /admin/keys/{id}` → 200 with the key; only the fields sent change (null clears one). */
export const updateKey = Effect.gen(function*() {
  yield* authorize
  const id = yield* keyId
  const json = yield* body(false)
  yield* refuseUnknown(json, Fields.fieldNames)
  const fields = yield* checked(json)
  const updated = yield* Effect.flatMap(ApiKeys, (k) => k.update(id, fields)).pipe(Effect.orDie)
  if (Option.isNone(updated)) return yield* notFound(id)
  return HttpServerResponse.unsafeJson(keyJson(updated.value))
})

/** `DELETE /admin/keys/{id}` → 204: the key is revoked (on every replica within 5 s). */
export const revokeKey = Effect.gen(function*() {
  yield* authorize
  const id = yield* keyId
  const keys = yield* ApiKeys
  const done = yield* keys.revoke(id).pipe(Effect.orDie)
  if (!done) {
    // Revoking a revoked key again is not an error.
    const found = yield* keys.find(id).pipe(Effect.orDie)
    if (Option.isNone(found)) return yield* notFound(id)
  }
  return HttpServerResponse.empty({ status: 204 })
})

const maxGraceSeconds = 30 * 24 * 3600

/** `POST /admin/keys/{id}/rotate` `{grace_seconds}` → 200 `{id, token, previous_token_expires_at}`. */
export const rotateKey = Effect.gen(function*() {
  yield* authorize
  const id = yield* keyId
  const json = yield* body(true)
  yield* refuseUnknown(json, ["grace_seconds"])
  const grace = json.grace_seconds ?? 0
  if (typeof grace !== "number" || !Number.isInteger(grace) || grace < 0 || grace > maxGraceSeconds) {
    return yield* httpError(400, `grace_seconds: must be an integer from 0 to ${maxGraceSeconds}`, { param: "grace_seconds" })
  }
  const rotated = yield* Effect.flatMap(ApiKeys, (k) => k.rotate(id, grace)).pipe(Effect.orDie)
  if (Option.isNone(rotated)) return yield* notFound(id)
  return HttpServerResponse.unsafeJson({
    id,
    token: Redacted.value(rotated.value.token),
    previous_token_expires_at: iso(rotated.value.previousTokenExpiresAt)
  }, { headers: { "cache-control": "no-store" } })
})

/** `PUT /admin/tenants/{tenant}/budget` `{budget_usd, budget_period}` → 200. */
export const putTenantBudget = Effect.gen(function*() {
  yield* authorize
  const tenant = Fields.checkTenant((yield* HttpRouter.params).tenant ?? "")
  if (typeof tenant !== "string") return yield* fail(tenant)
  const json = yield* body(false)
  yield* refuseUnknown(json, ["budget_usd", "budget_period"])
  for (const name of ["budget_usd", "budget_period"]) {
    if (!(name in json)) return yield* httpError(400, `${name}: is required (null for none)`, { param: name })
  }
  const fields = yield* checked(json)
  const saved = yield* Effect.flatMap(ApiKeys, (k) =>
    k.setTenantBudget(tenant, fields.budgetUsd ?? null, fields.budgetPeriod ?? null)).pipe(Effect.orDie)
  return HttpServerResponse.unsafeJson({ tenant: saved.tenant, budget_usd: saved.budgetUsd, budget_period: saved.budgetPeriod })
})

/** `GET /admin/tenants/{tenant}/budget` → 200, or 404 when none was set. */
export const getTenantBudget = Effect.gen(function*() {
  yield* authorize
  const tenant = (yield* HttpRouter.params).tenant ?? ""
  const found = yield* Effect.flatMap(ApiKeys, (k) => k.tenantBudget(tenant)).pipe(Effect.orDie)
  if (Option.isNone(found)) return yield* httpError(404, `no budget set for tenant ${tenant.slice(0, 100)}`, { param: "tenant" })
  return HttpServerResponse.unsafeJson({ tenant, budget_usd: found.value.budgetUsd, budget_period: found.value.budgetPeriod })
})

/** Adds the admin routes. */
export const mount = <R>(router: HttpRouter.HttpRouter<never, R>): HttpRouter.HttpRouter<never, R | Services> =>
  router.pipe(
    HttpRouter.post("/admin/keys", handle("task", createKey)),
    HttpRouter.get("/admin/keys", handle("task", listKeys)),
    HttpRouter.get("/admin/keys/:id", handle("task", getKey)),
    HttpRouter.patch("/admin/keys/:id", handle("task", updateKey)),
    HttpRouter.del("/admin/keys/:id", handle("task", revokeKey)),
    HttpRouter.post("/admin/keys/:id/rotate", handle("task", rotateKey)),
    HttpRouter.put("/admin/tenants/:tenant/budget", handle("task", putTenantBudget)),
    HttpRouter.get("/admin/tenants/:tenant/budget", handle("task", getTenantBudget))
  )

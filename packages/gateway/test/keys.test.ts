/**
 * Keys a platform team hands out (DESIGN.md §9), over real HTTP on both surfaces: the admin API,
 * model allow-lists (403), expiry and revocation (401), rotation grace, `rpm` and `max_in_flight`
 * (429 with `Retry-After` and `RateLimit-*`), with time driven by the `TestClock`.
 */
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import { assert, describe, layer } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as TestClock from "effect/TestClock"
import OpenAI from "openai"
import * as Limits from "../src/platform/Limits.js"
import * as Chat from "./chatHarness.js"
import * as Harness from "./harness.js"

const adminToken = "admin-token-for-tests-0123456789"
const e4 = "/vendors/vendor-b/v1/vid2.5-t2v-preview/generation"
const g1 = "/vendors/vendor-d/v1/film-3.1-fast/generation"
const chatModel = "image-model-2.5-flash-image-preview"

type Method = "GET" | "POST" | "PATCH" | "DELETE" | "PUT"

/** A request to the admin API (with the admin token unless `token` says otherwise). */
const admin = (method: Method, path: string, body?: unknown, token: string | null = adminToken) => {
  let request = HttpClientRequest.make(method)(path)
  if (token !== null) request = HttpClientRequest.setHeader(request, "authorization", `Bearer ${token}`)
  if (body !== undefined) request = HttpClientRequest.bodyUnsafeJson(request, body)
  return Harness.send(request)
}

/** Creates a key through the admin API; returns its id and token. */
const makeKey = (fields: Record<string, unknown> = {}) =>
  Effect.map(admin("POST", "/admin/keys", fields), (r) => {
    assert.strictEqual(r.status, 201, r.text)
    return { id: r.json.id as string, token: r.json.token as string, tenant: r.json.tenant as string, json: r.json }
  })

const prompt = { prompt: "a lighthouse at dusk" }

const gatewayWithAdmin = Chat.sandboxLayer({ settings: { adminToken: Option.some(Redacted.make(adminToken)) } })

/** Runs an OpenAI client call, returning its error (or failing the test when it succeeds). */
const openAiError = (call: () => Promise<unknown>) =>
  Effect.promise(() => call().then(() => undefined, (e: unknown) => e))

describe("admin API", () => {
  layer(gatewayWithAdmin)((it) => {
    it.effect("401 without the admin token, a tenant's token included", () =>
      Effect.gen(function*() {
        for (const token of [null, Harness.tokenA, "wrong-admin-token-0123456789"]) {
          const r = yield* admin("GET", "/admin/keys", undefined, token)
          assert.strictEqual(r.status, 401)
          assert.strictEqual(r.json.error.code, 401)
          assert.match(r.headers["www-authenticate"]!, /^Bearer/)
        }
        const made = yield* makeKey()
        const withKey = yield* admin("POST", "/admin/keys", {}, made.token)
        assert.strictEqual(withKey.status, 401)
      }))

    it.effect("create → 201 with the token once; list without tokens; get; patch; revoke", () =>
      Effect.gen(function*() {
        const created = yield* admin("POST", "/admin/keys", {
          name: "team-video",
          models: ["vendor-b/*", "vendor-d/image-model-2.5-flash-image-preview"],
          rpm: 60,
          max_in_flight: 5,
          expires_at: "2031-01-01T00:00:00Z",
          budget_usd: 25.5,
          budget_period: "month"
        })
        assert.strictEqual(created.status, 201)
        const key = created.json
        assert.match(key.id, /^key_/)
        assert.match(key.token, /^gw_/)
        assert.strictEqual(key.tenant, key.id, "a key made without tenant gets a new tenant")
        assert.strictEqual(key.name, "team-video")
        assert.deepStrictEqual(key.models, ["vendor-b/*", "vendor-d/image-model-2.5-flash-image-preview"])
        assert.strictEqual(key.rpm, 60)
        assert.strictEqual(key.max_in_flight, 5)
        assert.strictEqual(key.expires_at, "2031-01-01T00:00:00.000Z")
        assert.strictEqual(key.budget_usd, 25.5)
        assert.strictEqual(key.budget_period, "month")
        assert.isString(key.created_at)

        const second = yield* makeKey({ tenant: key.tenant })
        assert.strictEqual(second.tenant, key.tenant)

        const list = yield* admin("GET", "/admin/keys")
        assert.strictEqual(list.status, 200)
        assert.notInclude(list.text, key.token)
        const listed = list.json.data.find((k: any) => k.id === key.id)
        assert.strictEqual(listed.rpm, 60)
        assert.isUndefined(listed.token)
        const ofTenant = yield* admin("GET", `/admin/keys?tenant=${key.tenant}`)
        assert.deepStrictEqual(ofTenant.json.data.map((k: any) => k.id).sort(), [key.id, second.id].sort())

        const patched = yield* admin("PATCH", `/admin/keys/${key.id}`, { rpm: null, models: ["vendor-d/*"] })
        assert.strictEqual(patched.status, 200)
        assert.strictEqual(patched.json.rpm, null)
        assert.deepStrictEqual(patched.json.models, ["vendor-d/*"])
        assert.strictEqual(patched.json.max_in_flight, 5, "fields not sent are kept")
        const got = yield* admin("GET", `/admin/keys/${key.id}`)
        assert.deepStrictEqual(got.json.models, ["vendor-d/*"])

        const revoked = yield* admin("DELETE", `/admin/keys/${key.id}`)
        assert.strictEqual(revoked.status, 204)
        const refused = yield* Harness.send(Harness.get("/v1/models", key.token))
        assert.strictEqual(refused.status, 401, "revoked on this replica at once")
        assert.strictEqual((yield* admin("PATCH", `/admin/keys/${key.id}`, { rpm: 1 })).status, 404)
        assert.strictEqual((yield* admin("DELETE", "/admin/keys/key_nope")).status, 404)
      }))

    it.effect("400 naming the field: a past expires_at, a model matching nothing, a bad limit, an unknown field", () =>
      Effect.gen(function*() {
        yield* TestClock.setTime(Date.parse("2030-06-01T00:00:00Z"))
        const cases: Array<[Record<string, unknown>, string]> = [
          [{ expires_at: "2030-05-31T23:59:59Z" }, "expires_at"],
          [{ expires_at: "tomorrow" }, "expires_at"],
          [{ models: ["vendor-z/*"] }, "models[0]"],
          [{ models: [] }, "models"],
          [{ rpm: 0 }, "rpm"],
          [{ max_in_flight: 1.5 }, "max_in_flight"],
          [{ budget_usd: -1 }, "budget_usd"],
          [{ budget_period: "week" }, "budget_period"],
          [{ colour: "red" }, "colour"]
        ]
        for (const [body, param] of cases) {
          const r = yield* admin("POST", "/admin/keys", body)
          assert.strictEqual(r.status, 400, JSON.stringify(body))
          assert.strictEqual(r.json.error.param, param)
          assert.include(r.json.error.detail, param)
        }
        const future = yield* admin("POST", "/admin/keys", { expires_at: "2030-06-02T00:00:00Z" })
        assert.strictEqual(future.status, 201)
      }))

    it.effect("tenant budgets are stored and returned", () =>
      Effect.gen(function*() {
        const put = yield* admin("PUT", "/admin/tenants/team-a/budget", { budget_usd: 100, budget_period: "day" })
        assert.strictEqual(put.status, 200)
        assert.deepStrictEqual(put.json, { tenant: "team-a", budget_usd: 100, budget_period: "day" })
        const got = yield* admin("GET", "/admin/tenants/team-a/budget")
        assert.deepStrictEqual(got.json, put.json)
        const bad = yield* admin("PUT", "/admin/tenants/team-a/budget", { budget_usd: 100, budget_period: "year" })
        assert.strictEqual(bad.status, 400)
        assert.strictEqual(bad.json.error.param, "budget_period")
      }))

    it.effect("OpenAPI lists the admin routes under their own tag", () =>
      Effect.gen(function*() {
        const spec = (yield* Harness.send(HttpClientRequest.get("/openapi.json"))).json
        assert.isTrue(spec.tags.some((t: any) => t.name === "admin"))
        for (const [path, method] of [["/admin/keys", "post"], ["/admin/keys", "get"], ["/admin/keys/{id}", "patch"], ["/admin/keys/{id}", "delete"], ["/admin/keys/{id}/rotate", "post"], ["/admin/tenants/{tenant}/budget", "put"]]) {
          assert.deepStrictEqual(spec.paths[path!]?.[method!]?.tags, ["admin"], `${method} ${path}`)
        }
      }))
  })

  layer(Harness.layer())((it) => {
    it.effect("every admin route is 404 while GATEWAY_ADMIN_TOKEN is unset", () =>
      Effect.gen(function*() {
        for (const [method, path] of [["GET", "/admin/keys"], ["POST", "/admin/keys"], ["PATCH", "/admin/keys/key_x"], ["DELETE", "/admin/keys/key_x"], ["POST", "/admin/keys/key_x/rotate"], ["PUT", "/admin/tenants/t/budget"]] as const) {
          const r = yield* admin(method, path, method === "GET" || method === "DELETE" ? undefined : {})
          assert.strictEqual(r.status, 404, `${method} ${path}`)
        }
      }))
  })
})

describe("enforcement", () => {
  layer(gatewayWithAdmin)((it) => {
    it.effect("models: 403 outside the list on the task surface (create, retrieve, events, cancel), /v1/models narrowed", () =>
      Effect.gen(function*() {
        const key = yield* makeKey({ models: ["vendor-b/*"] })
        const allowed = yield* Harness.send(Harness.post(e4, prompt, key.token))
        assert.strictEqual(allowed.status, 202)
        const refused = yield* Harness.send(Harness.post(g1, prompt, key.token))
        assert.strictEqual(refused.status, 403)
        assert.strictEqual(refused.json.error.code, 403)
        assert.include(refused.json.error.detail, "vendor-d/film-3.1-fast")
        const retrieve = yield* Harness.send(Harness.get(`${g1}/${allowed.json.task_info.id}`, key.token))
        assert.strictEqual(retrieve.status, 403)
        // The task routes of §8 hold the same rule: events and cancel of a model outside the list.
        const events = yield* Harness.send(Harness.get(`${g1}/${allowed.json.task_info.id}/events`, key.token))
        assert.strictEqual(events.status, 403)
        const cancel = yield* Harness.send(Harness.post(`${g1}/${allowed.json.task_info.id}/cancel`, {}, key.token))
        assert.strictEqual(cancel.status, 403)
        const models = yield* Harness.send(Harness.get("/v1/models", key.token))
        assert.isAbove(models.json.data.length, 0)
        assert.isTrue(models.json.data.every((m: any) => m.id.startsWith("vendor-b/")))
        const all = yield* Harness.send(Harness.get("/v1/models"))
        assert.isAbove(all.json.data.length, models.json.data.length)
      }))

    it.effect("models: the OpenAI client raises PermissionDeniedError (permission_error, model_not_allowed)", () =>
      Effect.gen(function*() {
        const key = yield* makeKey({ models: ["vendor-b/*"] })
        const client = yield* Chat.openai(key.token)
        const error = yield* openAiError(() => client.chat.completions.create({ model: chatModel, messages: Chat.ask("hi") }))
        assert.instanceOf(error, OpenAI.PermissionDeniedError)
        const e = error as InstanceType<typeof OpenAI.PermissionDeniedError>
        assert.strictEqual(e.status, 403)
        assert.strictEqual(e.code, "model_not_allowed")
        assert.strictEqual(e.type, "permission_error")
        assert.include(e.message, `vendor-d/${chatModel}`)
        const scoped = yield* makeKey({ models: [`vendor-d/${chatModel}`] })
        const ok = yield* Effect.promise(() =>
          new OpenAI({ apiKey: scoped.token, baseURL: client.baseURL, maxRetries: 0 }).chat.completions.create({ model: chatModel, messages: Chat.ask("hi") })
        )
        assert.match(ok.id, /^chatcmpl-/)
      }))

    it.effect("rpm: RateLimit-* on successes, then 429 with Retry-After and RateLimit-*; refusals do not count; the next minute resets", () =>
      Effect.gen(function*() {
        const before = (yield* Metric.value(Metric.tagged(Limits.rateLimitedTotal, "reason", "rpm"))).count
        const key = yield* makeKey({ rpm: 3 })
        for (const remaining of [2, 1, 0]) {
          const r = yield* Harness.send(Harness.post(e4, prompt, key.token))
          assert.strictEqual(r.status, 202)
          assert.strictEqual(r.headers["ratelimit-limit"], "3")
          assert.strictEqual(r.headers["ratelimit-remaining"], String(remaining))
          assert.match(r.headers["ratelimit-reset"]!, /^\d+$/)
        }
        for (let i = 0; i < 2; i++) {
          const refused = yield* Harness.send(Harness.post(e4, prompt, key.token))
          assert.strictEqual(refused.status, 429)
          assert.strictEqual(refused.json.error.code, 429)
          assert.match(refused.headers["retry-after"]!, /^\d+$/)
          assert.isAtLeast(Number(refused.headers["retry-after"]), 1)
          assert.strictEqual(refused.headers["ratelimit-limit"], "3")
          assert.strictEqual(refused.headers["ratelimit-remaining"], "0")
          assert.strictEqual(refused.headers["ratelimit-reset"], refused.headers["retry-after"])
        }
        const after = (yield* Metric.value(Metric.tagged(Limits.rateLimitedTotal, "reason", "rpm"))).count
        assert.strictEqual(after - before, 2)
        // Keys without an rpm carry no RateLimit-* headers.
        const plain = yield* Harness.send(Harness.get("/v1/models"))
        assert.isUndefined(plain.headers["ratelimit-limit"])
        yield* TestClock.adjust("61 seconds")
        const again = yield* Harness.send(Harness.get("/v1/models", key.token))
        assert.strictEqual(again.status, 200)
        assert.strictEqual(again.headers["ratelimit-remaining"], "2")
      }))

    it.effect("rpm on the OpenAI surface: RateLimitError with the headers", () =>
      Effect.gen(function*() {
        const key = yield* makeKey({ rpm: 1 })
        const client = yield* Chat.openai(key.token)
        const { response } = yield* Effect.promise(() =>
          client.chat.completions.create({ model: chatModel, messages: Chat.ask("hi") }).withResponse()
        )
        assert.strictEqual(response.headers.get("ratelimit-limit"), "1")
        assert.strictEqual(response.headers.get("ratelimit-remaining"), "0")
        const error = yield* openAiError(() => client.chat.completions.create({ model: chatModel, messages: Chat.ask("hi") }))
        assert.instanceOf(error, OpenAI.RateLimitError)
        const e = error as InstanceType<typeof OpenAI.RateLimitError>
        assert.strictEqual(e.type, "rate_limit_error")
        assert.match(e.headers?.get("retry-after") ?? "", /^\d+$/)
        assert.strictEqual(e.headers?.get("ratelimit-limit"), "1")
      }))

    it.effect("max_in_flight: 429 with headers once the key's pending + processing tasks reach it; free again when one finishes", () =>
      Effect.gen(function*() {
        const key = yield* makeKey({ max_in_flight: 2 })
        const first = yield* Harness.send(Harness.post(e4, prompt, key.token))
        const second = yield* Harness.send(Harness.post(g1, prompt, key.token))
        assert.strictEqual(first.status, 202)
        assert.strictEqual(second.status, 202)
        const refused = yield* Harness.send(Harness.post(e4, prompt, key.token))
        assert.strictEqual(refused.status, 429)
        assert.include(refused.json.error.detail, "at most 2 tasks")
        assert.match(refused.headers["retry-after"]!, /^\d+$/)
        assert.strictEqual(refused.headers["ratelimit-limit"], "2")
        assert.strictEqual(refused.headers["ratelimit-remaining"], "0")
        // Another key of the same tenant is not limited by this one.
        const sibling = yield* makeKey({ tenant: key.tenant })
        assert.strictEqual((yield* Harness.send(Harness.post(e4, prompt, sibling.token))).status, 202)
        // The sandboxed tasks finish; the key may create again.
        for (let i = 0; i < 4; i++) {
          yield* Harness.work
          yield* TestClock.adjust("2 seconds")
        }
        const done = yield* Harness.send(Harness.get(`${e4}/${first.json.task_info.id}`, key.token))
        assert.strictEqual(done.json.task_info.status, "completed")
        assert.strictEqual((yield* Harness.send(Harness.post(e4, prompt, key.token))).status, 202)
      }))

    it.effect("a create refused for max_in_flight does not count against the rpm", () =>
      Effect.gen(function*() {
        const key = yield* makeKey({ max_in_flight: 1, rpm: 3 })
        const first = yield* Harness.send(Harness.post(e4, prompt, key.token))
        assert.strictEqual(first.headers["ratelimit-remaining"], "2")
        for (let i = 0; i < 3; i++) assert.strictEqual((yield* Harness.send(Harness.post(e4, prompt, key.token))).status, 429)
        const next = yield* Harness.send(Harness.get("/v1/models", key.token))
        assert.strictEqual(next.status, 200)
        assert.strictEqual(next.headers["ratelimit-remaining"], "1")
      }))

    it.effect("expiry: 401 once expires_at passes, on both surfaces (AuthenticationError)", () =>
      Effect.gen(function*() {
        yield* TestClock.setTime(Date.parse("2030-01-01T00:00:00Z"))
        const key = yield* makeKey({ expires_at: "2030-01-01T00:01:00Z" })
        const client = yield* Chat.openai(key.token)
        assert.strictEqual((yield* Harness.send(Harness.post(e4, prompt, key.token))).status, 202)
        yield* TestClock.adjust("59 seconds")
        assert.strictEqual((yield* Harness.send(Harness.get("/v1/models", key.token))).status, 200)
        yield* TestClock.adjust("1 second")
        const expired = yield* Harness.send(Harness.post(e4, prompt, key.token))
        assert.strictEqual(expired.status, 401)
        assert.include(expired.json.error.detail, "expired")
        const error = yield* openAiError(() => client.chat.completions.create({ model: chatModel, messages: Chat.ask("hi") }))
        assert.instanceOf(error, OpenAI.AuthenticationError)
        // Extending the expiry brings the key back.
        const patched = yield* admin("PATCH", `/admin/keys/${key.id}`, { expires_at: null })
        assert.strictEqual(patched.status, 200)
        assert.strictEqual((yield* Harness.send(Harness.get("/v1/models", key.token))).status, 200)
      }))

    it.effect("rotation: the new token works at once, the old one until the grace ends, on both surfaces", () =>
      Effect.gen(function*() {
        yield* TestClock.setTime(Date.parse("2030-02-01T00:00:00Z"))
        const key = yield* makeKey({ models: ["vendor-b/*", `vendor-d/${chatModel}`] })
        const rotated = yield* admin("POST", `/admin/keys/${key.id}/rotate`, { grace_seconds: 30 })
        assert.strictEqual(rotated.status, 200)
        assert.strictEqual(rotated.json.id, key.id)
        assert.notStrictEqual(rotated.json.token, key.token)
        assert.strictEqual(rotated.json.previous_token_expires_at, "2030-02-01T00:00:30.000Z")
        const fresh = rotated.json.token as string
        const oldClient = yield* Chat.openai(key.token)
        const newClient = yield* Chat.openai(fresh)
        for (const token of [key.token, fresh]) {
          assert.strictEqual((yield* Harness.send(Harness.post(e4, prompt, token))).status, 202)
        }
        yield* Effect.promise(() => oldClient.chat.completions.create({ model: chatModel, messages: Chat.ask("hi") }))
        // The scopes stay with the key, whichever token is used.
        assert.strictEqual((yield* Harness.send(Harness.post(g1, prompt, key.token))).status, 403)
        yield* TestClock.adjust("30 seconds")
        assert.strictEqual((yield* Harness.send(Harness.post(e4, prompt, key.token))).status, 401)
        const error = yield* openAiError(() => oldClient.chat.completions.create({ model: chatModel, messages: Chat.ask("hi") }))
        assert.instanceOf(error, OpenAI.AuthenticationError)
        assert.strictEqual((yield* Harness.send(Harness.post(e4, prompt, fresh))).status, 202)
        yield* Effect.promise(() => newClient.chat.completions.create({ model: chatModel, messages: Chat.ask("hi") }))
        // Without a grace the old token stops at once.
        const again = yield* admin("POST", `/admin/keys/${key.id}/rotate`)
        assert.strictEqual(again.status, 200)
        assert.strictEqual((yield* Harness.send(Harness.get("/v1/models", fresh))).status, 401)
        assert.strictEqual((yield* Harness.send(Harness.get("/v1/models", again.json.token))).status, 200)
      }))
  })
})

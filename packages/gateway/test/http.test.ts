import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import { ModelEntry } from "@genway/core"
import { Registry } from "@genway/registry"
import { assert, describe, layer } from "@effect/vitest"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import * as TestClock from "effect/TestClock"
import { randomUUID } from "node:crypto"
import { ApiKeys } from "../src/platform/ApiKeys.js"
import * as Harness from "./harness.js"

const e4 = "/vendors/vendor-b/v1/vid2.5-t2v-preview/generation"
const g1 = "/vendors/vendor-d/v1/film-3.1-fast/generation"

const raw = (method: "POST" | "GET", url: string, body: string | undefined, headers: Record<string, string>) =>
  Effect.gen(function*() {
    const client = yield* HttpClient.HttpClient
    let request = HttpClientRequest.make(method)(url).pipe(HttpClientRequest.setHeaders(headers))
    if (body !== undefined) request = HttpClientRequest.bodyText(request, body, headers["content-type"] ?? "text/plain")
    const response = yield* client.execute(request)
    const text = yield* response.text
    const isJson = (response.headers["content-type"] ?? "").includes("json")
    return { status: response.status, headers: response.headers, json: isJson && text ? JSON.parse(text) : undefined }
  }).pipe(Effect.scoped)

const auth = { authorization: `Bearer ${Harness.tokenA}` }

describe("authentication", () => {
  layer(Harness.layer())((it) => {
    it.effect("401 with WWW-Authenticate without a token, with a wrong one, and with a bare token", () =>
      Effect.gen(function*() {
        for (const headers of [{}, { authorization: "Bearer nope" }, { authorization: Harness.tokenA }, { authorization: "Bearer " }]) {
          const r = yield* raw("POST", e4, JSON.stringify({ prompt: "x" }), { ...headers, "content-type": "application/json" })
          assert.strictEqual(r.status, 401)
          assert.match(r.headers["www-authenticate"]!, /^Bearer/)
          assert.strictEqual(r.json.error.code, 401)
          assert.isString(r.json.error.detail)
        }
        const list = yield* raw("GET", "/v1/models", undefined, {})
        assert.strictEqual(list.status, 401)
        assert.strictEqual(list.json.error.type, "authentication_error")
      }))

    it.effect("404 across tenants, for unknown ids, and under another model's path", () =>
      Effect.gen(function*() {
        const created = yield* Harness.send(Harness.post(e4, { prompt: "mine" }))
        const id = created.json.task_info.id
        const mine = yield* Harness.send(Harness.get(`${e4}/${id}`))
        assert.strictEqual(mine.status, 200)
        const theirs = yield* Harness.send(Harness.get(`${e4}/${id}`, Harness.tokenB))
        const unknown = yield* Harness.send(Harness.get(`${e4}/${randomUUID()}`))
        const elsewhere = yield* Harness.send(Harness.get(`${g1}/${id}`))
        for (const r of [theirs, unknown, elsewhere]) {
          assert.strictEqual(r.status, 404)
          assert.strictEqual(r.json.error.code, 404)
        }
        // The answers for "another tenant's" and "unknown" differ only in the id they echo.
        assert.strictEqual(theirs.json.error.title, unknown.json.error.title)
        const malformed = yield* Harness.send(Harness.get(`${e4}/not-a-uuid`))
        assert.strictEqual(malformed.status, 400)
        assert.strictEqual(malformed.json.error.param, "task_id")
      }))

    it.effect("keys made with the key store work until revoked, and each is its own tenant", () =>
      Effect.gen(function*() {
        const keys = yield* ApiKeys
        const made = yield* keys.create({ name: "ci" })
        const value = Redacted.value(made.token)
        const ok = yield* Harness.send(Harness.post(e4, { prompt: "k" }, value))
        assert.strictEqual(ok.status, 202)
        const listed = yield* keys.list
        assert.isTrue(listed.some((k) => k.id === made.id && k.revokedAt === null))
        assert.isFalse(JSON.stringify(listed).includes(value))
        assert.isTrue(yield* keys.revoke(made.id))
        const denied = yield* Harness.send(Harness.post(e4, { prompt: "k" }, value))
        assert.strictEqual(denied.status, 401)
      }))

    it.effect("the key store answers a token without the database only for GATEWAY_API_KEYS and keys read within the window", () =>
      Effect.gen(function*() {
        const keys = yield* ApiKeys
        const now = yield* Clock.currentTimeMillis
        assert.strictEqual(keys.known(Harness.tokenA, now)?._tag, "Ok")
        const made = yield* keys.create({ name: "known" })
        const value = Redacted.value(made.token)
        // Never read yet: the request path must ask the database.
        assert.isUndefined(keys.known(value, now))
        assert.strictEqual((yield* keys.resolve(value))._tag, "Ok")
        const remembered = keys.known(value, now)
        assert.strictEqual(remembered?._tag, "Ok")
        if (remembered?._tag === "Ok") assert.strictEqual(remembered.principal.keyId, made.id)
        // The key cache's window (5 s) has ended: the database decides again.
        assert.isUndefined(keys.known(value, now + 5_000))
        // An unknown token is remembered as unknown for the window, too.
        const stranger = `gw_${randomUUID()}`
        assert.isUndefined(keys.known(stranger, now))
        assert.strictEqual((yield* keys.resolve(stranger))._tag, "Unknown")
        assert.strictEqual(keys.known(stranger, now)?._tag, "Unknown")
        // A revocation through this replica is effective at once.
        assert.isTrue(yield* keys.revoke(made.id))
        assert.isUndefined(keys.known(value, now))
        assert.strictEqual((yield* keys.resolve(value))._tag, "Unknown")
      }))
  })
})

describe("request errors", () => {
  layer(Harness.layer())((it) => {
    it.effect("malformed JSON, a non-object body, an empty body: 400 naming the body", () =>
      Effect.gen(function*() {
        for (const body of ["{\"prompt\":", "[1,2]", "\"text\"", "null", ""]) {
          const r = yield* raw("POST", e4, body, { ...auth, "content-type": "application/json" })
          assert.strictEqual(r.status, 400, body)
          assert.strictEqual(r.json.error.param, "body")
        }
      }))

    it.effect("415 for a body that is not JSON, 413 for one over the entry's limit", () =>
      Effect.gen(function*() {
        const r = yield* raw("POST", e4, "prompt=x", { ...auth, "content-type": "application/x-www-form-urlencoded" })
        assert.strictEqual(r.status, 415)
        const entry = Registry.entries.find((e) => e.path === e4)!
        const big = JSON.stringify({ prompt: "x".repeat(entry.maxBodyBytes) })
        const tooLarge = yield* raw("POST", e4, big, { ...auth, "content-type": "application/json" })
        assert.strictEqual(tooLarge.status, 413)
        const health = yield* raw("GET", "/healthz", undefined, {})
        assert.strictEqual(health.status, 200)
      }))

    it.effect("a violated bound is a 400 whose error names the field", () =>
      Effect.gen(function*() {
        const r = yield* Harness.send(Harness.post(e4, { prompt: "x".repeat(2001) }))
        assert.strictEqual(r.status, 400)
        assert.strictEqual(r.json.error.param, "prompt")
        assert.match(r.json.error.detail, /2000/)
        const unknown = yield* Harness.send(Harness.post(e4, { prompt: "x", durration: 5 }))
        assert.strictEqual(unknown.json.error.param, "durration")
        const header = yield* Harness.send(Harness.post(e4, { prompt: "x" }, Harness.tokenA, { "x-sandbox-outcome": "explode" }))
        assert.strictEqual(header.status, 400)
        assert.strictEqual(header.json.error.param, "x-sandbox-outcome")
      }))

    it.effect("unknown routes are a JSON 404; every response carries x-request-id", () =>
      Effect.gen(function*() {
        const r = yield* raw("GET", "/vendors/vendor-z/v1/nothing/generation", undefined, auth)
        assert.strictEqual(r.status, 404)
        assert.strictEqual(r.json.error.code, 404)
        assert.isString(r.headers["x-request-id"])
        const echoed = yield* raw("GET", "/healthz", undefined, { "x-request-id": "abc-123" })
        assert.strictEqual(echoed.headers["x-request-id"], "abc-123")
      }))
  })
})

describe("discoverability", () => {
  layer(Harness.layer())((it) => {
    it.effect("/v1/models lists every entry with its routes, stage, mode, poll cadence and retention", () =>
      Effect.gen(function*() {
        const r = yield* Harness.send(Harness.get("/v1/models"))
        assert.strictEqual(r.status, 200)
        assert.strictEqual(r.json.object, "list")
        assert.strictEqual(r.json.data.length, Registry.entries.length)
        const g1Model = r.json.data.find((m: any) => m.endpoints.includes("G1"))
        assert.strictEqual(g1Model.retention, "2d")
        assert.strictEqual(g1Model.sandbox, true)
        assert.deepStrictEqual(g1Model.routes.map((x: any) => x.method), ["POST", "GET"])
        const e7 = r.json.data.find((m: any) => m.endpoints.includes("E7"))
        assert.strictEqual(e7.stage, "beta")
      }))

    it.effect("/openapi.json is OpenAPI 3.1 with every task route; /docs renders; health and readiness answer", () =>
      Effect.gen(function*() {
        const spec = yield* raw("GET", "/openapi.json", undefined, {})
        assert.strictEqual(spec.status, 200)
        assert.match(spec.json.openapi, /^3\.1/)
        for (const entry of Registry.entries.filter(ModelEntry.isTaskEntry)) {
          assert.isDefined(spec.json.paths[entry.path], entry.path)
          assert.isDefined(spec.json.paths[`${entry.path}/{task_id}`], entry.path)
        }
        const client = yield* HttpClient.HttpClient
        const docs = yield* client.execute(HttpClientRequest.get("/docs")).pipe(Effect.flatMap((r) => r.text), Effect.scoped)
        assert.include(docs, "vid2.5-t2v-preview")
        assert.include(docs, "at most 2000 characters")
        const ready = yield* raw("GET", "/readyz", undefined, {})
        assert.strictEqual(ready.status, 200)
      }))
  })
})

// The sandbox's video is small: kept in its database row by default, a file with `mediaInlineBytes: 0`.
describe.each([["kept in its row", {}], ["a file", { mediaInlineBytes: 0 }]] as const)("signed media URLs (%s)", (_, stored) => {
  layer(Harness.layer({ settings: { mediaUrlTtlMs: 60_000, ...stored } }))((it) => {
    it.effect("work without a token, serve the object and its ranges, refuse tampering, and expire", () =>
      Effect.gen(function*() {
        const created = yield* Harness.send(Harness.post(e4, { prompt: "m" }))
        const url = `${e4}/${created.json.task_info.id}`
        yield* Harness.work
        yield* TestClock.adjust("2 seconds")
        yield* Harness.work
        const done = yield* Harness.send(Harness.get(url))
        const media = new URL(done.json.videos[0])
        const path = media.pathname + media.search
        const ok = yield* raw("GET", path, undefined, {})
        assert.strictEqual(ok.status, 200)
        const fetched = (range?: string) => Effect.gen(function*() {
          const client = yield* HttpClient.HttpClient
          const request = HttpClientRequest.get(path)
          const r = yield* client.execute(range === undefined ? request : HttpClientRequest.setHeader(request, "range", range))
          return { status: r.status, headers: r.headers, bytes: new Uint8Array(yield* r.arrayBuffer) }
        }).pipe(Effect.scoped)
        const whole = yield* fetched()
        assert.strictEqual(whole.headers["content-type"], "video/mp4")
        assert.strictEqual(Number(whole.headers["content-length"]), whole.bytes.length)
        // An MP4 begins with its `ftyp` box.
        assert.deepStrictEqual([...whole.bytes.subarray(4, 8)].map((b) => String.fromCharCode(b)).join(""), "ftyp")
        const ranged = yield* fetched("bytes=0-7")
        assert.strictEqual(ranged.status, 206)
        assert.deepStrictEqual([...ranged.bytes], [...whole.bytes.subarray(0, 8)])
        const tail = yield* fetched("bytes=-5")
        assert.strictEqual(tail.status, 206)
        assert.strictEqual(tail.headers["content-range"], `bytes ${whole.bytes.length - 5}-${whole.bytes.length - 1}/${whole.bytes.length}`)
        assert.deepStrictEqual([...tail.bytes], [...whole.bytes.subarray(whole.bytes.length - 5)])
        const tampered = path.replace(/signature=./, (m) => m.endsWith("A") ? m.slice(0, -1) + "B" : m.slice(0, -1) + "A")
        assert.strictEqual((yield* raw("GET", tampered, undefined, {})).status, 403)
        const otherKey = path.replace("/0.mp4", "/1.mp4")
        assert.strictEqual((yield* raw("GET", otherKey, undefined, {})).status, 403)
        yield* TestClock.adjust("61 seconds")
        const expired = yield* raw("GET", path, undefined, {})
        assert.strictEqual(expired.status, 403)
        assert.match(expired.json.error.detail, /expired/)
        // Retrieving the task again signs a fresh URL.
        const again = yield* Harness.send(Harness.get(url))
        const fresh = new URL(again.json.videos[0])
        assert.strictEqual((yield* raw("GET", fresh.pathname + fresh.search, undefined, {})).status, 200)
      }))
  })
})

/**
 * Key limits across replicas (DESIGN.md §9): two gateways on one PostgreSQL database sharing one
 * Redis hold a key's `rpm` and `max_in_flight` in total, not per replica; a revocation reaches
 * the other replica within 5 s; and a Redis that cannot be reached lets traffic through (fail
 * open) and is counted. Needs `GATEWAY_TEST_DATABASE_URL` and `GATEWAY_TEST_REDIS_URL` (set by
 * .ci/run); without them these tests are skipped, saying so.
 */
import * as HttpServer from "@effect/platform/HttpServer"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import { assert, describe, it } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as TestClock from "effect/TestClock"
import { randomBytes } from "node:crypto"
import { createServer } from "node:http"
import * as Gateway from "../src/Gateway.js"
import type * as Config from "../src/platform/Config.js"
import * as Limits from "../src/platform/Limits.js"
import { tempDir } from "./harness.js"
import * as Pg from "./pg.js"

const redisUrl = process.env.GATEWAY_TEST_REDIS_URL
const redisAvailable = (() => {
  if (redisUrl === undefined || redisUrl === "") {
    console.warn("keys.redis.test.ts: GATEWAY_TEST_REDIS_URL is not set; the Redis tests are SKIPPED")
    return false
  }
  return true
})()

const adminToken = "admin-token-for-tests-0123456789"
const e4 = "/vendors/vendor-b/v1/vid2.5-t2v-preview/generation"

/** A replica serving HTTP on an ephemeral port; returns its base URL. */
const serve = (services: Layer.Layer<any, any, never>) =>
  Effect.gen(function*() {
    // Served as `genway serve` serves it (the gateway's own listener in front of the platform's).
    const node = createServer()
    const http = Gateway.serve(node).pipe(
      Layer.provideMerge(NodeHttpServer.layer(() => node, { port: 0, host: "127.0.0.1" })),
      Layer.provideMerge(services)
    )
    const ctx = yield* Layer.build(http)
    const address = Context.get(ctx, HttpServer.HttpServer).address
    if (address._tag !== "TcpAddress") throw new Error("not on TCP")
    return `http://127.0.0.1:${address.port}`
  })

const call = (url: string, init: { method?: string; token: string; body?: unknown }) =>
  Effect.promise(async () => {
    const response = await fetch(url, {
      method: init.method ?? "GET",
      headers: { authorization: `Bearer ${init.token}`, ...(init.body !== undefined ? { "content-type": "application/json" } : {}) },
      ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {})
    })
    const text = await response.text()
    return { status: response.status, headers: response.headers, json: text ? JSON.parse(text) : undefined }
  })

const settings = (extra: Partial<Config.GatewaySettings> = {}): Partial<Config.GatewaySettings> => ({
  adminToken: Option.some(Redacted.make(adminToken)),
  ...extra
})

describe.skipIf(!Pg.available("keys.redis.test.ts") || !redisAvailable)("key limits across replicas (PostgreSQL + Redis)", () => {
  it.scoped("rpm 20 holds in total over two replicas sharing Redis; max_in_flight too; revocation within 5 s", () =>
    Effect.gen(function*() {
      const { replica } = yield* Pg.privateSchema
      const dataDir = tempDir()
      const shared = settings({ redisUrl: Option.some(Redacted.make(redisUrl!)) })
      const a = yield* serve(replica(dataDir, shared))
      const b = yield* serve(replica(dataDir, shared))

      const made = yield* call(`${a}/admin/keys`, { method: "POST", token: adminToken, body: { rpm: 20, name: `redis-${randomBytes(4).toString("hex")}` } })
      assert.strictEqual(made.status, 201)
      const token = made.json.token as string
      const statuses = yield* Effect.forEach(
        Array.from({ length: 50 }, (_, i) => (i % 2 === 0 ? a : b)),
        (base) => call(`${base}/v1/models`, { token }),
        { concurrency: 10 }
      )
      const ok = statuses.filter((r) => r.status === 200)
      const limited = statuses.filter((r) => r.status === 429)
      assert.strictEqual(ok.length + limited.length, 50)
      assert.isAtLeast(ok.length, 20)
      assert.isAtMost(ok.length, 21, "at most 20 (one over, from races) in total, not 40")
      for (const r of ok) assert.strictEqual(r.headers.get("ratelimit-limit"), "20")
      for (const r of limited) {
        assert.match(r.headers.get("retry-after") ?? "", /^\d+$/)
        assert.strictEqual(r.headers.get("ratelimit-remaining"), "0")
      }

      // max_in_flight is counted from the shared task store: exact over both replicas.
      const capped = yield* call(`${a}/admin/keys`, { method: "POST", token: adminToken, body: { max_in_flight: 3 } })
      const creates = yield* Effect.forEach(
        Array.from({ length: 12 }, (_, i) => (i % 2 === 0 ? a : b)),
        (base) => call(`${base}${e4}`, { method: "POST", token: capped.json.token, body: { prompt: "a harbour at dawn" } }),
        { concurrency: 6 }
      )
      assert.strictEqual(creates.filter((r) => r.status === 202).length, 3)
      assert.strictEqual(creates.filter((r) => r.status === 429).length, 9)

      // Revoked on replica A: replica B, which has the key cached, refuses it within 5 s.
      const victim = yield* call(`${a}/admin/keys`, { method: "POST", token: adminToken, body: {} })
      assert.strictEqual((yield* call(`${b}/v1/models`, { token: victim.json.token })).status, 200)
      assert.strictEqual((yield* call(`${a}/admin/keys/${victim.json.id}`, { method: "DELETE", token: adminToken })).status, 204)
      assert.strictEqual((yield* call(`${a}/v1/models`, { token: victim.json.token })).status, 401)
      yield* TestClock.adjust("5 seconds")
      assert.strictEqual((yield* call(`${b}/v1/models`, { token: victim.json.token })).status, 401)
    }), 60_000)
})

describe("a Redis that cannot be reached", () => {
  it.scoped("fails open: requests are served, the failures counted", () =>
    Effect.gen(function*() {
      const before = (yield* Metric.value(Limits.rateLimiterErrorsTotal)).count
      // Nothing listens on port 1 of the loopback address.
      const counter = yield* Limits.redisCounter(Redacted.make("redis://127.0.0.1:1"), `genway-test-${randomBytes(4).toString("hex")}:`)
      const principal = { tenant: "t", keyId: "key_unreachable", rpm: 1 }
      for (let i = 0; i < 3; i++) {
        const admitted = yield* Limits.admit(principal).pipe(Effect.provideService(Limits.RequestCounterRef, counter))
        assert.strictEqual(admitted, principal)
        yield* TestClock.adjust("3 seconds")
      }
      const after = (yield* Metric.value(Limits.rateLimiterErrorsTotal)).count
      assert.isAtLeast(after - before, 3)
    }), 30_000)
})

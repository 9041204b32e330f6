/**
 * `handle` (http/Handle.ts): the surface's error shape, the key's `RateLimit-*` headers on every
 * answer (the answer's own winning), and `Server-Timing` for the routes that ask for it — on
 * answers, refusals and defects alike.
 */
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { httpError } from "../src/http/Errors.js"
import { handle } from "../src/http/Handle.js"
import { attach, type RequestTelemetry } from "../src/observability/Request.js"

/** Runs `effect` as a request whose cell records `extraHeaders`. */
const asRequest = <A, E>(effect: Effect.Effect<A, E, HttpServerRequest.HttpServerRequest>, extraHeaders?: Record<string, string>) => {
  const request = { source: {} } as unknown as HttpServerRequest.HttpServerRequest
  const cell: RequestTelemetry = { id: "r1", route: undefined, tenant: undefined, upstreamMs: 0, upstreamCalls: 0, extraHeaders, upstream: undefined }
  attach(request, cell)
  return Effect.provideService(effect, HttpServerRequest.HttpServerRequest, request)
}

const ok = Effect.succeed(HttpServerResponse.text("fine", { headers: { "ratelimit-limit": "own" } }))
const refused = httpError(429, "slow down", { headers: { "retry-after": "5" } })
const limits = { "ratelimit-limit": "60", "ratelimit-remaining": "59" }

describe("handle", () => {
  it.effect("an answer keeps its own headers and gains the key's others", () =>
    Effect.gen(function*() {
      const r = yield* asRequest(handle("openai", ok), limits)
      assert.strictEqual(r.status, 200)
      assert.strictEqual(r.headers["ratelimit-limit"], "own")
      assert.strictEqual(r.headers["ratelimit-remaining"], "59")
      assert.isUndefined(r.headers["server-timing"])
    }))

  it.effect("an HttpError is the surface's body, with the key's headers and Server-Timing when asked", () =>
    Effect.gen(function*() {
      const r = yield* asRequest(handle("openai", Effect.fail(refused), { serverTiming: true }), limits)
      assert.strictEqual(r.status, 429)
      assert.strictEqual(r.headers["retry-after"], "5")
      assert.strictEqual(r.headers["ratelimit-limit"], "60")
      assert.match(r.headers["server-timing"] ?? "", /^gateway;dur=\d+(\.\d+)?$/)
      const task = yield* asRequest(handle("task", Effect.fail(refused)))
      assert.strictEqual(task.status, 429)
      assert.isUndefined(task.headers["ratelimit-limit"])
    }))

  it.effect("a defect is a 500 that says nothing of it, with the same headers", () =>
    Effect.gen(function*() {
      const r = yield* asRequest(handle("task", Effect.die(new Error("secret detail")), { serverTiming: true }), limits)
      assert.strictEqual(r.status, 500)
      assert.strictEqual(r.headers["ratelimit-remaining"], "59")
      assert.match(r.headers["server-timing"] ?? "", /^gateway;dur=/)
      const body = r.body._tag === "Uint8Array" ? new TextDecoder().decode(r.body.body) : ""
      assert.include(body, "internal error")
      assert.notInclude(body, "secret detail")
    }))

  it.effect("outside a request (no cell): the answer as it is", () =>
    Effect.gen(function*() {
      const r = yield* handle("openai", ok, { serverTiming: true })
      assert.strictEqual(r.headers["ratelimit-limit"], "own")
      assert.match(r.headers["server-timing"] ?? "", /^gateway;dur=/)
    }))
})

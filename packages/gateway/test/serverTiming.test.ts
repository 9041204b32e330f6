/**
 * `Server-Timing` on E1/E2 answers (DESIGN.md §11), over real HTTP: `gateway` and `upstream` on
 * live answers (the upstream's time includes what the vendor held its answer back), `gateway` only
 * on sandboxed answers and on answers refused before any vendor call.
 */
import { assert, describe, layer } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { headerValue } from "../src/http/ServerTiming.js"
import * as Chat from "./chatHarness.js"
import * as Harness from "./harness.js"
import * as R from "./responsesHarness.js"

const model = "image-model-2.5-flash-image-preview"

/** The metrics of a `Server-Timing` value, by name (milliseconds). */
const parse = (value: string | null | undefined): Record<string, number> => {
  assert.isString(value, "Server-Timing header present")
  const out: Record<string, number> = {}
  for (const part of value!.split(",")) {
    const m = /^\s*([a-z]+);dur=(\d+(?:\.\d+)?)\s*$/.exec(part)
    assert.isNotNull(m, `well-formed metric: ${part}`)
    out[m![1]!] = Number(m![2])
  }
  return out
}

describe("Server-Timing value", () => {
  layer(R.sandboxLayer())((it) => {
    it("gateway only without a vendor call; gateway is the total minus the upstream's share", () => {
      assert.strictEqual(headerValue(100, { upstreamMs: 0, upstreamCalls: 0 }, 112.3456), "gateway;dur=12.35")
      assert.strictEqual(headerValue(100, { upstreamMs: 10, upstreamCalls: 1 }, 112.5), "gateway;dur=2.5, upstream;dur=10")
      // Never negative, whatever the clocks say.
      assert.strictEqual(headerValue(100, { upstreamMs: 20, upstreamCalls: 1 }, 110), "gateway;dur=0, upstream;dur=20")
    })
  })
})

describe("Server-Timing on E2", () => {
  layer(R.sandboxLayer())((it) => {
    it.effect("sandboxed answers carry gateway only", () =>
      Effect.gen(function*() {
        const r = yield* Harness.send(Harness.post(R.e2, { model: "text-model-1", input: "kites" }))
        assert.strictEqual(r.status, 200)
        const timing = parse(r.headers["server-timing"])
        assert.deepStrictEqual(Object.keys(timing), ["gateway"])
      }))
  })

  layer(R.liveLayer())((it) => {
    it.effect("live answers carry gateway and upstream; the vendor's wait counts as upstream", () =>
      Effect.gen(function*() {
        const emulator = yield* R.ResponsesEmulator
        yield* emulator.inject("responses.create", { _tag: "Slow", delayMs: 60 })
        const t0 = performance.now()
        const r = yield* Harness.send(Harness.post(R.e2, { model: "text-model-1", input: "kites" }))
        const elapsed = performance.now() - t0
        assert.strictEqual(r.status, 200)
        const timing = parse(r.headers["server-timing"])
        assert.deepStrictEqual(Object.keys(timing), ["gateway", "upstream"])
        assert.isAtLeast(timing.upstream!, 55)
        assert.isAtLeast(timing.gateway!, 0)
        assert.isAtMost(timing.gateway! + timing.upstream!, elapsed + 1)
        // The held-back answer is the vendor's time, not the gateway's.
        assert.isBelow(timing.gateway!, timing.upstream!)
      }))

    it.effect("streamed answers carry both, and errors refused before the vendor carry gateway only", () =>
      Effect.gen(function*() {
        const streamed = yield* Harness.send(Harness.post(R.e2, { model: "text-model-1", input: "kites", stream: true }))
        assert.strictEqual(streamed.status, 200)
        assert.deepStrictEqual(Object.keys(parse(streamed.headers["server-timing"])), ["gateway", "upstream"])
        const refused = yield* Harness.send(Harness.post(R.e2, { model: "text-model-1", input: "kites", temperature: "hot" }))
        assert.strictEqual(refused.status, 400)
        assert.deepStrictEqual(Object.keys(parse(refused.headers["server-timing"])), ["gateway"])
      }))
  })
})

describe("Server-Timing on E1", () => {
  layer(Chat.sandboxLayer())((it) => {
    it.effect("sandboxed answers carry gateway only", () =>
      Effect.gen(function*() {
        const r = yield* Chat.postChat({ model, messages: Chat.ask("a cat") })
        assert.strictEqual(r.status, 200)
        assert.deepStrictEqual(Object.keys(parse(r.headers.get("server-timing"))), ["gateway"])
        yield* Effect.promise(() => r.arrayBuffer())
      }))
  })

  layer(Chat.liveLayer())((it) => {
    it.effect("live answers, streamed or not, carry gateway and upstream", () =>
      Effect.gen(function*() {
        const emulator = yield* Chat.ChatEmulator
        yield* emulator.inject("generate", { _tag: "Slow", delayMs: 60 })
        const r = yield* Chat.postChat({ model, messages: Chat.ask("a cat") })
        assert.strictEqual(r.status, 200)
        const timing = parse(r.headers.get("server-timing"))
        assert.deepStrictEqual(Object.keys(timing), ["gateway", "upstream"])
        assert.isAtLeast(timing.upstream!, 55)
        assert.isBelow(timing.gateway!, timing.upstream!)
        yield* Effect.promise(() => r.arrayBuffer())
        const s = yield* Chat.postChat({ model, stream: true, messages: Chat.ask("a cat") })
        assert.strictEqual(s.status, 200)
        assert.deepStrictEqual(Object.keys(parse(s.headers.get("server-timing"))), ["gateway", "upstream"])
        yield* Effect.promise(() => s.text())
      }))
  })
})

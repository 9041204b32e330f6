import { assert, describe, it } from "@effect/vitest"
import { Registry } from "@genway/registry"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Random from "effect/Random"
import * as Cadence from "../src/platform/Cadence.js"

const g2 = Registry.entries.find((e) => e.endpoints.includes("G2"))!
const pinned = (value: number) => <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.withRandom(effect, Random.fixed([value]))

describe("poll cadence and back-off draw from Effect's Random", () => {
  it.effect("a later poll lands within the entry's `every`, where Random says", () =>
    Effect.gen(function*() {
      const none = { override: Option.none(), first: false }
      assert.strictEqual(yield* pinned(0)(Cadence.pollDelay(g2, none)), 10_000)
      assert.strictEqual(yield* pinned(0.5)(Cadence.pollDelay(g2, none)), 12_500)
      assert.strictEqual(yield* Cadence.pollDelay(g2, { ...none, first: true }), 10_000)
      assert.strictEqual(yield* Cadence.pollDelay(g2, { ...none, hint: "3 seconds" }), 3_000)
      assert.strictEqual(yield* Cadence.pollDelay(g2, { override: Option.some(50), first: false }), 50)
    }))

  it("the shortest and longest time between polls: the entry's `every`, the deployment's override first", () => {
    assert.strictEqual(Cadence.shortestPollMs(g2, Option.none()), 10_000)
    assert.strictEqual(Cadence.shortestPollMs(g2, Option.some(2_000)), 2_000)
    assert.strictEqual(Cadence.longestPollMs(g2, Option.none()), 15_000)
    // A deployment-wide interval is both ends: the workers poll at it whatever the entry says.
    assert.strictEqual(Cadence.longestPollMs(g2, Option.some(600_000)), 600_000)
  })

  it.effect("back-off doubles, jitters in its upper half, is capped, and honours the vendor's hint", () =>
    Effect.gen(function*() {
      assert.strictEqual(yield* pinned(0)(Cadence.backoff(0, undefined)), 500)
      assert.strictEqual(yield* pinned(1)(Cadence.backoff(3, undefined)), 8_000)
      assert.strictEqual(yield* pinned(1)(Cadence.backoff(20, undefined)), Cadence.maxBackoffMs)
      assert.strictEqual(yield* pinned(0)(Cadence.backoff(0, "7 seconds")), 7_000)
    }))
})

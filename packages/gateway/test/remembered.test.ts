/** The short memory of rows read (tokens, budget-free keys, webhook endpoints): window, forgetting, the write race. */
import { assert, describe, it } from "@effect/vitest"
import * as Remembered from "../src/platform/Remembered.js"

describe("Remembered", () => {
  it("a value is used for the window after it was read, not at its end nor before it", () => {
    const r = Remembered.make<string>(5_000)
    r.remember("k", "v", 1_000, r.epoch())
    assert.strictEqual(r.get("k", 1_000), "v")
    assert.strictEqual(r.get("k", 5_999), "v")
    assert.isUndefined(r.get("k", 6_000))
    assert.isUndefined(r.get("k", 999))
    assert.isUndefined(r.get("other", 1_000))
  })

  it("forgetting one key keeps the others; forgetting all keeps none", () => {
    const r = Remembered.make<number>(5_000)
    r.remember("a", 1, 0, r.epoch())
    r.remember("b", 2, 0, r.epoch())
    r.forget("a")
    assert.isUndefined(r.get("a", 1))
    assert.strictEqual(r.get("b", 1), 2)
    r.forget()
    assert.isUndefined(r.get("b", 1))
  })

  it("a read that began before a write here is not remembered", () => {
    const r = Remembered.make<string>(5_000)
    const since = r.epoch()
    r.forget("k") // a write lands while the read is in flight
    r.remember("k", "stale", 0, since)
    assert.isUndefined(r.get("k", 1))
    r.remember("k", "fresh", 0, r.epoch())
    assert.strictEqual(r.get("k", 1), "fresh")
  })

  it("past `max` keys it starts over rather than growing", () => {
    const r = Remembered.make<number>(5_000, 3)
    for (const k of ["a", "b", "c", "d"]) r.remember(k, 1, 0, r.epoch())
    assert.isUndefined(r.get("a", 1))
    assert.strictEqual(r.get("d", 1), 1)
  })
})

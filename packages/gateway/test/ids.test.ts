import { describe, expect, it } from "@effect/vitest"
import { uuidv7 } from "../src/platform/Ids.js"

const shape = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/
const msOf = (id: string) => parseInt(id.replace(/-/g, "").slice(0, 12), 16)

describe("task ids (platform/Ids.ts)", () => {
  it("are UUID v7 carrying the time, each sorting after the one before, within a millisecond too", () => {
    const at = Date.now() + 60_000
    const ids = Array.from({ length: 2000 }, () => uuidv7(at))
    for (const id of ids) expect(id).toMatch(shape)
    expect(new Set(ids).size).toBe(ids.length)
    expect([...ids].sort()).toEqual(ids)
    expect(msOf(ids[0]!)).toBe(at)
    // A clock that steps back does not break the order: the ids keep counting on the last time.
    const back = uuidv7(at - 5_000)
    expect(back > ids.at(-1)!).toBe(true)
    // A new millisecond: the time advances and the counter is drawn afresh.
    const later = uuidv7(at + 1_000)
    expect(msOf(later)).toBe(at + 1_000)
    expect(later > back).toBe(true)
  })

  it("draw fresh random bits for every id, past the pool's refill", () => {
    // Over 256 ids (one fill of the pool) in new milliseconds each: the counters differ.
    const base = Date.now() + 120_000
    const counters = new Set(Array.from({ length: 600 }, (_, i) => uuidv7(base + i).replace(/-/g, "").slice(12, 20)))
    expect(counters.size).toBeGreaterThan(590)
  })
})

/**
 * The workers' pool (`WorkPool`): holds at most `max(batch, slots)` items and runs `slots` of them,
 * refills as steps finish rather than after a batch's slowest one, claims again when half of what
 * it holds is free (or, its slots out of work, `coalesceMs` later), waits `idleMs` when nothing is
 * due, and stops its running items when interrupted. Time is the TestClock's.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Queue from "effect/Queue"
import * as TestClock from "effect/TestClock"
import * as WorkPool from "../src/platform/WorkPool.js"

interface Item {
  readonly name: string
  /** Simulated milliseconds (0: ends without waiting at all); `undefined`: until `gate` opens. */
  readonly ms?: number
}

/** A pool over an in-memory due list, recording what it claimed and ran. */
const harness = (options: { slots: number; batch: number; idleMs?: number }) =>
  Effect.gen(function*() {
    const due: Array<Item> = []
    const claims: Array<{ limit: number; got: number; held: number }> = []
    const started: Array<string> = []
    const finished: Array<string> = []
    const interrupted: Array<string> = []
    const gate = yield* Deferred.make<void>()
    const wake = yield* Queue.unbounded<void>()
    let running = 0
    let most = 0
    /** Claimed and not finished. */
    let held = 0
    const pool = WorkPool.run<Item>({
      slots: options.slots,
      batch: options.batch,
      claim: (limit) =>
        Effect.sync(() => {
          const got = due.splice(0, limit)
          claims.push({ limit, got: got.length, held })
          held += got.length
          return got
        }),
      run: (item) =>
        Effect.gen(function*() {
          running++
          most = Math.max(most, running)
          started.push(item.name)
          yield* item.ms === undefined ? Deferred.await(gate) : item.ms === 0 ? Effect.void : Effect.sleep(item.ms)
          finished.push(item.name)
        }).pipe(
          Effect.onInterrupt(() => Effect.sync(() => interrupted.push(item.name))),
          Effect.ensuring(Effect.sync(() => {
            running--
            held--
          }))
        ),
      wake: Queue.take(wake),
      idleMs: options.idleMs ?? 200,
      coalesceMs: WorkPool.coalesceMs
    })
    const fiber = yield* Effect.fork(pool)
    yield* Effect.yieldNow()
    return { due, claims, started, finished, interrupted, gate, wake, fiber, most: () => most }
  })

/** Lets the fibers woken by an event run (no time passes). */
const turns = Effect.repeatN(Effect.yieldNow(), 10)

describe("WorkPool", () => {
  it.effect("a slow step holds its own slot only: tasks due after it are claimed and run while it still runs", () =>
    Effect.gen(function*() {
      const h = yield* harness({ slots: 2, batch: 10 })
      h.due.push({ name: "slow" }, { name: "a", ms: 10 })
      yield* TestClock.adjust(200) // the first (empty) claim's idle wait ends
      assert.deepStrictEqual(h.started, ["slow", "a"])
      // Due after the first claim (a batch that waited for its slowest step would never reach them).
      h.due.push({ name: "b", ms: 10 }, { name: "c", ms: 10 })
      yield* TestClock.adjust(400)
      assert.deepStrictEqual(h.finished, ["a", "b", "c"])
      assert.deepStrictEqual(h.started, ["slow", "a", "b", "c"])
      // Never more in hand than the batch (ten here), however long "slow" runs.
      for (const c of h.claims) assert.ok(c.limit <= 10 - c.held, JSON.stringify(c))
      yield* Deferred.succeed(h.gate, undefined)
      yield* turns
      assert.deepStrictEqual(h.finished, ["a", "b", "c", "slow"])
      yield* Fiber.interrupt(h.fiber)
    }))

  it.effect("never runs more than its slots nor holds more than its batch, runs each item once", () =>
    Effect.gen(function*() {
      const h = yield* harness({ slots: 8, batch: 20 })
      const names = Array.from({ length: 40 }, (_, i) => `t${i}`)
      for (const [i, name] of names.entries()) h.due.push({ name, ms: 5 + ((i * 7) % 13) })
      yield* TestClock.adjust(200)
      for (let t = 0; t < 100 && h.finished.length < names.length; t++) yield* TestClock.adjust(5)
      assert.deepStrictEqual([...h.finished].sort(), [...names].sort())
      assert.deepStrictEqual([...h.started].sort(), [...names].sort())
      assert.strictEqual(h.most(), 8)
      for (const c of h.claims) {
        assert.ok(c.limit <= 20 - c.held && c.got <= c.limit, JSON.stringify(c))
      }
      yield* Fiber.interrupt(h.fiber)
    }))

  it.effect("claims again once half of what it holds is free, not at each step's end", () =>
    Effect.gen(function*() {
      const h = yield* harness({ slots: 4, batch: 8 })
      // a0–a3 end one millisecond apart (at 210, 211, 212, 213); the rest run long.
      for (let i = 0; i < 4; i++) h.due.push({ name: `a${i}`, ms: 10 + i })
      for (let i = 4; i < 8; i++) h.due.push({ name: `a${i}`, ms: 1_000 })
      for (let i = 0; i < 4; i++) h.due.push({ name: `b${i}`, ms: 1_000 })
      yield* TestClock.adjust(200)
      // Eight in hand, four running.
      assert.deepStrictEqual(h.claims.at(-1), { limit: 8, got: 8, held: 0 })
      assert.deepStrictEqual(h.started, ["a0", "a1", "a2", "a3"])
      const claimsBefore = h.claims.length
      yield* TestClock.adjust(12) // a0–a2 ended, each starting the next in hand: three of eight free
      assert.deepStrictEqual(h.started.slice(4), ["a4", "a5", "a6"])
      assert.strictEqual(h.claims.length, claimsBefore)
      yield* TestClock.adjust(1) // a3 ends: a7 starts, half of the eight free: claimed at once
      assert.deepStrictEqual(h.started.slice(4), ["a4", "a5", "a6", "a7"])
      assert.strictEqual(h.claims.length, claimsBefore + 1)
      assert.deepStrictEqual(h.claims.at(-1), { limit: 4, got: 4, held: 4 })
      yield* Fiber.interrupt(h.fiber)
    }))

  it.effect("thousands of steps that end without waiting: each runs once, none is lost, the stack stays flat", () =>
    Effect.gen(function*() {
      const h = yield* harness({ slots: 4, batch: 3_000 })
      const names = Array.from({ length: 3_000 }, (_, i) => `i${i}`)
      for (const name of names) h.due.push({ name, ms: 0 })
      yield* TestClock.adjust(200)
      yield* turns
      assert.strictEqual(h.finished.length, names.length)
      assert.strictEqual(new Set(h.started).size, names.length)
      // Every slot is free again: the pool claims (and finds nothing) rather than waiting forever.
      h.due.push({ name: "after", ms: 0 })
      yield* TestClock.adjust(200)
      assert.strictEqual(h.finished.at(-1), "after")
      yield* Fiber.interrupt(h.fiber)
    }))

  it.effect("slots out of work with little room: it waits coalesceMs for more to free, then claims", () =>
    Effect.gen(function*() {
      const h = yield* harness({ slots: 4, batch: 4 })
      // Three steps held, one quick: when it ends, one of four is free (half is two).
      for (let i = 0; i < 3; i++) h.due.push({ name: `held${i}` })
      h.due.push({ name: "quick", ms: 10 }, { name: "next1", ms: 1_000 }, { name: "next2", ms: 1_000 })
      yield* TestClock.adjust(200)
      assert.strictEqual(h.started.length, 4)
      const claimsBefore = h.claims.length
      yield* TestClock.adjust(10) // "quick" ends at 210
      assert.deepStrictEqual(h.finished, ["quick"])
      yield* TestClock.adjust(WorkPool.coalesceMs - 1)
      assert.strictEqual(h.claims.length, claimsBefore, "claimed before coalesceMs with one slot free")
      yield* TestClock.adjust(1)
      assert.strictEqual(h.claims.length, claimsBefore + 1)
      assert.deepStrictEqual(h.claims.at(-1), { limit: 1, got: 1, held: 3 })
      // The three held steps end together: three of four free, claimed without waiting.
      h.due.push({ name: "later1", ms: 1_000 }, { name: "later2", ms: 1_000 })
      yield* Deferred.succeed(h.gate, undefined)
      yield* turns
      assert.strictEqual(h.claims.length, claimsBefore + 2)
      assert.deepStrictEqual(h.claims.at(-1), { limit: 3, got: 3, held: 1 }) // next2, later1, later2
      yield* Fiber.interrupt(h.fiber)
    }))

  it.effect("nothing due: claims again after idleMs, or coalesceMs after a wake-up", () =>
    Effect.gen(function*() {
      const h = yield* harness({ slots: 4, batch: 10, idleMs: 200 })
      assert.strictEqual(h.claims.length, 1)
      h.due.push({ name: "a", ms: 1 })
      yield* TestClock.adjust(199)
      assert.strictEqual(h.claims.length, 1)
      yield* TestClock.adjust(1)
      assert.deepStrictEqual(h.started, ["a"])
      h.due.push({ name: "b", ms: 1 })
      yield* Queue.offer(h.wake, undefined)
      yield* TestClock.adjust(WorkPool.coalesceMs - 1)
      assert.deepStrictEqual(h.started, ["a"])
      yield* TestClock.adjust(1)
      assert.deepStrictEqual(h.started, ["a", "b"])
      yield* Fiber.interrupt(h.fiber)
    }))

  it.effect("interrupting the pool interrupts its running steps", () =>
    Effect.gen(function*() {
      const h = yield* harness({ slots: 4, batch: 10 })
      h.due.push({ name: "x" }, { name: "y" })
      yield* TestClock.adjust(200)
      assert.deepStrictEqual(h.started, ["x", "y"])
      yield* Fiber.interrupt(h.fiber)
      assert.deepStrictEqual([...h.interrupted].sort(), ["x", "y"])
      assert.deepStrictEqual(h.finished, [])
    }))
})

/**
 * `Lease.guarded` on the live clock (tasks/Lease.ts): the work runs in one forked fiber and the
 * heartbeat is a timer between renewals. The TestClock's path (a race against a heartbeat fiber) is
 * what test/leases.test.ts drives through the workers. Here the heartbeat is 20 ms of real time,
 * and every assertion waits on an event (a renewal, the work's start or end), not on a sleep.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as FiberRef from "effect/FiberRef"
import * as Supervisor from "effect/Supervisor"
import * as Lease from "../src/tasks/Lease.js"

const heartbeatMs = 20

/** Options of a lease held for another minute, renewed by `renew`. */
const optionsWith = (renew: (until: number) => Effect.Effect<boolean, unknown>, heldUntil = Date.now() + 60_000) => ({
  id: "task-1",
  leaseMs: 30_000,
  heartbeatMs,
  heldUntil,
  renew
})

/** Options whose renewals are recorded (the `until` of each) and answered by `answer`. */
const recorded = (answer: (n: number) => boolean, heldUntil?: number) => {
  const renewals: Array<number> = []
  return { renewals, options: optionsWith((until) => Effect.sync(() => answer(renewals.push(until))), heldUntil) }
}

describe("Lease.guarded on the live clock", () => {
  it.live("a step shorter than a heartbeat gives its value and renews nothing", () =>
    Effect.gen(function*() {
      const { options, renewals } = recorded(() => true)
      assert.strictEqual(yield* Lease.guarded(options, Effect.succeed(42)), 42)
      assert.deepStrictEqual(renewals, [])
    }))

  it.live("a longer step renews its lease at each heartbeat, then gives its value and the fiber-locals it set", () =>
    Effect.gen(function*() {
      const renewedTwice = yield* Deferred.make<void>()
      const { options, renewals } = recorded((n) => {
        if (n === 2) Deferred.unsafeDone(renewedTwice, Exit.void)
        return true
      })
      const local = FiberRef.unsafeMake("before")
      const work = Effect.zipRight(Deferred.await(renewedTwice), Effect.as(FiberRef.set(local, "set by the step"), "done"))
      assert.strictEqual(yield* Lease.guarded(options, work), "done")
      assert.isAtLeast(renewals.length, 2)
      assert.isTrue(renewals[1]! > renewals[0]!, "each renewal extends the lease from its own time")
      assert.strictEqual(yield* FiberRef.get(local), "set by the step")
    }))

  it.live("a renewal that finds the lease gone interrupts the step and fails with LeaseLost", () =>
    Effect.gen(function*() {
      const interrupted = yield* Deferred.make<void>()
      const { options } = recorded(() => false)
      const work = Effect.onInterrupt(Effect.never, () => Deferred.succeed(interrupted, undefined))
      const exit = yield* Effect.exit(Lease.guarded(options, work))
      assert.isTrue(Exit.isFailure(exit) && exit.cause._tag === "Fail" && exit.cause.error instanceof Lease.LeaseLost)
      assert.isTrue(yield* Deferred.isDone(interrupted), "the step was not interrupted before LeaseLost")
    }))

  it.live("a renewal that fails is tried again at the next heartbeat while the lease lasts", () =>
    Effect.gen(function*() {
      const third = yield* Deferred.make<void>()
      let calls = 0
      const options = optionsWith(() =>
        Effect.suspend(() => {
          calls++
          if (calls === 3) Deferred.unsafeDone(third, Exit.void)
          return calls === 1 ? Effect.fail("the database did not answer") : Effect.succeed(true)
        })
      )
      assert.strictEqual(yield* Lease.guarded(options, Effect.as(Deferred.await(third), "done")), "done")
      assert.isAtLeast(calls, 3)
    }))

  it.live("the step's failure is the guarded step's, at once", () =>
    Effect.gen(function*() {
      const { options, renewals } = recorded(() => true)
      const exit = yield* Effect.exit(Lease.guarded(options, Effect.fail("vendor refused" as const)))
      assert.deepStrictEqual(exit, Exit.fail("vendor refused"))
      assert.deepStrictEqual(renewals, [])
    }))

  it.live("interrupting the guarded step interrupts its work", () =>
    Effect.gen(function*() {
      const started = yield* Deferred.make<void>()
      const interrupted = yield* Deferred.make<void>()
      const { options } = recorded(() => true)
      const work = Effect.zipRight(Deferred.succeed(started, undefined), Effect.onInterrupt(Effect.never, () => Deferred.succeed(interrupted, undefined)))
      const fiber = yield* Effect.fork(Lease.guarded(options, work))
      yield* Deferred.await(started)
      yield* Fiber.interrupt(fiber)
      assert.isTrue(yield* Deferred.isDone(interrupted), "the work outlived its guarded step")
    }))

  it.live("a step that ends while a renewal runs keeps its outcome, even when that renewal finds the lease gone", () =>
    Effect.gen(function*() {
      const renewing = yield* Deferred.make<void>()
      const stepEnded = yield* Deferred.make<void>()
      const options = optionsWith(() =>
        Effect.gen(function*() {
          yield* Deferred.succeed(renewing, undefined)
          yield* Deferred.await(stepEnded)
          // Lets the step's fiber finish before the answer.
          yield* Effect.repeatN(Effect.yieldNow(), 20)
          return false
        })
      )
      const work = Effect.zipRight(Deferred.await(renewing), Effect.as(Deferred.succeed(stepEnded, undefined), "submitted"))
      assert.strictEqual(yield* Lease.guarded(options, work), "submitted")
    }))

  it.live("a renewal that dies interrupts the step before the guarded step ends", () =>
    Effect.gen(function*() {
      const interrupted = yield* Deferred.make<void>()
      const options = optionsWith(() => Effect.die("the renewal broke"))
      const work = Effect.onInterrupt(Effect.never, () => Deferred.succeed(interrupted, undefined))
      const exit = yield* Effect.exit(Lease.guarded(options, work))
      assert.isTrue(Exit.isFailure(exit))
      assert.isTrue(yield* Deferred.isDone(interrupted), "the step ran on after the guarded step ended")
    }))

  it.live("a failing step's fiber-locals are joined back too, as the race joins its winner's", () =>
    Effect.gen(function*() {
      const { options } = recorded(() => true)
      const local = FiberRef.unsafeMake("before")
      const exit = yield* Effect.exit(Lease.guarded(options, Effect.zipRight(FiberRef.set(local, "set by the step"), Effect.fail("refused" as const))))
      assert.deepStrictEqual(exit, Exit.fail("refused"))
      assert.strictEqual(yield* FiberRef.get(local), "set by the step")
    }))

  it.live("a lease with less than a heartbeat left is renewed before the step starts; if it is gone the step does not start", () =>
    Effect.gen(function*() {
      const { options, renewals } = recorded(() => false, Date.now() + heartbeatMs / 2)
      let ran = false
      const exit = yield* Effect.exit(Lease.guarded(options, Effect.sync(() => (ran = true))))
      assert.isTrue(Exit.isFailure(exit))
      assert.strictEqual(renewals.length, 1)
      assert.isFalse(ran)
    }))
})

/** The fibers running under `guarded` while its step waits: one on the live clock, more under the TestClock's race. */
const forkedWhileWaiting = Effect.gen(function*() {
  const started = yield* Deferred.make<void>()
  const { options } = recorded(() => true)
  const supervisor = yield* Supervisor.track
  const fiber = yield* Effect.fork(Effect.supervised(Lease.guarded(options, Effect.zipRight(Deferred.succeed(started, undefined), Effect.never)), supervisor))
  yield* Deferred.await(started)
  const running = (yield* supervisor.value).length
  yield* Fiber.interrupt(fiber)
  return running
})

describe("Lease.guarded: which path runs", () => {
  it.live("on the live clock the step is the only fiber forked", () => Effect.map(forkedWhileWaiting, (n) => assert.strictEqual(n, 1)))
  it.effect("under the TestClock the step races a heartbeat fiber", () => Effect.map(forkedWhileWaiting, (n) => assert.isAbove(n, 1)))
})

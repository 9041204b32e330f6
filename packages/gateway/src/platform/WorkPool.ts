/**
 * A pool of worker slots refilled as they free up. It holds at most `max(batch, slots)` claimed
 * items: `slots` of them running, each in its own fiber, the rest waiting in hand. As each step
 * ends the next one in hand starts at once, and the pool claims again as soon as half of what it
 * may hold is free — or, when its slots have run out of work with less room than that,
 * `coalesceMs` later. A slow step (a vendor that takes its whole timeout to answer, a large
 * mirror) holds its own slot only: a worker that claimed a batch and waited for all of it before
 * claiming again would leave every other due item waiting for that batch's slowest step.
 *
 * Claims stay large (half a batch or more while work keeps coming), so the claim statement's cost
 * is shared by many items. When a claim comes back short (nothing more is due), the pool waits
 * `idleMs`, or until `wake` completes (a create) and then `coalesceMs` more, to gather the creates
 * arriving together into one claim. Interrupting the pool interrupts its running items; the items
 * in hand are left to their leases (their owner releases them, as before).
 */
import * as Effect from "effect/Effect"
import * as FiberSet from "effect/FiberSet"
import * as Queue from "effect/Queue"

/** How long the workers gather further creates, or further freed slots, into one claim. */
export const coalesceMs = 15

/** What the pool claims and runs. */
export interface Options<A> {
  /** Items run at once. */
  readonly slots: number
  /** Most items taken by one claim. */
  readonly batch: number
  /** Claims at most `limit` due items; failures are the caller's to handle (log, answer none). */
  readonly claim: (limit: number) => Effect.Effect<ReadonlyArray<A>>
  /** Runs one claimed item; failures are the caller's to handle. */
  readonly run: (item: A) => Effect.Effect<void>
  /** Completes when new items may be due (a create); absent, only `idleMs` ends an idle wait. */
  readonly wake?: Effect.Effect<void>
  /** How long to wait after a claim found nothing more due. */
  readonly idleMs: number
  /** How long to gather further wake-ups, or further freed slots, into one claim. */
  readonly coalesceMs: number
}

/** Runs the pool until interrupted. */
export const run = <A>(options: Options<A>): Effect.Effect<never> =>
  Effect.scoped(Effect.gen(function*() {
    const { batch, coalesceMs, idleMs, slots } = options
    const fibers = yield* FiberSet.make<void, never>()
    const runFork = yield* FiberSet.runtime(fibers)<never>()
    const freed = yield* Queue.sliding<void>(1)
    const holds = Math.max(batch, slots)
    const half = Math.max(1, Math.ceil(holds / 2))
    const waiting: Array<A> = []
    let running = 0
    let starting = false

    /**
     * Starts what is in hand while slots are free, in the pool's own context (not the ending
     * step's). A fiber may run to its end inside `runFork`, and its `release` call back here: the
     * loop below, not a nested call, starts the next item, so the stack stays flat however many
     * steps end at once.
     */
    const start = () => {
      if (starting) return
      starting = true
      try {
        while (running < slots && waiting.length > 0) {
          running++
          runFork(Effect.ensuring(options.run(waiting.shift()!), release))
        }
      } finally {
        starting = false
      }
    }
    const release = Effect.suspend(() => {
      running--
      start()
      return Queue.offer(freed, undefined)
    })
    const room = () => holds - running - waiting.length
    const starving = () => running < slots && waiting.length === 0

    /** Until half of what the pool holds is free. */
    const halfFree = Effect.gen(function*() {
      while (room() < half) yield* Queue.take(freed)
    })

    /** Until half is free, or the slots ran out of work and `coalesceMs` passed. */
    const space = Effect.gen(function*() {
      yield* Queue.takeAll(freed)
      while (room() < half) {
        if (starving()) return yield* Effect.raceFirst(halfFree, Effect.sleep(coalesceMs))
        yield* Queue.take(freed)
      }
    })

    const wake = options.wake
    const idle = wake === undefined
      ? Effect.sleep(idleMs)
      : Effect.raceFirst(Effect.sleep(idleMs), Effect.zipRight(wake, Effect.sleep(coalesceMs)))

    while (true) {
      const limit = Math.min(batch, room())
      const claimed = limit > 0 ? yield* options.claim(limit) : []
      for (const item of claimed) waiting.push(item)
      start()
      // A short claim: nothing more is due now. A full one: more may be, as soon as there is room.
      yield* claimed.length < limit ? idle : space
    }
  }))

/**
 * Short leases kept alive while work runs. A worker holds a claimed row for `leaseMs`; while a
 * long step (a submit waiting on a slow vendor, a large mirror) runs, a heartbeat renews the lease
 * every `heartbeatMs`, so a replica that dies lets others take its work over within one lease
 * period whatever it was doing. A renewal that finds the lease gone (another replica claimed the
 * row, or it was cancelled) interrupts the work at once, so it has no further side effects.
 *
 * Only steps with side effects need it (a submit creates a job at the vendor, a mirror writes
 * media). A read-only step (a poll, a reconcile lookup) runs without: its result is written with a
 * compare-and-set on the row's version, which every claim bumps, so a read that outlived its lease
 * writes nothing, and a second replica reading the same job meanwhile does no harm. Starting a
 * heartbeat costs a forked fiber (see `guarded`), and polls are most of the steps.
 */
import * as Clock from "effect/Clock"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import { LiveTimer } from "@genway/core"

/** The lease was lost while the work ran; the work was interrupted. */
export class LeaseLost extends Data.TaggedError("LeaseLost")<{ readonly id: string; readonly reason: string }> {}

/** Options of `guarded`. */
export interface GuardOptions {
  /** The row (task, response, delivery) the lease is on, for messages. */
  readonly id: string
  /** How long a renewal extends the lease from now. */
  readonly leaseMs: number
  /** How often the lease is renewed (well inside `leaseMs`). */
  readonly heartbeatMs: number
  /** The lease's current end, as the caller last wrote it. */
  readonly heldUntil: number
  /**
   * Extends the lease to `until` if it is still the caller's: `true` when renewed, `false` when
   * the lease is gone. It must not change anything a later compare-and-set of the caller checks.
   */
  readonly renew: (until: number) => Effect.Effect<boolean, unknown>
}

/**
 * Runs `work` while a heartbeat renews its lease. Fails with `LeaseLost` (and interrupts `work`)
 * when a renewal finds the lease taken, or when renewals keep failing until the lease would lapse:
 * past that point another replica may own the row, so the work must stop either way. A lease with
 * less than one heartbeat left (a read-only step before this one ran long) is renewed before `work`
 * starts; if it is gone, or cannot be renewed in time, `work` does not start.
 *
 * On the live clock `work` runs in one forked fiber and the heartbeat is a plain timer between
 * renewals, run by the caller's fiber (the fiber-locals `work` changed are joined back, as the race
 * joins its winner's; a `work` that ended while a renewal ran keeps its outcome, as in the race,
 * where it ends first). Racing `work` against a heartbeat fiber, as under any other clock (`TestClock` in
 * tests), forks two fibers and interrupts the sleeping one: measured in a loop on the 2-core
 * machine (a step that ends after one microtask), 61–68 µs per guarded step against 30–53 µs; a
 * task's life has two (its submit and its result's mirror).
 */
export const guarded = <A, E, R>(options: GuardOptions, work: Effect.Effect<A, E, R>): Effect.Effect<A, E | LeaseLost, R> => {
  const lost = (reason: string) => new LeaseLost({ id: options.id, reason })
  // One renewal of a lease held until `heldUntil`: its new end. When the database does not answer,
  // the old end, unless the lease would run out before the next renewal (then the lease is lost).
  const renewal = (heldUntil: number) =>
    Effect.flatMap(Clock.currentTimeMillis, (now) => {
      const until = now + options.leaseMs
      return Effect.flatMap(Effect.either(options.renew(until)), (renewed) => {
        if (renewed._tag === "Right") return renewed.right ? Effect.succeed(until) : Effect.fail(lost("another worker holds the lease now"))
        if (now + options.heartbeatMs >= heldUntil) return Effect.fail(lost("the lease could not be renewed before it ran out"))
        return Effect.as(
          Effect.logWarning("could not renew a lease; trying again", renewed.left).pipe(Effect.annotateLogs("lease", options.id)),
          heldUntil
        )
      })
    })
  const heartbeat = (from: number) =>
    Effect.gen(function*() {
      let heldUntil = from
      while (true) {
        yield* Effect.sleep(options.heartbeatMs)
        heldUntil = yield* renewal(heldUntil)
      }
    })
  // The next event of `child`'s watch: its exit, or `undefined` once a heartbeat has passed.
  const next = (child: Fiber.RuntimeFiber<A, E>) =>
    Effect.async<Exit.Exit<A, E> | undefined>((resume) => {
      const timer = setTimeout(() => {
        child.removeObserver(ended)
        resume(Effect.succeed(undefined))
      }, options.heartbeatMs)
      const ended = (exit: Exit.Exit<A, E>) => {
        clearTimeout(timer)
        resume(Effect.succeed(exit))
      }
      child.addObserver(ended)
      return Effect.sync(() => {
        clearTimeout(timer)
        child.removeObserver(ended)
      })
    })
  // `work`'s outcome, its fiber-locals joined back whatever it was (as the race joins the winner's).
  const ended = (child: Fiber.RuntimeFiber<A, E>, exit: Exit.Exit<A, E>) => Effect.zipRight(child.inheritAll, exit)
  // Until `child` ends, renewing the lease held until `heldUntil` at every heartbeat.
  const watch = (child: Fiber.RuntimeFiber<A, E>, heldUntil: number): Effect.Effect<A, E | LeaseLost> =>
    Effect.flatMap(next(child), (exit) => {
      if (exit !== undefined) return ended(child, exit)
      return Effect.matchEffect(renewal(heldUntil), {
        // `work` may have ended while the renewal ran: its outcome stands (it ended first).
        onFailure: (lost): Effect.Effect<A, E | LeaseLost> => {
          const done = child.unsafePoll()
          return done !== null ? ended(child, done) : Effect.zipRight(Fiber.interrupt(child), Effect.fail(lost))
        },
        onSuccess: (until) => watch(child, until)
      })
    })
  const run = (heldUntil: number) =>
    Effect.clockWith((clock) =>
      !LiveTimer.usable(clock, options.heartbeatMs)
        ? Effect.raceFirst(work, heartbeat(heldUntil))
        : Effect.uninterruptibleMask((restore) =>
          Effect.flatMap(Effect.fork(restore(work)), (child) =>
            // Whatever ends the watch other than `work`'s own end (the caller's interruption, even
            // one pending before the watch begins; a renewal's defect) interrupts `work` first.
            Effect.onExit(restore(watch(child, heldUntil)), (exit) => (Exit.isSuccess(exit) ? Effect.void : Fiber.interrupt(child)))))
    )
  return Effect.flatMap(Clock.currentTimeMillis, (now) =>
    now + options.heartbeatMs < options.heldUntil ? run(options.heldUntil) : Effect.flatMap(renewal(options.heldUntil), run))
}

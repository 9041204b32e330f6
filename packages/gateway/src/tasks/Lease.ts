/**
 * Short leases kept alive while work runs. A worker holds a claimed row for `leaseMs`; while a
 * long step (a submit waiting on a slow vendor, a large mirror) runs, a heartbeat renews the lease
 * every `heartbeatMs`, so a replica that dies lets others take its work over within one lease
 * period whatever it was doing. A renewal that finds the lease gone (another replica claimed the
 * row, or it was cancelled) interrupts the work at once, so it has no further side effects.
 */
import * as Clock from "effect/Clock"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"

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
 * past that point another replica may own the row, so the work must stop either way.
 */
export const guarded = <A, E, R>(options: GuardOptions, work: Effect.Effect<A, E, R>): Effect.Effect<A, E | LeaseLost, R> => {
  const heartbeat = Effect.gen(function*() {
    let heldUntil = options.heldUntil
    while (true) {
      yield* Effect.sleep(options.heartbeatMs)
      const now = yield* Clock.currentTimeMillis
      const until = now + options.leaseMs
      const renewed = yield* Effect.either(options.renew(until))
      if (renewed._tag === "Right") {
        if (!renewed.right) return yield* new LeaseLost({ id: options.id, reason: "another worker holds the lease now" })
        heldUntil = until
        continue
      }
      yield* Effect.logWarning("could not renew a lease; trying again", renewed.left).pipe(Effect.annotateLogs("lease", options.id))
      if (now + options.heartbeatMs >= heldUntil) {
        return yield* new LeaseLost({ id: options.id, reason: "the lease could not be renewed before it ran out" })
      }
    }
  })
  return Effect.raceFirst(work, heartbeat)
}

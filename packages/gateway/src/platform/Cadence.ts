/**
 * When to look at a task or a kept response again: the entry's poll cadence (first poll after
 * `initial`, then a delay drawn within `every`), the vendor's hint when it gives one, and
 * exponential back-off with jitter after a transient failure. Randomness comes from Effect's
 * `Random`, so a test can pin it (`Random.fixed`, `TestRandom`).
 */
import type { ModelEntry } from "@genway/core"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Random from "effect/Random"

const millis = (d: Duration.DurationInput) => Duration.toMillis(Duration.decode(d))

/** Longest back-off between attempts. */
export const maxBackoffMs = 60_000

/** Exponential back-off (1 s doubling, at most a minute) with jitter in its upper half, never shorter than the vendor's hint. */
export const backoffMs = (attempts: number, hint: Duration.DurationInput | undefined, random: number): number => {
  const base = Math.min(maxBackoffMs, 1_000 * 2 ** Math.min(attempts, 10))
  const jittered = base / 2 + (base / 2) * random
  return Math.round(Math.max(jittered, hint === undefined ? 0 : millis(hint)))
}

/** The back-off after `attempts` failures, jittered by `Random`. */
export const backoff = (attempts: number, hint: Duration.DurationInput | undefined): Effect.Effect<number> =>
  Effect.map(Random.next, (random) => backoffMs(attempts, hint, random))

/** How a poll delay is chosen. */
export interface PollOptions {
  /** A deployment-wide fixed interval (`GATEWAY_POLL_INTERVAL_MS`), overriding everything else. */
  readonly override: Option.Option<number>
  /** The vendor's own hint for this task, when it gave one. */
  readonly hint?: Duration.DurationInput | undefined
  /** The first poll after a submit (`initial`) rather than a later one (within `every`). */
  readonly first: boolean
}

/** The shortest time between two polls of a task of `entry`: the deployment's override, else the low end of `every`. */
export const shortestPollMs = (entry: ModelEntry.ModelEntry, override: Option.Option<number>): number =>
  Option.getOrElse(override, () => millis(entry.poll.every[0]))

/** The longest time between two polls of a task of `entry`: the deployment's override, else the high end of `every`. */
export const longestPollMs = (entry: ModelEntry.ModelEntry, override: Option.Option<number>): number =>
  Option.getOrElse(override, () => millis(entry.poll.every[1]))

/** The delay before the next poll of a task of `entry`, drawn with `Random` within `every`. */
export const pollDelay = (entry: ModelEntry.ModelEntry, options: PollOptions): Effect.Effect<number> => {
  if (Option.isSome(options.override)) return Effect.succeed(options.override.value)
  if (options.hint !== undefined) return Effect.succeed(Math.max(0, Math.round(millis(options.hint))))
  if (options.first) return Effect.succeed(millis(entry.poll.initial))
  const lo = shortestPollMs(entry, Option.none())
  const hi = longestPollMs(entry, Option.none())
  // Whole milliseconds: the time is stored in a BIGINT column on PostgreSQL.
  return Effect.map(Random.next, (random) => Math.round(lo + random * (hi - lo)))
}

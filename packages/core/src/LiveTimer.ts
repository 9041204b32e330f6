/**
 * When a plain Node timer may stand for a wait on Effect's clock: on the live clock, for a delay
 * Node's timers hold (at most 2^31 - 1 ms). Under any other clock (`TestClock` in tests) a wait must
 * go through the clock itself, so tests move time as before. Used where a forked fiber sleeping on
 * the clock would cost more than the work it watches (adapter-kit's `Http.deadline`, the gateway's
 * lease heartbeat).
 */
import * as Clock from "effect/Clock"

const LiveClock = Clock.make().constructor

/** The longest delay a Node timer holds. */
export const maxMs = 2_147_483_647

/** Whether a wait of `ms` on `clock` may be a plain `setTimeout`. */
export const usable = (clock: Clock.Clock, ms: number): boolean => clock instanceof LiveClock && ms <= maxMs

/**
 * The current time read from a fiber in hand (inside `Effect.withFiberRuntime`), from its own
 * `Clock` (a `TestClock` in tests): what `Clock.currentTimeMillis` gives, without a step of its own.
 */
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import type * as Fiber from "effect/Fiber"

/** Milliseconds since the epoch by `fiber`'s clock. */
export const nowOf = (fiber: Fiber.RuntimeFiber<unknown, unknown>): number =>
  Context.get(fiber.currentDefaultServices, Clock.Clock).unsafeCurrentTimeMillis()

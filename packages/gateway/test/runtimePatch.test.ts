/**
 * The workspace's patch of Effect's run loop (patches/effect@3.22.4.patch; bench/JOURNAL.md,
 * "Fewer allocations per step"): each step of a fiber goes through one step function that fiber owns,
 * rather than a closure allocated for the step. A tracer still sees every step through its
 * `context` (OpenTelemetry's wraps each step in its context), and programs compute what they did.
 * Upgrading `effect` without carrying the patch forward fails the first test, not silently.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as Tracer from "effect/Tracer"

/** Effect's own tracer, whose spans the recording tracer hands out. */
const native = Effect.runSync(Effect.tracer)

/** A tracer that records, per fiber, every function its `context` was asked to run. */
const recording = () => {
  const seen = new Map<unknown, Array<unknown>>()
  const tracer = Tracer.make({
    span: native.span,
    context: (f, fiber) => {
      const list = seen.get(fiber) ?? []
      list.push(f)
      seen.set(fiber, list)
      return f()
    }
  })
  return { tracer, seen }
}

/** A few dozen steps on one fiber, and a child fiber of its own. */
const program = Effect.gen(function*() {
  let total = 0
  for (let i = 0; i < 20; i++) total += yield* Effect.succeed(i)
  const child = yield* Effect.fork(Effect.map(Effect.succeed(21), (n) => n * 2))
  const fromChild = yield* Fiber.join(child)
  return total + fromChild
})

describe("Effect's run loop, as patched", () => {
  it("gives the tracer one step function per fiber, for every step", () => {
    const { seen, tracer } = recording()
    const result = Effect.runSync(Effect.withTracer(program, tracer))
    assert.strictEqual(result, 190 + 42)
    assert.isAtLeast(seen.size, 2, "the parent and the forked child both ran under the tracer")
    for (const [, steps] of seen) {
      assert.isAbove(steps.length, 1)
      assert.strictEqual(new Set(steps).size, 1, `${steps.length} steps went through ${new Set(steps).size} functions`)
    }
    const [parent, child] = [...seen.values()]
    assert.notStrictEqual(parent![0], child![0], "each fiber has its own step function")
  })

  it("runs a step that starts another program on the same thread with its own effect", () => {
    // A step that runs a whole program synchronously (runSync inside a sync step) re-enters the
    // run loop of another fiber; the outer fiber's next step must still be its own.
    const inner = Effect.map(Effect.succeed(2), (n) => n + 1)
    const outer = Effect.flatMap(
      Effect.sync(() => Effect.runSync(inner)),
      (n) => Effect.map(Effect.succeed(n), (m) => m * 10)
    )
    const { tracer } = recording()
    assert.strictEqual(Effect.runSync(Effect.withTracer(outer, tracer)), 30)
  })

  it("keeps failures, interruption and spans as they were", async () => {
    const failed = Effect.runSyncExit(Effect.flatMap(Effect.succeed(1), () => Effect.fail("no")))
    assert.isTrue(Exit.isFailure(failed) && Option.getOrUndefined(Cause.failureOption(failed.cause)) === "no")
    const interrupted = await Effect.runPromise(Effect.flatMap(Effect.fork(Effect.never), Fiber.interrupt))
    assert.isTrue(Exit.isInterrupted(interrupted))
    const { seen, tracer } = recording()
    const named = Effect.runSync(Effect.withTracer(Effect.withSpan(Effect.map(Effect.currentSpan, (s) => s.name), "step"), tracer))
    assert.strictEqual(named, "step")
    assert.isAbove([...seen.values()].reduce((n, steps) => n + steps.length, 0), 0)
  })
})

/**
 * Batched writes on the answer's path (platform/WriteBatch.ts): submitters of one turn share one
 * write, none resumes before its batch is written, a failed batch is written again row by row
 * (one row's failure is its submitter's alone), and closing the scope waits for the batch in
 * flight. Then the E2 surface over it: many kept responses created at once, each kept and
 * recorded once.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Scope from "effect/Scope"
import * as WriteBatch from "../src/platform/WriteBatch.js"

describe("WriteBatch", () => {
  it.scoped("submitters of one turn share one write; none resumes before it is written", () =>
    Effect.gen(function*() {
      const writes: Array<ReadonlyArray<number>> = []
      const gate = yield* Deferred.make<void>()
      const submit = yield* WriteBatch.make((items: ReadonlyArray<number>) =>
        Effect.zipRight(Effect.sync(() => writes.push(items)), Deferred.await(gate)))
      const fibers = yield* Effect.forEach([1, 2, 3, 4, 5], (n) => Effect.fork(submit(n)))
      // The batch has started (its write is recorded) and waits on the gate.
      yield* Effect.async<void>((resume) => {
        const check = () => (writes.length > 0 ? resume(Effect.void) : setImmediate(check))
        check()
      })
      assert.deepStrictEqual(writes, [[1, 2, 3, 4, 5]])
      for (const f of fibers) assert.isTrue((yield* Fiber.poll(f))._tag === "None", "resumed before its write committed")
      // Submitted while the first batch is written: the next batch.
      const late = yield* Effect.fork(submit(6))
      yield* Deferred.succeed(gate, undefined)
      for (const f of fibers) assert.isTrue(Exit.isSuccess(yield* Fiber.await(f)))
      assert.isTrue(Exit.isSuccess(yield* Fiber.await(late)))
      assert.deepStrictEqual(writes, [[1, 2, 3, 4, 5], [6]])
    }))

  it.scoped("a failed batch is written row by row: only the failing row's submitter fails", () =>
    Effect.gen(function*() {
      const written: Array<number> = []
      const submit = yield* WriteBatch.make((items: ReadonlyArray<number>) =>
        items.includes(13) ? Effect.fail(`refused ${items.join(",")}`) : Effect.sync(() => written.push(...items)))
      const exits = yield* Effect.forEach([11, 12, 13, 14], (n) => Effect.exit(submit(n)), { concurrency: "unbounded" })
      assert.deepStrictEqual(exits.map(Exit.isSuccess), [true, true, false, true])
      assert.deepStrictEqual(exits[2], Exit.fail("refused 13"))
      assert.deepStrictEqual(written, [11, 12, 14])
    }))

  it.effect("at most `max` rows per write", () =>
    Effect.gen(function*() {
      const sizes: Array<number> = []
      const scope = yield* Scope.make()
      const submit = yield* Scope.extend(WriteBatch.make((items: ReadonlyArray<number>) => Effect.sync(() => sizes.push(items.length)), 3), scope)
      yield* Effect.forEach([1, 2, 3, 4, 5, 6, 7], submit, { concurrency: "unbounded", discard: true })
      yield* Scope.close(scope, Exit.void)
      assert.deepStrictEqual(sizes, [3, 3, 1])
    }))

  it.effect("closing the scope waits for the batch in flight", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const gate = yield* Deferred.make<void>()
      let done = 0
      const submit = yield* Scope.extend(
        WriteBatch.make((items: ReadonlyArray<number>) => Effect.zipRight(Deferred.await(gate), Effect.sync(() => (done += items.length)))),
        scope
      )
      const submitted = yield* Effect.fork(submit(1))
      yield* Effect.yieldNow()
      const closing = yield* Effect.fork(Scope.close(scope, Exit.void))
      yield* Effect.yieldNow()
      assert.isTrue((yield* Fiber.poll(closing))._tag === "None", "the scope closed before the write")
      yield* Deferred.succeed(gate, undefined)
      yield* Fiber.join(closing)
      assert.strictEqual(done, 1)
      assert.isTrue(Exit.isSuccess(yield* Fiber.await(submitted)))
    }))
})

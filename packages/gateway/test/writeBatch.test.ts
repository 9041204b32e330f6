/**
 * Batched writes on the answer's path (platform/WriteBatch.ts): a lone row is written at once,
 * rows arriving during a write share the next one, none resumes before its batch is written, a failed batch is written again row by row
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
  it.scoped("a lone row is written at once; those arriving meanwhile share the next write; none resumes before its write", () =>
    Effect.gen(function*() {
      const writes: Array<ReadonlyArray<number>> = []
      const gates = [yield* Deferred.make<void>(), yield* Deferred.make<void>()]
      const submit = yield* WriteBatch.make((items: ReadonlyArray<number>) =>
        Effect.suspend(() => {
          writes.push(items)
          return Deferred.await(gates[writes.length - 1]!)
        }))
      const first = yield* Effect.fork(submit(1))
      const written = (n: number) =>
        Effect.async<void>((resume) => {
          const check = () => (writes.length >= n ? resume(Effect.void) : setImmediate(check))
          check()
        })
      yield* written(1)
      assert.deepStrictEqual(writes, [[1]])
      let submitted = 0
      const more = yield* Effect.forEach([2, 3, 4, 5], (n) => Effect.fork(Effect.zipRight(Effect.sync(() => submitted++), submit(n))))
      yield* Effect.async<void>((resume) => {
        const check = () => (submitted === 4 ? resume(Effect.void) : setImmediate(check))
        check()
      })
      assert.deepStrictEqual(writes, [[1]], "a second write began while the first was in flight")
      assert.isTrue((yield* Fiber.poll(first))._tag === "None", "resumed before its write committed")
      yield* Deferred.succeed(gates[0]!, undefined)
      assert.isTrue(Exit.isSuccess(yield* Fiber.await(first)))
      yield* written(2)
      assert.deepStrictEqual(writes, [[1], [2, 3, 4, 5]])
      for (const f of more) assert.isTrue((yield* Fiber.poll(f))._tag === "None", "resumed before its write committed")
      yield* Deferred.succeed(gates[1]!, undefined)
      for (const f of more) assert.isTrue(Exit.isSuccess(yield* Fiber.await(f)))
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
      const gate = yield* Deferred.make<void>()
      const scope = yield* Scope.make()
      const submit = yield* Scope.extend(
        WriteBatch.make((items: ReadonlyArray<number>) => Effect.zipRight(Deferred.await(gate), Effect.sync(() => sizes.push(items.length))), 3),
        scope
      )
      // 1 is written alone (nothing in flight); 2 to 8 arrive while it is.
      let submitted = 0
      const all = yield* Effect.fork(
        Effect.forEach([1, 2, 3, 4, 5, 6, 7, 8], (n) => Effect.zipRight(Effect.sync(() => submitted++), submit(n)), { concurrency: "unbounded", discard: true })
      )
      yield* Effect.async<void>((resume) => {
        const check = () => (submitted === 8 ? resume(Effect.void) : setImmediate(check))
        check()
      })
      yield* Deferred.succeed(gate, undefined)
      yield* Fiber.join(all)
      yield* Scope.close(scope, Exit.void)
      assert.deepStrictEqual(sizes, [1, 3, 3, 1])
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

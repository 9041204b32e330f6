/**
 * The heap policy's choice (platform/Heap.ts): node's own `--heap-growing-percent`, in any of the
 * spellings node accepts, wins over `GATEWAY_HEAP_GROWING_PERCENT`; 0 leaves V8's rule. (Setting the
 * flag is checked on a real `genway serve` in process.test.ts; the memory it saves is measured by
 * `pnpm bench`.)
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Heap from "../src/platform/Heap.js"
import * as v8 from "node:v8"
import * as vm from "node:vm"

describe("heap policy", () => {
  it.effect("node's own flag wins, whatever its spelling; other node options do not count", () =>
    Effect.gen(function*() {
      for (const option of ["--heap-growing-percent=20", "--heap_growing_percent=20", "-heap-growing-percent=20", "--heap-growing_percent=0"]) {
        const applied = yield* Heap.apply(50, 90, ["--enable-source-maps", option])
        assert.deepStrictEqual(applied, { _tag: "NodeOption", option })
        assert.include(Heap.describe(applied), `node's ${option}`)
      }
      assert.deepStrictEqual(yield* Heap.apply(0, 90, ["--max-old-space-size=512", "--heap-growing-percentile=3"]), { _tag: "V8Default" })
    }))

  it("the start-up line says which rule runs", () => {
    assert.strictEqual(
      Heap.describe({ _tag: "Set", percent: 50, roomMb: 90 }),
      "heap: a full collection once the old generation grows 50 % past its live size; while full collections come less than 2 s apart, not before it reaches 90 MB (GATEWAY_HEAP_GROWING_PERCENT, GATEWAY_HEAP_ROOM_MB)"
    )
    assert.strictEqual(
      Heap.describe({ _tag: "Set", percent: 50, roomMb: 0 }),
      "heap: a full collection once the old generation grows 50 % past its live size (GATEWAY_HEAP_GROWING_PERCENT)"
    )
    assert.strictEqual(Heap.describe({ _tag: "V8Default" }), "heap: V8's own growing rule (GATEWAY_HEAP_GROWING_PERCENT=0)")
  })

  it("the room: the percent that lets the old generation reach it, at least the percent set, at most 300", () => {
    const mb = 1024 * 1024
    assert.strictEqual(Heap.percentFor(50, 90 * mb, 30 * mb), 200)
    assert.strictEqual(Heap.percentFor(50, 90 * mb, 45 * mb), 100)
    // Rounded up to tens: 90 / 40 is 2.25.
    assert.strictEqual(Heap.percentFor(50, 90 * mb, 40 * mb), 130)
    assert.strictEqual(Heap.percentFor(50, 90 * mb, 60 * mb), 50)
    assert.strictEqual(Heap.percentFor(50, 90 * mb, 200 * mb), 50)
    assert.strictEqual(Heap.percentFor(80, 90 * mb, 60 * mb), 80)
    assert.strictEqual(Heap.percentFor(50, 90 * mb, 10 * mb), 300)
    assert.strictEqual(Heap.percentFor(50, 90 * mb, 0), 300)
    assert.strictEqual(Heap.percentFor(50, 0, 10 * mb), 50)
  })

  it("the room applies while full collections come less than 2 s apart, and is given up once they do not", () => {
    const mb = 1024 * 1024
    let old = 30 * mb
    const set: Array<number> = []
    const collected = Heap.policy(50, 90, { oldBytes: () => old, set: (p) => set.push(p) })
    assert.deepStrictEqual(set, [50])
    collected(10_000) // the first: nothing to compare with
    assert.deepStrictEqual(set, [50])
    collected(11_000) // 1 s later: room, 90 / 30 MB
    assert.deepStrictEqual(set, [50, 200])
    old = 45 * mb
    collected(12_500) // busy still; the percent follows the old generation's size
    assert.deepStrictEqual(set, [50, 200, 100])
    collected(14_000) // unchanged: not set again
    assert.deepStrictEqual(set, [50, 200, 100])
    collected(14_000 + Heap.busyGapMs) // 2 s later: back to the percent
    assert.deepStrictEqual(set, [50, 200, 100, 50])
  })

  it.effect("with room, the end of a real full collection reaches the policy", () =>
    Effect.gen(function*() {
      const mb = 1024 * 1024
      const set: Array<number> = []
      let changed: () => void = () => {}
      const runtime: Heap.Runtime = {
        oldBytes: () => 30 * mb,
        set: (percent) => {
          set.push(percent)
          changed()
        }
      }
      assert.deepStrictEqual(yield* Heap.apply(50, 90, [], runtime), { _tag: "Set", percent: 50, roomMb: 90 })
      assert.deepStrictEqual(set, [50])
      // Two full collections of this process, back to back (V8's own, through the `gc` function it
      // exposes on request): the second comes less than 2 s after the first.
      v8.setFlagsFromString("--expose-gc")
      const gc = vm.runInNewContext("gc") as () => void
      yield* Effect.async<void>((resume) => {
        changed = () => resume(Effect.void)
        gc()
        gc()
      })
      assert.deepStrictEqual(set, [50, 200])
    }))

  it.effect("without room the percent is set once, and no collection changes it", () =>
    Effect.gen(function*() {
      const set: Array<number> = []
      assert.deepStrictEqual(yield* Heap.apply(70, 0, [], { oldBytes: () => 1, set: (p) => set.push(p) }), { _tag: "Set", percent: 70, roomMb: 0 })
      assert.deepStrictEqual(set, [70])
    }))
})

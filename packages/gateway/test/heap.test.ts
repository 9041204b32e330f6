/**
 * The heap policy's choice (platform/Heap.ts): node's own `--heap-growing-percent`, in any of the
 * spellings node accepts, wins over `GATEWAY_HEAP_GROWING_PERCENT`; 0 leaves V8's rule. (Setting the
 * flag is checked on a real `genway serve` in process.test.ts; the memory it saves is measured by
 * `pnpm bench`.)
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Heap from "../src/platform/Heap.js"

describe("heap policy", () => {
  it.effect("node's own flag wins, whatever its spelling; other node options do not count", () =>
    Effect.gen(function*() {
      for (const option of ["--heap-growing-percent=20", "--heap_growing_percent=20", "-heap-growing-percent=20", "--heap-growing_percent=0"]) {
        const applied = yield* Heap.apply(50, ["--enable-source-maps", option])
        assert.deepStrictEqual(applied, { _tag: "NodeOption", option })
        assert.include(Heap.describe(applied), `node's ${option}`)
      }
      assert.deepStrictEqual(yield* Heap.apply(0, ["--max-old-space-size=512", "--heap-growing-percentile=3"]), { _tag: "V8Default" })
    }))

  it("the start-up line says which rule runs", () => {
    assert.strictEqual(
      Heap.describe({ _tag: "Set", percent: 50 }),
      "heap: a full collection once the old generation grows 50 % past its live size (GATEWAY_HEAP_GROWING_PERCENT)"
    )
    assert.strictEqual(Heap.describe({ _tag: "V8Default" }), "heap: V8's own growing rule (GATEWAY_HEAP_GROWING_PERCENT=0)")
  })
})

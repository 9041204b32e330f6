/**
 * The heap policy of `genway serve`. By its own rule V8 lets the old generation grow to up to four
 * times what survived the last full collection before it collects again; a gateway's live heap is
 * small (about 50 MB with 10,000 tasks in flight) and its garbage steady (polls, requests), so the
 * process sat near four times its live memory between collections. `serve` sets V8's
 * `--heap-growing-percent` (default 50: the next full collection once the old generation has grown
 * by half), trading some collection time for memory: no measurable cost per E2 request, about
 * 1.17 × CPU per task create (bench/JOURNAL.md, "The heap policy"). A `--heap-growing-percent` given to node
 * itself wins; `GATEWAY_HEAP_GROWING_PERCENT=0` keeps V8's rule.
 */
import * as Effect from "effect/Effect"
import * as v8 from "node:v8"

/** What `apply` did: the percent set, or why none was. */
export type Applied =
  | { readonly _tag: "Set"; readonly percent: number }
  | { readonly _tag: "NodeOption"; readonly option: string }
  | { readonly _tag: "V8Default" }

const flag = "--heap-growing-percent"

/** `GATEWAY_HEAP_GROWING_PERCENT` when unset. */
export const defaultPercent = 50

/** Node's own spellings of the flag: one or two dashes, `-` or `_` between the words. */
const isGrowingFlag = (arg: string) => /^--?heap[-_]growing[-_]percent(=|$)/.test(arg)

/** Sets the policy for this process (`execArgv`: node's own options, where an explicit flag wins). */
export const apply = (percent: number, execArgv: ReadonlyArray<string> = process.execArgv): Effect.Effect<Applied> =>
  Effect.sync((): Applied => {
    const given = execArgv.find(isGrowingFlag)
    if (given !== undefined) return { _tag: "NodeOption", option: given }
    if (percent === 0) return { _tag: "V8Default" }
    v8.setFlagsFromString(`${flag}=${percent}`)
    return { _tag: "Set", percent }
  })

/** One line for the start-up log. */
export const describe = (applied: Applied): string => {
  switch (applied._tag) {
    case "Set":
      return `heap: a full collection once the old generation grows ${applied.percent} % past its live size (GATEWAY_HEAP_GROWING_PERCENT)`
    case "NodeOption":
      return `heap: node's ${applied.option} (GATEWAY_HEAP_GROWING_PERCENT not applied)`
    case "V8Default":
      return "heap: V8's own growing rule (GATEWAY_HEAP_GROWING_PERCENT=0)"
  }
}

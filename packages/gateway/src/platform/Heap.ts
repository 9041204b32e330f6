/**
 * The heap policy of `genway serve`. By its own rule V8 lets the old generation grow to up to four
 * times what survived the last full collection before it collects again; a gateway's live heap is
 * small (about 30 MB with 10,000 tasks in flight) and its garbage steady (polls, requests), so the
 * process sat near four times its live memory between collections.
 *
 * `serve` sets V8's `--heap-growing-percent` (`GATEWAY_HEAP_GROWING_PERCENT`, default 50: the next
 * full collection once the old generation has grown by half) — except while full collections come
 * less than 2 s apart, which is when they cost: then the old generation may first reach
 * `GATEWAY_HEAP_ROOM_MB` (default 64; at most 4 × its live size, V8's own ceiling). The percent is
 * set again at the end of each full collection. Measured (bench/JOURNAL.md, "The heap policy" and
 * "Room while the heap churns"): task creates at load, whose full collections came every quarter
 * of a second, take about 10 % less CPU each; the polls of 10,000 tasks in flight (full
 * collections 5 to 10 s apart once their start-up burst is over) stay under 200 MB RSS. More room
 * saves more CPU and costs memory: 90 MB took creates to 0.85 × and the polls past 200 MB.
 * A `--heap-growing-percent` given to node itself wins; `GATEWAY_HEAP_GROWING_PERCENT=0` keeps V8's
 * rule; `GATEWAY_HEAP_ROOM_MB=0` applies the percent alone.
 */
import * as Effect from "effect/Effect"
import { constants, PerformanceObserver } from "node:perf_hooks"
import * as v8 from "node:v8"

/** What `apply` did: the percent and room set, or why none was. */
export type Applied =
  | { readonly _tag: "Set"; readonly percent: number; readonly roomMb: number }
  | { readonly _tag: "NodeOption"; readonly option: string }
  | { readonly _tag: "V8Default" }

const flag = "--heap-growing-percent"

/** `GATEWAY_HEAP_GROWING_PERCENT` when unset. */
export const defaultPercent = 50

/** `GATEWAY_HEAP_ROOM_MB` when unset. */
export const defaultRoomMb = 64

/** The most growth the room asks for: V8's own rule never lets the old generation grow past 4 ×. */
const maxRoomPercent = 300

/** Node's own spellings of the flag: one or two dashes, `-` or `_` between the words. */
const isGrowingFlag = (arg: string) => /^--?heap[-_]growing[-_]percent(=|$)/.test(arg)

/**
 * The growth to set after a full collection that left `oldBytes` in the old generation: `percent`,
 * or more if that is what it takes to reach `roomBytes` (rounded up to tens, at most 300).
 */
export const percentFor = (percent: number, roomBytes: number, oldBytes: number): number => {
  if (roomBytes <= 0) return percent
  const toRoom = oldBytes <= 0 ? maxRoomPercent : Math.min(maxRoomPercent, Math.ceil((roomBytes / oldBytes - 1) * 10) * 10)
  return Math.max(percent, toRoom)
}

/** The old generation's size now, which V8's growing rule applies to: every space but the young ones. */
const oldGenerationBytes = () => {
  let bytes = 0
  for (const space of v8.getHeapSpaceStatistics()) {
    if (space.space_name !== "new_space" && space.space_name !== "new_large_object_space") bytes += space.space_used_size
  }
  return bytes
}

/** How the policy reads the heap and sets V8's flag (tests give their own). */
export interface Runtime {
  readonly set: (percent: number) => void
  readonly oldBytes: () => number
}

const v8Runtime: Runtime = {
  set: (percent) => v8.setFlagsFromString(`${flag}=${percent}`),
  oldBytes: oldGenerationBytes
}

/** Full collections closer together than this mean the heap churns: the room applies. */
export const busyGapMs = 2_000

/**
 * The policy: `percent` at once; at the end of each full collection (`atMs`, a monotonic time),
 * the room's percent if the previous one ended less than `busyGapMs` before, else `percent`
 * again. V8's flag is set only when the value changes.
 */
export const policy = (percent: number, roomMb: number, runtime: Runtime) => {
  const roomBytes = roomMb * 1024 * 1024
  let current = percent
  let last = -Infinity
  runtime.set(percent)
  return (atMs: number) => {
    const busy = atMs - last < busyGapMs
    last = atMs
    const next = busy ? percentFor(percent, roomBytes, runtime.oldBytes()) : percent
    if (next === current) return
    current = next
    runtime.set(next)
  }
}

/**
 * Sets the policy for this process (`execArgv`: node's own options, where an explicit flag wins).
 * With room, each full collection's end (a `gc` performance entry of the major kind) is handed to
 * the policy; the observer lasts as long as the process.
 */
export const apply = (
  percent: number,
  roomMb: number = defaultRoomMb,
  execArgv: ReadonlyArray<string> = process.execArgv,
  runtime: Runtime = v8Runtime
): Effect.Effect<Applied> =>
  Effect.sync((): Applied => {
    const given = execArgv.find(isGrowingFlag)
    if (given !== undefined) return { _tag: "NodeOption", option: given }
    if (percent === 0) return { _tag: "V8Default" }
    const collected = policy(percent, roomMb, runtime)
    if (roomMb > 0) {
      new PerformanceObserver((list) => {
        for (const entry of list.getEntries()) {
          const kind = (entry as { readonly detail?: { readonly kind?: number } | null }).detail?.kind
          if (kind === constants.NODE_PERFORMANCE_GC_MAJOR) collected(entry.startTime + entry.duration)
        }
      }).observe({ entryTypes: ["gc"] })
    }
    return { _tag: "Set", percent, roomMb }
  })

/** One line for the start-up log. */
export const describe = (applied: Applied): string => {
  switch (applied._tag) {
    case "Set":
      return applied.roomMb > 0
        ? `heap: a full collection once the old generation grows ${applied.percent} % past its live size; while full collections come less than ${busyGapMs / 1000} s apart, not before it reaches ${applied.roomMb} MB (GATEWAY_HEAP_GROWING_PERCENT, GATEWAY_HEAP_ROOM_MB)`
        : `heap: a full collection once the old generation grows ${applied.percent} % past its live size (GATEWAY_HEAP_GROWING_PERCENT)`
    case "NodeOption":
      return `heap: node's ${applied.option} (GATEWAY_HEAP_GROWING_PERCENT not applied)`
    case "V8Default":
      return "heap: V8's own growing rule (GATEWAY_HEAP_GROWING_PERCENT=0)"
  }
}

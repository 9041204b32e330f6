/**
 * Task request bodies at rest: inline payloads above a threshold (Base64 images) are spooled to
 * the media store and replaced by a reference, so task rows stay small and a claim never reads
 * megabytes. The worker restores them before it submits.
 */
import * as Effect from "effect/Effect"
import type { MediaError } from "../platform/MediaStore.js"

/** Values longer than this many characters are spooled. */
export const spoolThreshold = 64 * 1024

const marker = "$genway_spool"

const hasLongString = (value: unknown): boolean => {
  if (typeof value === "string") return value.length > spoolThreshold
  if (Array.isArray(value)) return value.some(hasLongString)
  if (value !== null && typeof value === "object") return Object.values(value).some(hasLongString)
  return false
}

/** Replaces long strings in `body` by spool references written through `spool`. */
export const toStored = <E, R>(
  body: unknown,
  spool: (index: number, value: string) => Effect.Effect<string, E, R>
): Effect.Effect<string, E, R> =>
  // Most bodies carry no inline media: serialise them directly.
  !hasLongString(body) ? Effect.sync(() => JSON.stringify(body)) : Effect.gen(function*() {
    let index = 0
    const walk = (value: unknown): Effect.Effect<unknown, E, R> => {
      if (typeof value === "string" && value.length > spoolThreshold) {
        const i = index++
        return Effect.map(spool(i, value), (ref) => ({ [marker]: ref }))
      }
      if (Array.isArray(value)) return Effect.forEach(value, walk)
      if (value !== null && typeof value === "object") {
        return Effect.map(
          Effect.forEach(Object.entries(value), ([k, v]) => Effect.map(walk(v), (w) => [k, w] as const)),
          (entries) => Object.fromEntries(entries)
        )
      }
      return Effect.succeed(value)
    }
    return JSON.stringify(yield* walk(body))
  })

/** Whether a stored body refers to spooled values (cheap: a substring test). */
export const hasSpool = (stored: string): boolean => stored.includes(`"${marker}"`)

/** Parses a stored body and reads spooled values back through `unspool`. */
export const fromStored = <R>(
  stored: string,
  unspool: (ref: string) => Effect.Effect<string, MediaError, R>
): Effect.Effect<Record<string, unknown>, MediaError, R> => {
  if (!hasSpool(stored)) return Effect.sync(() => JSON.parse(stored) as Record<string, unknown>)
  const walk = (value: unknown): Effect.Effect<unknown, MediaError, R> => {
    if (Array.isArray(value)) return Effect.forEach(value, walk)
    if (value !== null && typeof value === "object") {
      const ref = (value as Record<string, unknown>)[marker]
      if (typeof ref === "string" && Object.keys(value).length === 1) return unspool(ref)
      return Effect.map(
        Effect.forEach(Object.entries(value), ([k, v]) => Effect.map(walk(v), (w) => [k, w] as const)),
        (entries) => Object.fromEntries(entries)
      )
    }
    return Effect.succeed(value)
  }
  return Effect.map(walk(JSON.parse(stored)), (b) => b as Record<string, unknown>)
}

/**
 * Checks a request body against an entry: schema (bounds, enums, unknown fields), then the entry's
 * image rules (sniffed inline images, URL shapes), then its cross-field rules. Every problem is an
 * `Issue` naming the field; nothing here does I/O.
 */
import { Media, type ModelEntry, Validation } from "@genway/core"
import type { Errors } from "@genway/core"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"

/** A body that passed every check, with the facts learned about its inline images. */
export interface ValidBody<A> {
  readonly body: A
  readonly images: ReadonlyMap<string, Media.ImageFacts>
}

const decoders = new WeakMap<ModelEntry.ModelEntry, (u: unknown) => Either.Either<any, any>>()

const decoderFor = (entry: ModelEntry.ModelEntry) => {
  let decode = decoders.get(entry)
  if (decode === undefined) {
    decode = Schema.decodeUnknownEither(entry.request, { errors: "all", onExcessProperty: "error" })
    decoders.set(entry, decode)
  }
  return decode
}

/** Values at a rule path: `image`, `ref_images_url[]`, `dynamic_masks[].mask`; with their concrete paths. */
export const valuesAt = (body: unknown, field: string): ReadonlyArray<readonly [string, unknown]> => {
  let current: Array<readonly [string, unknown]> = [["", body]]
  for (const segment of field.split(".")) {
    const isArray = segment.endsWith("[]")
    const key = isArray ? segment.slice(0, -2) : segment
    const next: Array<readonly [string, unknown]> = []
    for (const [path, value] of current) {
      if (value === null || typeof value !== "object") continue
      const child = (value as Record<string, unknown>)[key]
      const childPath = path === "" ? key : `${path}.${key}`
      if (child === undefined || child === null) continue
      if (isArray) {
        if (Array.isArray(child)) child.forEach((item, i) => next.push([`${childPath}[${i}]`, item]))
      } else {
        next.push([childPath, child])
      }
    }
    current = next
  }
  return current
}

/**
 * Drops an issue when a deeper one names a field inside it: that shallow issue comes from a union
 * alternative that did not apply (`content` "expected string" when an element of the array
 * `content` is at fault). Struct and array refinements only run once their members decoded, so
 * they never produce such pairs themselves.
 */
const deepest = (issues: ReadonlyArray<Errors.Issue>): ReadonlyArray<Errors.Issue> => {
  // Every path that encloses some issue's path (`a`, `a.b` for `a.b[0]`): linear in the issues.
  const enclosing = new Set<string>()
  for (const { param } of issues) {
    for (let i = 1; i < param.length; i++) {
      if (param[i] === "." || param[i] === "[") enclosing.add(param.slice(0, i))
    }
  }
  return issues.filter((i) => !enclosing.has(i.param))
}

/** Validates a parsed JSON value against an entry. */
export const validate = <A>(
  entry: ModelEntry.ModelEntry<A>,
  input: unknown
): Either.Either<ValidBody<A>, ReadonlyArray<Errors.Issue>> => {
  if (input === null || typeof input !== "object" || Array.isArray(input)) {
    return Either.left([{ param: "body", message: "the request body must be a JSON object" }])
  }
  const decoded = decoderFor(entry)(input)
  if (Either.isLeft(decoded)) return Either.left(deepest(Validation.parseIssues(decoded.left)))
  const body = decoded.right as A
  const issues: Array<Errors.Issue> = []
  const images = new Map<string, Media.ImageFacts>()
  for (const rule of entry.images) {
    for (const [path, value] of valuesAt(body, rule.field)) {
      if (typeof value !== "string") continue
      const checked = Media.checkImage(value, rule, path)
      issues.push(...checked.issues)
      if (checked.facts !== undefined) images.set(path, checked.facts)
    }
  }
  if (issues.length > 0) return Either.left(issues)
  for (const rule of entry.rules) issues.push(...rule(body, { images }))
  return issues.length > 0 ? Either.left(issues) : Either.right({ body, images })
}

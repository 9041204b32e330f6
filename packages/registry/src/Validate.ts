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

/** Validates a parsed JSON value against an entry. */
export const validate = <A>(
  entry: ModelEntry.ModelEntry<A>,
  input: unknown
): Either.Either<ValidBody<A>, ReadonlyArray<Errors.Issue>> => {
  if (input === null || typeof input !== "object" || Array.isArray(input)) {
    return Either.left([{ param: "body", message: "the request body must be a JSON object" }])
  }
  const decoded = decoderFor(entry)(input)
  if (Either.isLeft(decoded)) return Either.left(Validation.parseIssues(decoded.left))
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

/**
 * Field builders for request schemas. Each bound carries a message that reads well after the field
 * name in a 400 (`prompt: must be at most 2000 characters`) and never echoes the value back.
 */
import * as Schema from "effect/Schema"

/** A string of at most `max` characters. */
export const text = (max: number) =>
  Schema.String.pipe(
    Schema.annotations({ message: () => "must be a string" }),
    Schema.maxLength(max, { message: () => `must be at most ${max} characters` })
  )

/** A non-empty string of at most `max` characters (required prompts). */
export const requiredText = (max: number) =>
  text(max).pipe(Schema.minLength(1, { message: () => "must not be empty" }))

/** One of the given string values. */
export const oneOf = <const L extends ReadonlyArray<string>>(...values: L) =>
  Schema.Literal(...values).annotations({
    message: () => `must be one of ${values.map((v) => JSON.stringify(v)).join(", ")}`
  })

/** One of the given integer values. */
export const intOneOf = <const L extends ReadonlyArray<number>>(...values: L) =>
  Schema.Literal(...values).annotations({ message: () => `must be one of ${values.join(", ")}` })

/** An integer within `[min, max]`. */
export const intBetween = (min: number, max: number) =>
  Schema.Number.pipe(
    Schema.annotations({ message: () => "must be a number" }),
    Schema.int({ message: () => "must be an integer" }),
    Schema.between(min, max, { message: () => `must be between ${min} and ${max}` })
  )

/** A number within `[min, max]`. */
export const numberBetween = (min: number, max: number) =>
  Schema.Number.pipe(
    Schema.annotations({ message: () => "must be a number" }),
    Schema.between(min, max, { message: () => `must be between ${min} and ${max}` })
  )

/** `seed`: 0 to 2147483647 (SPEC.md §8). */
export const seed = intBetween(0, 2147483647)

/** A boolean. */
export const bool = Schema.Boolean.annotations({ message: () => "must be true or false" })

/** An absolute http(s) URL (shape only; never fetched). */
export const url = Schema.String.pipe(
  Schema.annotations({ message: () => "must be a string" }),
  Schema.filter((s) => {
    try {
      const u = new URL(s)
      return (u.protocol === "http:" || u.protocol === "https:") && /^[\x21-\x7e]+$/.test(s)
    } catch {
      return false
    }
  }, { message: () => "must be an absolute http(s) URL" })
)

/**
 * An image given as URL or Base64 (checked further by the entry's image rules).
 * The schema only asserts it is a string.
 */
export const image = Schema.String.pipe(
  Schema.annotations({ message: () => "must be a string" }),
  Schema.minLength(1, { message: () => "must not be empty" })
)

/** An array of `item` with `min`..`max` elements. */
export const arrayOf = <A, I, R>(item: Schema.Schema<A, I, R>, min: number, max: number) =>
  Schema.Array(item).annotations({ message: () => "must be an array" }).pipe(
    Schema.minItems(min, { message: () => `must have at least ${min} element${min === 1 ? "" : "s"}` }),
    Schema.maxItems(max, { message: () => `must have at most ${max} elements` })
  )

/** An optional field that also accepts `null` (SPEC.md's "or null" types). */
export const optionalNullable = <S extends Schema.Schema.Any>(s: S) => Schema.optional(Schema.NullOr(s))

/** Marks the struct as rejecting unknown fields, so typos are caught with the field named. */
export const strict = { onExcessProperty: "error" } as const

/**
 * Field builders for request schemas. Each bound carries a message that reads well after the field
 * name in a 400 (`prompt: must be at most 2000 characters`) and never echoes the value back.
 * Every custom refinement also carries a `jsonSchema` annotation, so the OpenAPI document derived
 * from the entries shows the bound instead of dropping it.
 */
import type * as ParseResult from "effect/ParseResult"
import { Media } from "@genway/core"
import * as Schema from "effect/Schema"

// A union's own message is ignored unless it overrides its members' (they would each say
// "Expected …, actual <value>", echoing the value): enum-like unions override.
const overriding = (message: string) => ({ message, override: true })

const actualOf = (issue: ParseResult.ParseIssue): unknown => ("actual" in issue ? issue.actual : undefined)

/** Any string. */
export const string = Schema.String.annotations({ message: () => "must be a string" })

/** A non-empty string without a length bound (model names, ids). */
export const nonEmpty = string.pipe(Schema.minLength(1, { message: () => "must not be empty" }))

/** A string of at most `max` characters. */
export const text = (max: number) => string.pipe(Schema.maxLength(max, { message: () => `must be at most ${max} characters` }))

/** A non-empty string of at most `max` characters (required prompts). */
export const requiredText = (max: number) =>
  text(max).pipe(Schema.minLength(1, { message: () => "must not be empty" }))

/**
 * One of the given string values. A number that spells an allowed value (`8` for `"8"`) gets a
 * message saying to send it as a string, since clients often get that wrong.
 */
export const oneOf = <const L extends ReadonlyArray<string>>(...values: L) => {
  const list = values.map((v) => JSON.stringify(v)).join(", ")
  return Schema.Literal(...values).annotations({
    message: (issue) => {
      const actual = actualOf(issue)
      return overriding(
        typeof actual === "number" && values.includes(String(actual))
          ? `must be one of ${list}, sent as a string`
          : `must be one of ${list}`
      )
    }
  })
}

/** One of the given integer values. A string that spells an allowed value is told to send a number. */
export const intOneOf = <const L extends ReadonlyArray<number>>(...values: L) =>
  Schema.Literal(...values).annotations({
    message: (issue) => {
      const actual = actualOf(issue)
      return overriding(
        typeof actual === "string" && values.some((v) => String(v) === actual)
          ? `must be one of ${values.join(", ")}, sent as a number`
          : `must be one of ${values.join(", ")}`
      )
    }
  })

const number = Schema.Number.annotations({ message: () => "must be a number" })

/** Any integer. */
export const integer = number.pipe(Schema.int({ message: () => "must be an integer" }))

/** An integer within `[min, max]`. */
export const intBetween = (min: number, max: number) =>
  integer.pipe(Schema.between(min, max, { message: () => `must be between ${min} and ${max}` }))

/** An integer of at least `min`. */
export const intAtLeast = (min: number) =>
  integer.pipe(Schema.greaterThanOrEqualTo(min, { message: () => `must be at least ${min}` }))

/** A number within `[min, max]`. */
export const numberBetween = (min: number, max: number) =>
  number.pipe(Schema.between(min, max, { message: () => `must be between ${min} and ${max}` }))

/** `seed`: 0 to 2147483647 (SPEC.md §8). */
export const seed = intBetween(0, 2147483647)

/** A boolean. */
export const bool = Schema.Boolean.annotations({ message: () => "must be true or false" })

/** An absolute http(s) URL (shape only; never fetched), checked like every other URL input. */
export const url = Schema.String.pipe(
  Schema.annotations({ message: () => "must be a string" }),
  Schema.filter((s) => Media.checkUrl(s, "") === undefined, {
    message: () => "must be an absolute http(s) URL",
    jsonSchema: { format: "uri" }
  })
)

/**
 * An image given as URL or Base64 (checked further by the entry's image rules).
 * The schema only asserts it is a string.
 */
export const image = Schema.String.pipe(
  Schema.annotations({ message: () => "must be a string" }),
  Schema.minLength(1, { message: () => "must not be empty" })
)

/** An array of `item` with at least `min` (when above 0) and at most `max` (when given) elements. */
export const arrayOf = <A, I, R>(item: Schema.Schema<A, I, R>, min: number, max?: number) => {
  const array = Schema.Array(item).annotations({ message: () => "must be an array" })
  const atLeast = min > 0
    ? array.pipe(Schema.minItems(min, { message: () => `must have at least ${min} element${min === 1 ? "" : "s"}` }))
    : array
  return max === undefined
    ? atLeast
    : atLeast.pipe(Schema.maxItems(max, { message: () => `must have at most ${max} element${max === 1 ? "" : "s"}` }))
}

/** A JSON object whose members are passed through unchecked (vendor-defined sub-objects). */
export const openObject = Schema.Record({ key: Schema.String, value: Schema.Unknown }).annotations({
  message: () => "must be an object"
})

/**
 * A string-to-string map with at most `pairs` entries, keys of at most `keyMax` and values of at
 * most `valueMax` characters. Every problem is reported on the map itself: a key is client data
 * and must not become part of an error's `param`.
 */
export const stringMap = (pairs: number, keyMax: number, valueMax: number) =>
  Schema.Record({ key: Schema.String, value: Schema.Unknown }).annotations({ message: () => "must be an object" }).pipe(
    Schema.filter(
      (record): record is { readonly [x: string]: string } => {
        const entries = Object.entries(record)
        return entries.length <= pairs &&
          entries.every(([k, v]) => k.length <= keyMax && typeof v === "string" && v.length <= valueMax)
      },
      {
        message: (issue) => {
          const entries = Object.entries(actualOf(issue) as Record<string, unknown>)
          if (entries.length > pairs) return `must have at most ${pairs} key-value pairs`
          if (entries.some(([k]) => k.length > keyMax)) return `keys must be at most ${keyMax} characters`
          return `values must be strings of at most ${valueMax} characters`
        },
        jsonSchema: {
          maxProperties: pairs,
          propertyNames: { maxLength: keyMax },
          additionalProperties: { type: "string", maxLength: valueMax }
        }
      }
    )
  )

/** A union with one message for values that fit none of its members. */
export const eitherOf = <Members extends ReadonlyArray<Schema.Schema.All>>(message: string, ...members: Members) =>
  Schema.Union(...members).annotations({ message: () => overriding(message) })

/**
 * A string or an array (`content`, `input` of the OpenAI-style bodies). A value that is neither
 * gets `message`; for an array, the elements' own messages are kept, so an error in one element
 * is reported at that element's path.
 */
export const stringOrArray = <A, I, R>(message: string, array: Schema.Schema<ReadonlyArray<A>, ReadonlyArray<I>, R>) =>
  Schema.Union(string, array).annotations({
    message: (issue) => ({ message, override: !Array.isArray(actualOf(issue)) })
  })

/** An optional field that also accepts `null` (SPEC.md's "or null" types). */
export const optionalNullable = <S extends Schema.Schema.Any>(s: S) => Schema.optional(Schema.NullOr(s))

/** Marks the struct as rejecting unknown fields, so typos are caught with the field named. */
export const strict = { onExcessProperty: "error" } as const

/** What a field means, for the OpenAPI document: a description, and where useful its default. */
export type FieldDoc = string | { readonly description: string; readonly default?: unknown }

/**
 * Annotates a struct's fields (on their property signatures, so the field schemas and their
 * messages are untouched) with what each means, and the struct with an example body. The OpenAPI
 * document derived from the entries carries both: `/docs` and `/playground` read them from there.
 */
export const described = <Fields extends Schema.Struct.Fields>(
  struct: Schema.Struct<Fields>,
  docs: { readonly [K in keyof Fields]?: FieldDoc },
  example?: { readonly [K in keyof Fields]?: unknown }
): Schema.Struct<Fields> => {
  const fields: Record<string, Schema.Struct.Field> = {}
  for (const [name, field] of Object.entries(struct.fields as Schema.Struct.Fields)) {
    const doc = docs[name as keyof Fields]
    if (doc === undefined) {
      fields[name] = field
      continue
    }
    const annotations = typeof doc === "string" ? { description: doc } : doc
    fields[name] = Schema.isPropertySignature(field)
      ? field.annotations(annotations as never)
      : Schema.propertySignature(field as Schema.Schema.Any).annotations(annotations as never)
  }
  const out = Schema.Struct(fields)
  return (example === undefined ? out : out.annotations({ examples: [example as never] })) as unknown as Schema.Struct<Fields>
}

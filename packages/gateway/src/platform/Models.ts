/**
 * The entries in force: the registry's, with the deployment's overrides from
 * `GATEWAY_MODELS_FILE` (JSON or YAML: `{ "<entry id>": { "upstreamModel", "enabled", "poll",
 * "retention", "mirror" } }`; the README documents every field). A file that does not fit stops
 * startup with one line naming the entry, the field and what is expected.
 */
import { Registry } from "@genway/registry"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import * as fs from "node:fs"
import * as YAML from "yaml"
import { Settings } from "./Config.js"

const durationExpected = 'a duration such as "10 seconds", "500 millis" or "2 days"'

const DurationText = Schema.String.annotations({ message: () => `must be ${durationExpected}` }).pipe(
  Schema.filter((s) => Option.isSome(Duration.decodeUnknown(s)), { message: () => `must be ${durationExpected}` })
)

/**
 * A field's expectation, in place of the schema's own wording; `whole` also covers problems
 * inside it (a tuple's missing element), otherwise those keep their own, more precise, message.
 */
const expecting = <A, I>(schema: Schema.Schema<A, I>, expected: string, whole = true): Schema.Schema<A, I> =>
  schema.annotations({ message: () => ({ message: `must be ${expected}`, override: whole }) })

const PriceValue = Schema.Number.annotations({ message: () => "must be a price in USD, a number of at least 0" }).pipe(
  Schema.filter((n) => Number.isFinite(n) && n >= 0, { message: () => "must be a price in USD, a number of at least 0" })
)

const Override = expecting(
  Schema.Struct({
    upstreamModel: Schema.optional(expecting(Schema.NonEmptyString, "a non-empty string (the vendor's model id)")),
    enabled: Schema.optional(expecting(Schema.Boolean, "true or false")),
    poll: Schema.optional(expecting(
      Schema.Struct({
        initial: Schema.optional(DurationText),
        every: Schema.optional(expecting(
          Schema.Tuple(DurationText, DurationText),
          `a list of two durations [shortest, longest], e.g. ["10 seconds", "15 seconds"]`
        )),
        deadline: Schema.optional(DurationText)
      }),
      "an object with optional initial, every and deadline",
      false
    )),
    retention: Schema.optional(Schema.NullOr(DurationText).annotations({ message: () => `must be ${durationExpected}, or null to keep media` })),
    mirror: Schema.optional(expecting(Schema.Boolean, "true or false")),
    price: Schema.optional(expecting(
      Schema.Struct({
        per_second: Schema.optional(PriceValue),
        per_image: Schema.optional(PriceValue),
        per_1m_input_tokens: Schema.optional(PriceValue),
        per_1m_output_tokens: Schema.optional(PriceValue)
      }),
      "an object with per_second, per_image, or per_1m_input_tokens and per_1m_output_tokens (USD)",
      false
    ))
  }),
  "an object with optional upstreamModel, enabled, poll, retention, mirror, price",
  false
)

const OverridesFile = expecting(
  Schema.Record({ key: Schema.String, value: Override }),
  `an object keyed by entry id (as GET /v1/models lists them), e.g. {"${Registry.entries[0]?.id ?? "<vendor>/<model>"}": {"enabled": false}}`,
  false
)

const show = (value: unknown) => {
  const text = JSON.stringify(value) ?? String(value)
  return text.length > 80 ? `${text.slice(0, 77)}...` : text
}

/** The first problem of a decode, in one line: the entry, the field, the expectation, the value. */
const describeIssue = (file: string, error: ParseResult.ParseError, input: unknown): string => {
  const issue = ParseResult.ArrayFormatter.formatErrorSync(error)[0]
  if (issue === undefined) return `GATEWAY_MODELS_FILE ${file}: ${error.message}`
  const [entry, ...field] = issue.path.map(String)
  let actual: unknown = input
  for (const key of issue.path) actual = typeof actual === "object" && actual !== null ? (actual as any)[key] : undefined
  const message = issue._tag === "Unexpected"
    ? "is not a known field (allowed: upstreamModel, enabled, poll.initial, poll.every, poll.deadline, retention, mirror, price)"
    : issue._tag === "Missing"
    ? "is missing"
    : `${issue.message}${issue.message.startsWith("must") ? `; got ${show(actual)}` : ""}`
  if (entry === undefined) return `GATEWAY_MODELS_FILE ${file}: the file ${message}`
  if (field.length === 0) return `GATEWAY_MODELS_FILE ${file}: entry "${entry}" ${message}`
  return `GATEWAY_MODELS_FILE ${file}: entry "${entry}", field ${field.join(".")} ${message}`
}

/** A models file could not be used. */
export class ModelsFileError extends Schema.TaggedError<ModelsFileError>()("ModelsFileError", { message: Schema.String }) {}

/** Reads and checks a models file. */
export const readOverrides = (file: string) =>
  Effect.gen(function*() {
    const text = yield* Effect.try({
      try: () => fs.readFileSync(file, "utf8"),
      catch: (e) => new ModelsFileError({ message: `GATEWAY_MODELS_FILE: cannot read ${file}: ${(e as Error).message}` })
    })
    // JSON by default, YAML for .yaml/.yml (YAML also reads JSON, but JSON's messages are clearer).
    const yaml = /\.ya?ml$/i.test(file)
    const json = yield* Effect.try({
      try: () => (yaml ? YAML.parse(text) : JSON.parse(text)) as unknown,
      catch: (e) =>
        new ModelsFileError({
          message: `GATEWAY_MODELS_FILE ${file} is not valid ${yaml ? "YAML" : "JSON"}: ${(e as Error).message.split("\n")[0]}`
        })
    })
    return yield* Schema.decodeUnknown(OverridesFile, { onExcessProperty: "error", errors: "first" })(json).pipe(
      Effect.mapError((e) => new ModelsFileError({ message: describeIssue(file, e, json) }))
    )
  })

/** The registry of this process. */
export const layer = Layer.effect(
  Registry.Registry,
  Effect.gen(function*() {
    const settings = yield* Settings
    if (Option.isNone(settings.modelsFile)) return { entries: Registry.entries }
    const overrides = yield* readOverrides(settings.modelsFile.value)
    const applied = Registry.applyOverrides(Registry.entries, overrides as Record<string, Registry.EntryOverride>)
    if (applied.unknown.length > 0) {
      return yield* new ModelsFileError({
        message: `GATEWAY_MODELS_FILE ${settings.modelsFile.value} names unknown entries: ${applied.unknown.join(", ")} ` +
          `(entry ids are as GET /v1/models lists them, e.g. ${Registry.entries[0]?.id ?? "<vendor>/<model>"})`
      })
    }
    return { entries: applied.entries }
  })
)

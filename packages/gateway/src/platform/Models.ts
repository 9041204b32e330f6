/**
 * The entries in force: the registry's, with the deployment's overrides from
 * `GATEWAY_MODELS_FILE` (JSON: `{ "<entry id>": { "upstreamModel", "enabled", "poll", "retention", "mirror" } }`).
 */
import { Registry } from "@genway/registry"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as fs from "node:fs"
import { Settings } from "./Config.js"

const DurationText = Schema.String.pipe(
  Schema.filter((s) => Option.isSome(Duration.decodeUnknown(s)), { message: () => 'must be a duration such as "10 seconds"' })
)

const Override = Schema.Struct({
  upstreamModel: Schema.optional(Schema.String),
  enabled: Schema.optional(Schema.Boolean),
  poll: Schema.optional(Schema.Struct({
    initial: Schema.optional(DurationText),
    every: Schema.optional(Schema.Tuple(DurationText, DurationText)),
    deadline: Schema.optional(DurationText)
  })),
  retention: Schema.optional(Schema.NullOr(DurationText)),
  mirror: Schema.optional(Schema.Boolean)
})

const OverridesFile = Schema.Record({ key: Schema.String, value: Override })

/** A models file could not be used. */
export class ModelsFileError extends Schema.TaggedError<ModelsFileError>()("ModelsFileError", { message: Schema.String }) {}

/** Reads and checks a models file. */
export const readOverrides = (file: string) =>
  Effect.gen(function*() {
    const text = yield* Effect.try({
      try: () => fs.readFileSync(file, "utf8"),
      catch: (e) => new ModelsFileError({ message: `GATEWAY_MODELS_FILE: cannot read ${file}: ${(e as Error).message}` })
    })
    const json = yield* Effect.try({
      try: () => JSON.parse(text) as unknown,
      catch: (e) => new ModelsFileError({ message: `GATEWAY_MODELS_FILE: ${file} is not valid JSON: ${(e as Error).message}` })
    })
    return yield* Schema.decodeUnknown(OverridesFile, { onExcessProperty: "error" })(json).pipe(
      Effect.mapError((e) => new ModelsFileError({ message: `GATEWAY_MODELS_FILE: ${e.message}` }))
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
        message: `GATEWAY_MODELS_FILE names unknown entries: ${applied.unknown.join(", ")}`
      })
    }
    return { entries: applied.entries }
  })
)

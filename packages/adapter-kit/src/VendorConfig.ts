/**
 * A vendor's environment variables as one optional group (DESIGN.md §3): all unset means "no live
 * vendor" (the gateway sandboxes it), all set means live, anything in between is a `ConfigError`
 * naming the variable at fault. Empty values count as unset; secrets stay `Redacted` and never
 * appear in a message.
 */
import * as Config from "effect/Config"
import * as ConfigError from "effect/ConfigError"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"

/** The variable names of a group: the base URL's, and each secret's under the field it fills. */
export interface Variables<K extends string> {
  readonly baseUrl: string
  readonly secrets: { readonly [F in K]: string }
}

/** A complete group: the checked base URL, and each secret under its field. */
export type Values<K extends string> = { readonly baseUrl: string } & { readonly [F in K]: Redacted.Redacted<string> }

/** Checks a base URL: absolute http(s), no credentials, query or fragment; returned without trailing slashes. */
export const checkBaseUrl = (variable: string, value: string): Either.Either<string, ConfigError.ConfigError> => {
  let url: URL
  try {
    url = new URL(value.trim())
  } catch {
    return Either.left(ConfigError.InvalidData([variable], `${variable} must be an absolute http(s) URL`))
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    return Either.left(ConfigError.InvalidData([variable], `${variable} must be an http or https URL`))
  }
  if (url.username !== "" || url.password !== "") {
    return Either.left(ConfigError.InvalidData([variable], `${variable} must not carry credentials`))
  }
  if (url.search !== "" || url.hash !== "") {
    return Either.left(ConfigError.InvalidData([variable], `${variable} must not carry a query or fragment`))
  }
  return Either.right(url.href.replace(/\/+$/, ""))
}

/**
 * Reads the group: `None` when no variable is set; the values when all are and the URL is
 * well-formed; else a `ConfigError` naming the first missing (or the malformed) variable.
 */
export const allOrNone = <const K extends string>(variables: Variables<K>): Config.Config<Option.Option<Values<K>>> => {
  const fields = Object.keys(variables.secrets) as Array<K>
  const names = fields.map((field) => variables.secrets[field])
  return Config.all([
    Config.option(Config.string(variables.baseUrl)),
    Config.all(names.map((name) => Config.option(Config.redacted(name))))
  ]).pipe(
    Config.mapOrFail(([rawUrl, rawSecrets]) => {
      const url = Option.filter(rawUrl, (s) => s.trim() !== "")
      const secrets = rawSecrets.map((s) => Option.filter(s, (r) => Redacted.value(r).trim() !== ""))
      const all = [variables.baseUrl, ...names]
      const set = [Option.isSome(url), ...secrets.map(Option.isSome)]
      if (set.every((b) => !b)) return Either.right(Option.none())
      const missing = all.filter((_, i) => !set[i])
      if (missing.length > 0) {
        const first = missing[0]!
        const given = all.filter((_, i) => set[i]).join(", ")
        return Either.left(
          ConfigError.MissingData(
            [first],
            `${first} is not set although ${given} is: set all of ${all.join(", ")} to call the vendor, or none to sandbox it`
          )
        )
      }
      return Either.map(checkBaseUrl(variables.baseUrl, Option.getOrThrow(url)), (baseUrl) => {
        const values: Record<string, unknown> = { baseUrl }
        fields.forEach((field, i) => {
          values[field] = Option.getOrThrow(secrets[i]!)
        })
        return Option.some(values as Values<K>)
      })
    })
  )
}

/** Builds something live from `config` when the vendor's variables are set; `None` when it is to be sandboxed. */
export const whenSet = <C, A, E, R>(
  config: Config.Config<Option.Option<C>>,
  make: (config: C) => Effect.Effect<A, E, R>
): Effect.Effect<Option.Option<A>, E | ConfigError.ConfigError, R> =>
  Effect.flatMap(
    config,
    Option.match({
      onNone: () => Effect.succeed(Option.none()),
      onSome: (value) => Effect.map(make(value), Option.some)
    })
  )

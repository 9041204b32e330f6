/**
 * A vendor's environment variables as one optional group: all unset means "no live vendor"
 * (sandboxed), all set means live, anything in between is an error naming the variable at fault.
 */
import * as Config from "effect/Config"
import * as ConfigError from "effect/ConfigError"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"

/** The raw values of a complete group. */
export interface Group<S extends string> {
  readonly baseUrl: string
  readonly secrets: { readonly [K in S]: Redacted.Redacted }
}

const present = (value: Option.Option<string>): Option.Option<string> =>
  Option.filter(value, (s) => s.trim() !== "")

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

/** Reads `urlVariable` and `secretVariables` as one optional group. Empty values count as unset. */
export const optionalGroup = <const S extends string>(
  urlVariable: string,
  secretVariables: ReadonlyArray<S>
): Config.Config<Option.Option<Group<S>>> =>
  Config.all([
    Config.option(Config.string(urlVariable)),
    Config.all(secretVariables.map((name) => Config.option(Config.redacted(name))))
  ]).pipe(
    Config.mapOrFail(([rawUrl, rawSecrets]) => {
      const url = present(rawUrl)
      const secrets = rawSecrets.map((s) => Option.filter(s, (r) => Redacted.value(r).trim() !== ""))
      const all = [urlVariable, ...secretVariables]
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
      return Either.map(checkBaseUrl(urlVariable, Option.getOrThrow(url)), (baseUrl) => {
        const values: Record<string, Redacted.Redacted> = {}
        secretVariables.forEach((name, i) => {
          values[name] = Option.getOrThrow(secrets[i]!)
        })
        return Option.some({ baseUrl, secrets: values as Group<S>["secrets"] })
      })
    })
  )

/**
 * vendor-a's connection settings (DESIGN.md §3): `VENDOR_A_BASE_URL` and `VENDOR_A_API_KEY`.
 * Neither set means the gateway sandboxes vendor-a; one without the other, or a malformed URL, is
 * a `ConfigError` naming the variable. The key stays `Redacted` and never appears in a message.
 */
import * as Config from "effect/Config"
import * as ConfigError from "effect/ConfigError"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"

/** Name of the variable holding vendor-a's base URL (the `{base}` of UPSTREAMS.md). */
export const BASE_URL = "VENDOR_A_BASE_URL"
/** Name of the variable holding vendor-a's API key. */
export const API_KEY = "VENDOR_A_API_KEY"

/** How to reach vendor-a. */
export interface VendorAConfig {
  /** Absolute http(s) URL without a trailing slash, e.g. `https://api.example.com/v1`. */
  readonly baseUrl: string
  readonly apiKey: Redacted.Redacted<string>
}

// An empty variable (`VENDOR_A_API_KEY=` in a compose file) counts as unset.
const optionalString = (name: string) =>
  Config.string(name).pipe(Config.option, Config.map(Option.filter((s) => s.trim() !== "")))

const optionalSecret = (name: string) =>
  Config.redacted(name).pipe(Config.option, Config.map(Option.filter((r) => Redacted.value(r).trim() !== "")))

/** Checks a base URL: absolute http(s), no credentials, query or fragment; trailing slashes dropped. */
export const parseBaseUrl = (name: string, value: string): Either.Either<string, ConfigError.ConfigError> => {
  const invalid = (why: string) =>
    Either.left(ConfigError.InvalidData([name], `${name} must be an absolute http(s) URL ${why}`))
  let url: URL
  try {
    url = new URL(value.trim())
  } catch {
    return invalid("(it does not parse)")
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return invalid("(wrong scheme)")
  if (url.username !== "" || url.password !== "") return invalid("without credentials in it")
  if (url.search !== "" || url.hash !== "") return invalid("without a query or fragment")
  return Either.right(`${url.origin}${url.pathname}`.replace(/\/+$/, ""))
}

/** vendor-a's settings: `None` when neither variable is set (sandbox). */
export const config: Config.Config<Option.Option<VendorAConfig>> = Config.all({
  baseUrl: optionalString(BASE_URL),
  apiKey: optionalSecret(API_KEY)
}).pipe(
  Config.mapOrFail(({ apiKey, baseUrl }): Either.Either<Option.Option<VendorAConfig>, ConfigError.ConfigError> => {
    if (Option.isNone(baseUrl) && Option.isNone(apiKey)) return Either.right(Option.none())
    if (Option.isNone(baseUrl)) {
      return Either.left(ConfigError.MissingData([BASE_URL], `${BASE_URL} is required when ${API_KEY} is set`))
    }
    if (Option.isNone(apiKey)) {
      return Either.left(ConfigError.MissingData([API_KEY], `${API_KEY} is required when ${BASE_URL} is set`))
    }
    return Either.map(parseBaseUrl(BASE_URL, baseUrl.value), (url) => Option.some({ baseUrl: url, apiKey: apiKey.value }))
  })
)

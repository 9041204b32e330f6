/**
 * vendor-a's connection settings (DESIGN.md §3): `VENDOR_A_BASE_URL` and `VENDOR_A_API_KEY`.
 * Neither set means the gateway sandboxes vendor-a; one without the other, or a malformed URL, is
 * a `ConfigError` naming the variable. The key stays `Redacted` and never appears in a message.
 */
import { VendorConfig } from "@genway/adapter-kit"
import type * as Config from "effect/Config"
import type * as ConfigError from "effect/ConfigError"
import type * as Either from "effect/Either"
import type * as Option from "effect/Option"
import type * as Redacted from "effect/Redacted"

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

/** Checks a base URL: absolute http(s), no credentials, query or fragment; trailing slashes dropped. */
export const parseBaseUrl: (name: string, value: string) => Either.Either<string, ConfigError.ConfigError> =
  VendorConfig.checkBaseUrl

/** vendor-a's settings: `None` when neither variable is set (sandbox); empty values count as unset. */
export const config: Config.Config<Option.Option<VendorAConfig>> = VendorConfig.allOrNone({
  baseUrl: BASE_URL,
  secrets: { apiKey: API_KEY }
})

/**
 * vendor-c's deployment configuration from the environment (DESIGN.md §3): `VENDOR_C_BASE_URL`,
 * `VENDOR_C_ACCESS_KEY` and `VENDOR_C_SECRET_KEY` (the adapter signs its own short-lived tokens
 * with them). All unset: the vendor is sandboxed.
 */
import { VendorConfig } from "@genway/adapter-kit"
import type * as Config from "effect/Config"
import type * as Duration from "effect/Duration"
import type * as Option from "effect/Option"
import type * as Redacted from "effect/Redacted"

/** What the live vendor-c adapter needs. */
export interface VendorCConfig {
  /** `{base}` of the vendor's API (paths start with `/v1/videos`), without a trailing slash. */
  readonly baseUrl: string
  /** The token issuer (`iss`). */
  readonly accessKey: Redacted.Redacted
  /** The HS256 signing key. */
  readonly secretKey: Redacted.Redacted
  /** Limit on one request/answer exchange; default 30 seconds. */
  readonly timeout?: Duration.DurationInput
}

/** `None` when no variable is set; a `ConfigError` naming the variable when only some are, or the URL is malformed. */
export const config: Config.Config<Option.Option<VendorCConfig>> = VendorConfig.allOrNone({
  baseUrl: "VENDOR_C_BASE_URL",
  secrets: { accessKey: "VENDOR_C_ACCESS_KEY", secretKey: "VENDOR_C_SECRET_KEY" }
})

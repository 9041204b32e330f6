/**
 * vendor-b's deployment configuration from the environment (DESIGN.md §3): `VENDOR_B_BASE_URL`
 * (the regional `…/api/v1` base) and `VENDOR_B_API_KEY`. Both unset: the vendor is sandboxed.
 */
import { VendorConfig } from "@genway/adapter-kit"
import type * as Config from "effect/Config"
import type * as Duration from "effect/Duration"
import type * as Option from "effect/Option"
import type * as Redacted from "effect/Redacted"

/** What the live vendor-b adapter needs. */
export interface VendorBConfig {
  /** `{base}` of the vendor's API, without a trailing slash (keys are per region). */
  readonly baseUrl: string
  readonly apiKey: Redacted.Redacted
  /** Limit on one request/answer exchange; default 30 seconds. */
  readonly timeout?: Duration.DurationInput
}

/** `None` when no variable is set; a `ConfigError` naming the variable when only some are, or the URL is malformed. */
export const config: Config.Config<Option.Option<VendorBConfig>> = VendorConfig.allOrNone({
  baseUrl: "VENDOR_B_BASE_URL",
  secrets: { apiKey: "VENDOR_B_API_KEY" }
})

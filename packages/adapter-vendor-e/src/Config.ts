/**
 * vendor-e's deployment configuration from the environment (DESIGN.md §3): `VENDOR_E_BASE_URL`
 * (the upstream's base, the one its `/vendors/…` paths hang from — another Genway works) and
 * `VENDOR_E_API_KEY`. Both unset: the vendor is sandboxed.
 */
import { VendorConfig } from "@genway/adapter-kit"
import type * as Config from "effect/Config"
import type * as Duration from "effect/Duration"
import type * as Option from "effect/Option"
import type * as Redacted from "effect/Redacted"

/** What the live vendor-e adapter needs. */
export interface VendorEConfig {
  /** `{base}` of the upstream, without a trailing slash. */
  readonly baseUrl: string
  readonly apiKey: Redacted.Redacted
  /** Limit on one request/answer exchange; default 30 seconds. */
  readonly timeout?: Duration.DurationInput
}

/** `None` when no variable is set; a `ConfigError` naming the variable when only some are, or the URL is malformed. */
export const config: Config.Config<Option.Option<VendorEConfig>> = VendorConfig.allOrNone({
  baseUrl: "VENDOR_E_BASE_URL",
  secrets: { apiKey: "VENDOR_E_API_KEY" }
})

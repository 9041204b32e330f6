/**
 * vendor-a's model responses (E2), live: a `ResponsesUpstream` speaking the vendor's "responses"
 * protocol (create, SSE streaming passed through as it arrives, retrieve for background polling).
 * Unlike the task adapter it is synchronous: the gateway calls it while the client waits.
 */
import * as HttpClient from "@effect/platform/HttpClient"
import type { Responses as CoreResponses } from "@genway/core"
import type * as ConfigError from "effect/ConfigError"
import { Manifest } from "@genway/adapter-kit"
import * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import * as Config from "./Config.js"
import * as Protocol from "./internal/responses.js"

/** Time limits of the exchanges (`create`, `open` a stream, stream `idle`, `retrieve`). */
export type Timeouts = Protocol.Timeouts

/** Default time limits: 10 minutes for a create, 60 s to open a stream, 5 minutes of stream silence, 30 s for a retrieve. */
export const defaultTimeouts: Timeouts = Protocol.defaultTimeouts

/** Tuning that is not operator configuration. */
export interface ResponsesOptions {
  readonly timeouts?: Partial<Timeouts>
}

/** The live upstream on the gateway's HTTP client. */
export const make = (
  config: Config.VendorAConfig,
  options: ResponsesOptions = {}
): Effect.Effect<CoreResponses.ResponsesUpstream, never, HttpClient.HttpClient> =>
  Effect.map(HttpClient.HttpClient, (client) => Protocol.make(config, client, { ...Protocol.defaultTimeouts, ...options.timeouts }))

/** The live upstream when `VENDOR_A_*` is set, `None` when vendor-a is to be sandboxed. */
export const fromConfig = (
  options: ResponsesOptions = {}
): Effect.Effect<Option.Option<CoreResponses.ResponsesUpstream>, ConfigError.ConfigError, HttpClient.HttpClient> =>
  Manifest.responses(Config.config, (config) => make(config, options))

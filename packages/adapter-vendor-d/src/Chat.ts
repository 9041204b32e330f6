/**
 * The live vendor-d chat upstream (E1, protocol "generate-content"): a `Chat.ChatUpstream` that
 * the gateway's chat completions surface calls synchronously, streaming or not.
 */
import * as HttpClient from "@effect/platform/HttpClient"
import { Manifest } from "@genway/adapter-kit"
import type { Chat } from "@genway/core"
import type * as ConfigError from "effect/ConfigError"
import * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import * as Config from "./Config.js"
import * as GenerateContent from "./internal/generateContent.js"
import * as Http from "./internal/http.js"

/** The protocol name chat entries of this upstream carry in `upstream.protocol`. */
export const protocol = "generate-content"

/** Time limits of a generation: the whole answer, a stream's start (its silences are the caller's to bound). */
export type Timeouts = GenerateContent.Timeouts

/** Retries before the first byte: count, first backoff, longest vendor-requested wait honoured. */
export type RetryPolicy = GenerateContent.RetryPolicy

/** Tuning that is not operator configuration. */
export interface ChatOptions {
  readonly timeouts?: Partial<Timeouts>
  readonly retry?: Partial<RetryPolicy>
}

/** Defaults: 180 s per answer, 60 s to start a stream; 3 retries from 500 ms, vendor-requested waits up to 10 s. */
export const defaultOptions = GenerateContent.defaultOptions

/** Builds the vendor-d chat upstream on the gateway's HTTP client. */
export const make = (
  config: Config.VendorDConfig,
  options: ChatOptions = {}
): Effect.Effect<Chat.ChatUpstream, never, HttpClient.HttpClient> =>
  Effect.map(HttpClient.HttpClient, (client) => {
    const upstream = Http.make(config, client, Http.defaultTimeouts)
    const protocol = GenerateContent.make(upstream, {
      timeouts: { ...defaultOptions.timeouts, ...options.timeouts },
      retry: { ...defaultOptions.retry, ...options.retry }
    })
    return { mode: "live", ...protocol }
  })

/** The chat upstream when `VENDOR_D_*` is set, `None` when vendor-d is to be sandboxed. */
export const fromConfig = (
  options: ChatOptions = {}
): Effect.Effect<Option.Option<Chat.ChatUpstream>, ConfigError.ConfigError, HttpClient.HttpClient> =>
  Manifest.chat(Config.config, (config) => make(config, options))

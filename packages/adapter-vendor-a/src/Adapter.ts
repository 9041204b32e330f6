/**
 * The live vendor-a task adapter. Each task goes to the protocol its entry names
 * (`entry.upstream.protocol`); today that is "videos" (E7). The synchronous "responses" protocol
 * (E2) is not a task protocol: it lives in `Responses.ts`.
 */
import * as HttpClient from "@effect/platform/HttpClient"
import { Manifest, Protocols } from "@genway/adapter-kit"
import type { VendorAdapter } from "@genway/core"
import type * as ConfigError from "effect/ConfigError"
import * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import * as Config from "./Config.js"
import * as Http from "./internal/http.js"
import * as Videos from "./internal/videos.js"

/** Time limit of each exchange kind (`submit`, `poll`, `download`: until the answer's headers). */
export type Timeouts = Http.Timeouts

/** Tuning that is not operator configuration. */
export interface AdapterOptions {
  readonly timeouts?: Partial<Timeouts>
}

/** Default time limits: 60 s for a create, 30 s for a poll, 60 s until a download starts. */
export const defaultTimeouts: Timeouts = Http.defaultTimeouts

/** Builds the vendor-a adapter on the gateway's HTTP client. */
export const make = (
  config: Config.VendorAConfig,
  options: AdapterOptions = {}
): Effect.Effect<VendorAdapter.VendorAdapter, never, HttpClient.HttpClient> =>
  Effect.gen(function*() {
    const client = yield* HttpClient.HttpClient
    const upstream = Http.make(config, client, { ...Http.defaultTimeouts, ...options.timeouts })
    const routed = Protocols.route("vendor-a", { videos: Videos.make(upstream) }, { rejected: Http.rejected })

    const adapter: VendorAdapter.VendorAdapter = {
      vendor: "vendor-a",
      mode: "live",
      submit: routed.submit,
      poll: routed.poll,
      download: (source) => upstream.download(source).pipe(Effect.annotateLogs({ vendor: "vendor-a" }))
    }
    return adapter
  })

/** The adapter when `VENDOR_A_*` is set, `None` when vendor-a is to be sandboxed. */
export const fromConfig = (
  options: AdapterOptions = {}
): Effect.Effect<Option.Option<VendorAdapter.VendorAdapter>, ConfigError.ConfigError, HttpClient.HttpClient> =>
  Manifest.tasks(Config.config, (config) => make(config, options))

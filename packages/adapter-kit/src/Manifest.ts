/**
 * Building a vendor's manifest (`VendorManifest` of core): each live surface from the vendor's
 * `VENDOR_*` group, with every error text it produces scrubbed of the group's secrets and base URL
 * (`Scrub`). Each adapter package's `index.ts` exports one `manifest`.
 */
import type * as HttpClient from "@effect/platform/HttpClient"
import type { Chat, Responses, VendorAdapter, VendorManifest as Core } from "@genway/core"
import type * as Config from "effect/Config"
import type * as ConfigError from "effect/ConfigError"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Scrub from "./Scrub.js"

/** A live surface when the vendor's variables are set, built on the gateway's HTTP client. */
export type Live<A> = Core.Live<A, HttpClient.HttpClient>

/** One vendor as the gateway sees it (`VendorManifest` of core, built on an HTTP client). */
export type VendorManifest = Core.VendorManifest<HttpClient.HttpClient>

/**
 * A live surface from a vendor's config group: `make` when the group is set, with every error
 * text the result produces scrubbed of the group's secrets and base URL by `scrubbed`.
 */
export const live = <C extends { readonly baseUrl: string }, A, E>(
  config: Config.Config<Option.Option<C>>,
  make: (config: C) => Effect.Effect<A, E, HttpClient.HttpClient>,
  scrubbed: (surface: A, scrub: (text: string) => string) => A
): Effect.Effect<Option.Option<A>, ConfigError.ConfigError | E, HttpClient.HttpClient> =>
  Effect.flatMap(
    config,
    Option.match({
      onNone: () => Effect.succeed(Option.none()),
      onSome: (value) => Effect.map(make(value), (surface) => Option.some(scrubbed(surface, Scrub.text(Scrub.hiddenOf(value)))))
    })
  )

/** A live task adapter from a config group, scrubbed. */
export const tasks = <C extends { readonly baseUrl: string }>(
  config: Config.Config<Option.Option<C>>,
  make: (config: C) => Effect.Effect<VendorAdapter.VendorAdapter, never, HttpClient.HttpClient>
): Live<VendorAdapter.VendorAdapter> => live(config, make, Scrub.taskAdapter)

/** A live chat upstream from a config group, scrubbed. */
export const chat = <C extends { readonly baseUrl: string }>(
  config: Config.Config<Option.Option<C>>,
  make: (config: C) => Effect.Effect<Chat.ChatUpstream, never, HttpClient.HttpClient>
): Live<Chat.ChatUpstream> => live(config, make, Scrub.chatUpstream)

/** A live responses upstream from a config group, scrubbed. */
export const responses = <C extends { readonly baseUrl: string }>(
  config: Config.Config<Option.Option<C>>,
  make: (config: C) => Effect.Effect<Responses.ResponsesUpstream, never, HttpClient.HttpClient>
): Live<Responses.ResponsesUpstream> => live(config, make, Scrub.responsesUpstream)

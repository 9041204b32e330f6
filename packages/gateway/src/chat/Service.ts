/**
 * The upstreams of chat completions (E1). Each chat entry names a vendor and a protocol; when that
 * vendor's variables are set the live protocol serves it, otherwise the vendor's sandbox does (from
 * its manifest in the vendor list).
 */
import type * as HttpClient from "@effect/platform/HttpClient"
import { Chat, type ModelEntry, type VendorManifest } from "@genway/core"
import type * as ConfigError from "effect/ConfigError"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as List from "../vendors/List.js"

/** The chat upstreams of this process. */
export interface ChatUpstreams {
  /** The upstream serving an entry: live when configured, else the sandbox. */
  readonly upstreamFor: (entry: ModelEntry.ModelEntry) => Chat.ChatUpstream
}

/** The chat completions (E1) upstreams. */
export class ChatService extends Context.Tag("@genway/gateway/ChatService")<ChatService, ChatUpstreams>() {}

/** Key of a live chat upstream: `<vendor>/<protocol>`. */
export const keyOf = (vendor: string, protocol: string) => `${vendor}/${protocol}`

/** An upstream for entries whose vendor serves no chat surface: every call is a 503. */
const unserved: Chat.ChatUpstream = {
  mode: "sandbox",
  complete: () => Effect.fail(new Chat.ChatUpstreamError({ status: 503, message: "no upstream serves this model" })),
  stream: () => Effect.fail(new Chat.ChatUpstreamError({ status: 503, message: "no upstream serves this model" }))
}

/** The sandboxes of the vendors given, by `keyOf(vendor, protocol)`. */
export const sandboxesOf = (manifests: ReadonlyArray<VendorManifest.VendorManifest<HttpClient.HttpClient>>): ReadonlyMap<string, Chat.ChatUpstream> =>
  new Map(manifests.flatMap((m) => (m.chat === undefined ? [] : [[keyOf(m.id, m.chat.protocol), m.chat.sandbox] as const])))

/** The sandbox of the first vendor serving chat (tests, embedding). */
export const sandbox: Chat.ChatUpstream = [...sandboxesOf(List.manifests).values()][0] ?? unserved

/** Upstreams from the live ones given (by `keyOf(vendor, protocol)`); every other entry is sandboxed. */
export const make = (
  live: ReadonlyMap<string, Chat.ChatUpstream>,
  sandboxes: ReadonlyMap<string, Chat.ChatUpstream> = sandboxesOf(List.manifests)
): ChatUpstreams => ({
  upstreamFor: (entry) => {
    const key = keyOf(entry.vendor, entry.upstream.protocol)
    return live.get(key) ?? sandboxes.get(key) ?? unserved
  }
})

/** The live chat upstreams of the vendors given whose variables are set. */
export const fromManifests = (
  manifests: ReadonlyArray<VendorManifest.VendorManifest<HttpClient.HttpClient>>
): Effect.Effect<ReadonlyMap<string, Chat.ChatUpstream>, ConfigError.ConfigError, HttpClient.HttpClient> =>
  Effect.map(
    Effect.forEach(manifests.flatMap((m) => (m.chat === undefined ? [] : [{ id: m.id, chat: m.chat }])), ({ chat, id }) =>
      Effect.map(chat.live, Option.map((upstream) => [keyOf(id, chat.protocol), upstream] as const))),
    (found) => new Map(found.flatMap(Option.toArray))
  )

/** The live chat upstreams whose vendor variables are set. */
export const fromEnvironment: Effect.Effect<
  ReadonlyMap<string, Chat.ChatUpstream>,
  ConfigError.ConfigError,
  HttpClient.HttpClient
> = fromManifests(List.manifests)

/** The service from the environment (each chat vendor's `VENDOR_*`), on the gateway's upstream HTTP client. */
export const layer: Layer.Layer<ChatService, ConfigError.ConfigError, HttpClient.HttpClient> = Layer.effect(
  ChatService,
  Effect.map(fromEnvironment, make)
)

/** The service with the live upstreams given (tests, embedding). */
export const layerWith = (live: ReadonlyMap<string, Chat.ChatUpstream>): Layer.Layer<ChatService> =>
  Layer.succeed(ChatService, make(live))

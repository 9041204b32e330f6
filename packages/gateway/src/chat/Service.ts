/**
 * The upstreams of chat completions (E1). Each chat entry names a vendor and a protocol; when that
 * vendor's variables are set the live protocol serves it, otherwise the sandbox does: a generated
 * PNG with token counts, streaming included, and no network.
 */
import type * as HttpClient from "@effect/platform/HttpClient"
import * as VendorD from "@genway/adapter-vendor-d"
import { Chat, type ModelEntry, SampleMedia } from "@genway/core"
import type * as ConfigError from "effect/ConfigError"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"

/** The chat upstreams of this process. */
export interface ChatUpstreams {
  /** The upstream serving an entry: live when configured, else the sandbox. */
  readonly upstreamFor: (entry: ModelEntry.ModelEntry) => Chat.ChatUpstream
}

/** The chat completions (E1) upstreams. */
export class ChatService extends Context.Tag("@genway/gateway/ChatService")<ChatService, ChatUpstreams>() {}

/** Key of a live chat upstream: `<vendor>/<protocol>`. */
export const keyOf = (vendor: string, protocol: string) => `${vendor}/${protocol}`

/** Side of the sandbox's square PNG. */
const SANDBOX_SIDE = 256
/** Token counts in the vendor's manner: ~4 characters per text token, fixed counts per image. */
const PROMPT_IMAGE_TOKENS = 258
const OUTPUT_IMAGE_TOKENS = 1290

const seedOf = (text: string) => {
  let h = 0
  for (let i = 0; i < text.length; i++) h = (Math.imul(h, 31) + text.charCodeAt(i)) | 0
  return h >>> 0
}

/** The sandbox's answer: a PNG tinted by the prompt, so different prompts get different pictures. */
const sandboxResult = (request: Chat.ChatRequest): Chat.ChatResult => {
  let text = ""
  let images = 0
  for (const message of request.messages) {
    for (const part of message.parts) {
      if (part._tag === "Text") text += part.text
      else images += 1
    }
  }
  const promptText = Math.ceil(text.length / 4)
  const promptTokens = promptText + images * PROMPT_IMAGE_TOKENS
  const png = SampleMedia.png(SANDBOX_SIDE, SANDBOX_SIDE, seedOf(text))
  return {
    parts: [{ _tag: "Image", mimeType: "image/png", base64: Buffer.from(png).toString("base64") }],
    finishReason: "STOP",
    usage: {
      promptTokens,
      completionTokens: OUTPUT_IMAGE_TOKENS,
      totalTokens: promptTokens + OUTPUT_IMAGE_TOKENS,
      cacheReadTokens: null,
      cacheCreationTokens: null,
      prompt: { text: promptText, image: images * PROMPT_IMAGE_TOKENS, audio: 0 },
      completion: { text: 0, image: OUTPUT_IMAGE_TOKENS, audio: 0, reasoning: 0 }
    }
  }
}

/** The sandbox upstream: answers at once, in one piece or as one content delta. */
export const sandbox: Chat.ChatUpstream = {
  mode: "sandbox",
  complete: (request) => Effect.sync(() => sandboxResult(request)),
  stream: (request) =>
    Effect.sync(() => {
      const result = sandboxResult(request)
      return Stream.make<[Chat.ChatDelta]>({ parts: result.parts, finishReason: result.finishReason, usage: result.usage })
    })
}

/** Upstreams from the live ones given (by `keyOf(vendor, protocol)`); every other entry is sandboxed. */
export const make = (live: ReadonlyMap<string, Chat.ChatUpstream>): ChatUpstreams => ({
  upstreamFor: (entry) => live.get(keyOf(entry.vendor, entry.upstream.protocol)) ?? sandbox
})

/** The live chat upstreams whose vendor variables are set. */
export const fromEnvironment: Effect.Effect<
  ReadonlyMap<string, Chat.ChatUpstream>,
  ConfigError.ConfigError,
  HttpClient.HttpClient
> = Effect.map(
  VendorD.Chat.fromConfig(),
  (vendorD) => new Map(Option.isSome(vendorD) ? [[keyOf("vendor-d", "generate-content"), vendorD.value]] : [])
)

/** The service from the environment (vendor-d's `VENDOR_D_*`), on the gateway's upstream HTTP client. */
export const layer: Layer.Layer<ChatService, ConfigError.ConfigError, HttpClient.HttpClient> = Layer.effect(
  ChatService,
  Effect.map(fromEnvironment, make)
)

/** The service with the live upstreams given (tests, embedding). */
export const layerWith = (live: ReadonlyMap<string, Chat.ChatUpstream>): Layer.Layer<ChatService> =>
  Layer.succeed(ChatService, make(live))

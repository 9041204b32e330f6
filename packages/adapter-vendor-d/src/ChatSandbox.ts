/**
 * vendor-d's chat upstream (E1) without credentials: a generated PNG tinted by the prompt, token
 * counts in the vendor's manner (~4 characters per text token, fixed counts per image), streaming
 * included, and no network. It is the `chat.sandbox` of vendor-d's manifest.
 */
import { type Chat, SampleMedia } from "@genway/core"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"

/** Side of the sandbox's square PNG. */
const SANDBOX_SIDE = 256
/** Tokens the vendor counts per input image. */
export const PROMPT_IMAGE_TOKENS = 258
/** Tokens the vendor counts per generated image. */
export const OUTPUT_IMAGE_TOKENS = 1290

const seedOf = (text: string) => {
  let h = 0
  for (let i = 0; i < text.length; i++) h = (Math.imul(h, 31) + text.charCodeAt(i)) | 0
  return h >>> 0
}

/** The sandbox's answer: a PNG tinted by the prompt, so different prompts get different pictures. */
export const result = (request: Chat.ChatRequest): Chat.ChatResult => {
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
  complete: (request) => Effect.sync(() => result(request)),
  stream: (request) =>
    Effect.sync(() => {
      const answer = result(request)
      return Stream.make<[Chat.ChatDelta]>({ parts: answer.parts, finishReason: answer.finishReason, usage: answer.usage })
    })
}

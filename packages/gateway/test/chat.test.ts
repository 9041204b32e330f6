/**
 * E1 `POST /v1/chat/completions` through the official OpenAI client and raw `fetch`, on a real
 * port: sandboxed (a generated PNG) and live against vendor-d's emulator (translation, streaming,
 * retries before the first byte, refusals, a stream cut by the vendor, a client that goes away).
 */
import { Media, SampleMedia } from "@genway/core"
import { assert, describe, layer } from "@effect/vitest"
import * as Effect from "effect/Effect"
import OpenAI from "openai"
import * as Chat from "./chatHarness.js"

const model = "image-model-2.5-flash-image-preview"
const upstreamPath = `/v1beta/models/${model}`

/** The content parts of a message or delta: an array on this surface (SPEC.md §2.4). */
type Part = { type: "image_url"; image_url: { url: string } } | { type: "text"; text: string }
const partsOf = (content: unknown) => content as ReadonlyArray<Part>
const imagesOf = (content: unknown) => partsOf(content).flatMap((p) => (p.type === "image_url" ? [p.image_url.url] : []))

/** A Base64 value that is a PNG, with no data-URL prefix. */
const assertPng = (base64: string) => {
  assert.notMatch(base64, /^data:/)
  const bytes = Buffer.from(base64, "base64")
  assert.deepStrictEqual([...bytes.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])
  const facts = Media.sniffBase64Image(base64)
  assert.strictEqual(facts?.format, "png")
  return facts!
}

const pngDataUrl = `data:image/png;base64,${Buffer.from(SampleMedia.png(32, 32, 7)).toString("base64")}`

/** Every chunk of a streamed completion through the OpenAI client. */
const collect = (stream: AsyncIterable<OpenAI.Chat.Completions.ChatCompletionChunk>) =>
  Effect.promise(async () => {
    const chunks: Array<any> = []
    for await (const chunk of stream) chunks.push(chunk)
    return chunks
  })

/** The error an OpenAI client call fails with. */
const failure = <A>(call: () => Promise<A>) =>
  Effect.flip(Effect.tryPromise({ try: call, catch: (e) => e })) as Effect.Effect<any>

/** The raw SSE text of a streamed completion. */
const rawStream = (body: unknown) =>
  Effect.gen(function*() {
    const response = yield* Chat.postChat(body)
    return { response, text: yield* Effect.promise(() => response.text()) }
  })

const dataEvents = (text: string) =>
  text.split("\n\n").filter((f) => f.startsWith("data: ")).map((f) => f.slice("data: ".length))

describe("E1 chat completions, sandboxed", () => {
  layer(Chat.sandboxLayer())((it) => {
    it.effect("non-stream: one image_url part holding a Base64 PNG, SPEC usage, the sandbox header", () =>
      Effect.gen(function*() {
        const client = yield* Chat.openai()
        const { data, response } = yield* Effect.promise(() =>
          client.chat.completions.create({ model, messages: Chat.ask("a red fox in the snow") }).withResponse()
        )
        assert.strictEqual(response.status, 200)
        assert.strictEqual(response.headers.get("x-genway-sandbox"), "true")
        assert.match(data.id, /^chatcmpl-/)
        assert.strictEqual(data.object, "chat.completion")
        assert.strictEqual(data.model, model)
        assert.isNumber(data.created)
        assert.strictEqual(data.choices.length, 1)
        const choice = data.choices[0]!
        assert.strictEqual(choice.index, 0)
        assert.strictEqual(choice.finish_reason as string, "STOP")
        assert.strictEqual(choice.message.role, "assistant")
        const parts = partsOf(choice.message.content)
        assert.strictEqual(parts.length, 1)
        assert.strictEqual(parts[0]!.type, "image_url")
        assert.strictEqual(assertPng(imagesOf(choice.message.content)[0]!).width, 256)
        assert.deepStrictEqual(Object.keys(data.usage!).sort(), [
          "audioTokens",
          "cache_creation_input_tokens",
          "cache_read_input_tokens",
          "completion_tokens",
          "prompt_tokens",
          "total_tokens"
        ])
        const usage = data.usage as any
        assert.strictEqual(usage.total_tokens, usage.prompt_tokens + usage.completion_tokens)
        assert.strictEqual(usage.audioTokens, 0)
        assert.isNull(usage.cache_creation_input_tokens)
        assert.isNull(usage.cache_read_input_tokens)
      }))

    it.effect("non-stream with an input image as a data URL (an edit)", () =>
      Effect.gen(function*() {
        const client = yield* Chat.openai()
        const data = yield* Effect.promise(() =>
          client.chat.completions.create({
            model,
            messages: [{
              role: "user",
              content: [{ type: "text", text: "make it blue" }, { type: "image_url", image_url: { url: pngDataUrl } }]
            }]
          })
        )
        assertPng(imagesOf(data.choices[0]!.message.content)[0]!)
        assert.isAbove(data.usage!.prompt_tokens, 258)
      }))

    it.effect("stream: a content chunk with the image and finish_reason, the usage chunk, then [DONE]", () =>
      Effect.gen(function*() {
        const client = yield* Chat.openai()
        const chunks = yield* Effect.flatMap(
          Effect.promise(() => client.chat.completions.create({ model, stream: true, messages: Chat.ask("a lighthouse") })),
          collect
        )
        assert.strictEqual(chunks.length, 2)
        const [content, usage] = chunks
        assert.strictEqual(content.object, "chat.completion.chunk")
        assert.strictEqual(content.choices[0].index, 0)
        assert.strictEqual(content.choices[0].delta.role, "assistant")
        assert.strictEqual(content.choices[0].finish_reason, "STOP")
        assertPng(imagesOf(content.choices[0].delta.content)[0]!)
        assert.deepStrictEqual(Object.keys(content.usage).sort(), ["completion_tokens", "prompt_tokens", "total_tokens"])

        assert.strictEqual(usage.id, content.id)
        assert.strictEqual(usage.object, "chat.completion.chunk")
        assert.isNumber(usage.created)
        assert.strictEqual(usage.model, model)
        assert.isString(usage.system_fingerprint)
        assert.deepStrictEqual(usage.choices, [])
        assert.deepStrictEqual(Object.keys(usage.usage).sort(), [
          "completion_tokens",
          "completion_tokens_details",
          "input_tokens",
          "input_tokens_details",
          "output_tokens",
          "prompt_tokens",
          "prompt_tokens_details",
          "total_tokens"
        ])
        assert.deepStrictEqual(Object.keys(usage.usage.prompt_tokens_details).sort(), ["audio_tokens", "cached_tokens", "image_tokens", "text_tokens"])
        assert.deepStrictEqual(Object.keys(usage.usage.completion_tokens_details).sort(), ["audio_tokens", "reasoning_tokens", "text_tokens"])
        assert.isNull(usage.usage.input_tokens_details)
        assert.strictEqual(usage.usage.input_tokens, usage.usage.prompt_tokens)
        assert.strictEqual(usage.usage.output_tokens, usage.usage.completion_tokens)
        assert.strictEqual(usage.usage.completion_tokens_details.text_tokens, 0)
      }))

    it.effect("stream, raw: text/event-stream, data frames, and literally `data: [DONE]` at the end", () =>
      Effect.gen(function*() {
        const { response, text } = yield* rawStream({ model, stream: true, messages: Chat.ask("a lighthouse") })
        assert.strictEqual(response.status, 200)
        assert.match(response.headers.get("content-type")!, /^text\/event-stream/)
        assert.strictEqual(response.headers.get("x-genway-sandbox"), "true")
        assert.isTrue(text.endsWith("data: [DONE]\n\n"))
        const events = dataEvents(text)
        assert.strictEqual(events.length, 3)
        assert.strictEqual(JSON.parse(events[0]!).choices[0].finish_reason, "STOP")
        assert.deepStrictEqual(JSON.parse(events[1]!).choices, [])
        assert.strictEqual(events[2], "[DONE]")
      }))

    it.effect("400 BadRequestError naming the image part given as an address", () =>
      Effect.gen(function*() {
        const client = yield* Chat.openai()
        const error = yield* failure(() =>
          client.chat.completions.create({
            model,
            messages: [{
              role: "user",
              content: [{ type: "text", text: "edit" }, { type: "image_url", image_url: { url: "https://example.com/cat.png" } }]
            }]
          })
        )
        assert.instanceOf(error, OpenAI.BadRequestError)
        assert.strictEqual(error.status, 400)
        assert.strictEqual(error.param, "messages[0].content[1].image_url.url")
        assert.strictEqual(error.type, "invalid_request_error")
        assert.include(error.message, "image addresses are not accepted")
      }))

    it.effect("400 for a malformed body, naming the field", () =>
      Effect.gen(function*() {
        const client = yield* Chat.openai()
        const error = yield* failure(() => client.chat.completions.create({ model, messages: [], temperature: 3 }))
        assert.instanceOf(error, OpenAI.BadRequestError)
        assert.oneOf(error.param, ["messages", "temperature"])
        const raw = yield* Chat.postChat({ messages: Chat.ask("x") })
        assert.strictEqual(raw.status, 400)
        assert.strictEqual(((yield* Effect.promise(() => raw.json())) as any).error.param, "model")
      }))

    it.effect("401 AuthenticationError without a valid token", () =>
      Effect.gen(function*() {
        const client = yield* Chat.openai("not-a-token")
        const error = yield* failure(() => client.chat.completions.create({ model, messages: Chat.ask("x") }))
        assert.instanceOf(error, OpenAI.AuthenticationError)
        assert.strictEqual(error.status, 401)
        assert.match(error.headers.get("www-authenticate") ?? "", /^Bearer/)
      }))

    it.effect("404 NotFoundError for a model that is not a chat model", () =>
      Effect.gen(function*() {
        const client = yield* Chat.openai()
        for (const name of ["no-such-model", "film-3.1-fast"]) {
          const error = yield* failure(() => client.chat.completions.create({ model: name, messages: Chat.ask("x") }))
          assert.instanceOf(error, OpenAI.NotFoundError)
          assert.strictEqual(error.param, "model")
          assert.strictEqual(error.code, "model_not_found")
          assert.include(error.message, name)
        }
      }))
  })
})

describe("E1 chat completions, live against vendor-d's emulator", () => {
  layer(Chat.liveLayer())((it) => {
    it.effect("non-stream: messages become contents, the answer's text and image come back, no sandbox header", () =>
      Effect.gen(function*() {
        const emulator = yield* Chat.ChatEmulator
        const before = (yield* emulator.requests).length
        const client = yield* Chat.openai()
        const { data, response } = yield* Effect.promise(() =>
          client.chat.completions.create({
            model,
            temperature: 0.5,
            messages: [
              { role: "system", content: "You draw." },
              { role: "user", content: [{ type: "text", text: "a cat" }, { type: "image_url", image_url: { url: pngDataUrl } }] }
            ]
          }).withResponse()
        )
        assert.isNull(response.headers.get("x-genway-sandbox"))
        const choice = data.choices[0]!
        assert.strictEqual(choice.finish_reason as string, "STOP")
        const parts = partsOf(choice.message.content)
        assert.deepStrictEqual(parts.map((p) => p.type), ["text", "image_url"])
        assert.strictEqual((parts[0] as any).text, "Here is the image you asked for.")
        assert.strictEqual(assertPng(imagesOf(choice.message.content)[0]!).width, 64)
        const usage = data.usage as any
        assert.strictEqual(usage.prompt_tokens, Math.ceil("You draw.a cat".length / 4) + 258)
        assert.strictEqual(usage.completion_tokens, 8 + 1290)
        assert.strictEqual(usage.total_tokens, usage.prompt_tokens + usage.completion_tokens)
        assert.strictEqual(usage.audioTokens, 0)
        assert.isNull(usage.cache_read_input_tokens)

        const sent = (yield* emulator.requests).slice(before)
        assert.strictEqual(sent.length, 1)
        assert.strictEqual(sent[0]!.path, `${upstreamPath}:generateContent`)
        assert.strictEqual(sent[0]!.headers["x-goog-api-key"], emulator.apiKey)
        assert.deepStrictEqual(sent[0]!.body, {
          contents: [{
            role: "user",
            parts: [{ text: "a cat" }, { inlineData: { mimeType: "image/png", data: pngDataUrl.slice("data:image/png;base64,".length) } }]
          }],
          systemInstruction: { parts: [{ text: "You draw." }] },
          generationConfig: { responseModalities: ["TEXT", "IMAGE"], temperature: 0.5 }
        })
      }))

    it.effect("stream: the vendor's events as content chunks, the image with STOP, the usage chunk, [DONE]", () =>
      Effect.gen(function*() {
        const emulator = yield* Chat.ChatEmulator
        const client = yield* Chat.openai()
        const chunks = yield* Effect.flatMap(
          Effect.promise(() => client.chat.completions.create({ model, stream: true, messages: Chat.ask("a cat") })),
          collect
        )
        const content = chunks.filter((c) => c.choices.length > 0)
        assert.deepStrictEqual(content.map((c) => c.choices[0].finish_reason), [null, null, "STOP"])
        assert.strictEqual(content.map((c) => (partsOf(c.choices[0].delta.content)[0] as any).text ?? "").join(""), "Here is the image you asked for.")
        assertPng(imagesOf(content[2].choices[0].delta.content)[0]!)
        const last = chunks[chunks.length - 1]
        assert.deepStrictEqual(last.choices, [])
        assert.strictEqual(last.usage.completion_tokens, 8 + 1290)
        assert.strictEqual(last.usage.completion_tokens_details.text_tokens, 8)
        assert.strictEqual(last.usage.prompt_tokens_details.text_tokens, 2)
        const requests = yield* emulator.requests
        const streamed = requests[requests.length - 1]!
        assert.strictEqual(streamed.path, `${upstreamPath}:streamGenerateContent`)
        assert.deepStrictEqual(streamed.query, { alt: "sse" })

        const { text } = yield* rawStream({ model, stream: true, messages: Chat.ask("a cat") })
        assert.isTrue(text.endsWith("\n\ndata: [DONE]\n\n"))
      }))

    it.effect("upstream 429 before the first byte is retried (RetryInfo honoured), then succeeds", () =>
      Effect.gen(function*() {
        const emulator = yield* Chat.ChatEmulator
        const client = yield* Chat.openai()
        const before = (yield* emulator.requests).length
        yield* emulator.inject("generate", { _tag: "RateLimited", retryDelaySeconds: 2 })
        const data = yield* Chat.withClock(() => client.chat.completions.create({ model, messages: Chat.ask("a cat") }))
        assertPng(imagesOf(data.choices[0]!.message.content)[0]!)
        assert.deepStrictEqual((yield* emulator.requests).slice(before).map((r) => r.kind), ["generate", "generate"])
      }))

    it.effect("upstream 503 before the first byte of a stream is retried, then streams", () =>
      Effect.gen(function*() {
        const emulator = yield* Chat.ChatEmulator
        const client = yield* Chat.openai()
        yield* emulator.inject("stream", { _tag: "Unavailable" }, 2)
        const chunks = yield* Chat.withClock(async () => {
          const out: Array<any> = []
          for await (const chunk of await client.chat.completions.create({ model, stream: true, messages: Chat.ask("a cat") })) {
            out.push(chunk)
          }
          return out
        })
        assert.strictEqual(chunks.filter((c) => c.choices[0]?.finish_reason === "STOP").length, 1)
      }))

    it.effect("a rate limit that outlasts the retries is a 429 RateLimitError with Retry-After", () =>
      Effect.gen(function*() {
        const emulator = yield* Chat.ChatEmulator
        const client = yield* Chat.openai()
        yield* emulator.inject("generate", { _tag: "RateLimited", retryDelaySeconds: 60 })
        const error = yield* failure(() => client.chat.completions.create({ model, messages: Chat.ask("a cat") }))
        assert.instanceOf(error, OpenAI.RateLimitError)
        assert.strictEqual(error.headers.get("retry-after"), "60")
        assert.strictEqual(error.code, "rate_limit_exceeded")
      }))

    it.effect("a safety finish is a clear 400 naming the reason", () =>
      Effect.gen(function*() {
        const emulator = yield* Chat.ChatEmulator
        const client = yield* Chat.openai()
        yield* emulator.inject("generate", { _tag: "Finish", reason: "IMAGE_SAFETY" })
        const error = yield* failure(() => client.chat.completions.create({ model, messages: Chat.ask("something forbidden") }))
        assert.instanceOf(error, OpenAI.BadRequestError)
        assert.strictEqual(error.code, "content_filter")
        assert.include(error.message, "IMAGE_SAFETY")

        yield* emulator.inject("generate", { _tag: "NoImage", text: "I only describe." })
        const talked = yield* failure(() => client.chat.completions.create({ model, messages: Chat.ask("a cat") }))
        assert.instanceOf(talked, OpenAI.BadRequestError)
        assert.strictEqual(talked.code, "no_image")
        assert.include(talked.message, "without generating an image")
        assert.include(talked.message, "I only describe.")
      }))

    it.effect("stream: a refusal after the vendor's first byte is an error event naming the reason, without [DONE]", () =>
      Effect.gen(function*() {
        const emulator = yield* Chat.ChatEmulator
        const client = yield* Chat.openai()
        yield* emulator.inject("stream", { _tag: "PromptBlocked", reason: "PROHIBITED_CONTENT" })
        const blocked = yield* failure(async () => {
          for await (const _ of await client.chat.completions.create({ model, stream: true, messages: Chat.ask("x") })) {
            // nothing arrives before the error
          }
        })
        assert.instanceOf(blocked, OpenAI.APIError)
        assert.include(blocked.message, "PROHIBITED_CONTENT")

        yield* emulator.inject("stream", { _tag: "Finish", reason: "SAFETY" })
        const seen: Array<unknown> = []
        const late = yield* failure(async () => {
          for await (const chunk of await client.chat.completions.create({ model, stream: true, messages: Chat.ask("x") })) seen.push(chunk)
        })
        assert.strictEqual(seen.length, 1) // the text before the finish
        assert.instanceOf(late, OpenAI.APIError)
        assert.include(late.message, "SAFETY")

        yield* emulator.inject("stream", { _tag: "Finish", reason: "SAFETY" })
        const { response, text } = yield* rawStream({ model, stream: true, messages: Chat.ask("x") })
        assert.strictEqual(response.status, 200)
        const events = dataEvents(text)
        const error = JSON.parse(events[events.length - 1]!).error
        assert.strictEqual(error.type, "invalid_request_error")
        assert.strictEqual(error.code, "content_filter")
        assert.include(error.message, "SAFETY")
        assert.notInclude(text, "[DONE]")
      }))

    it.effect("a stream the vendor cuts after its first event ends with an error event the client sees", () =>
      Effect.gen(function*() {
        const emulator = yield* Chat.ChatEmulator
        const client = yield* Chat.openai()
        yield* emulator.inject("stream", { _tag: "CutStream", afterEvents: 1 })
        const seen: Array<unknown> = []
        const error = yield* failure(async () => {
          for await (const chunk of await client.chat.completions.create({ model, stream: true, messages: Chat.ask("x") })) seen.push(chunk)
        })
        assert.strictEqual(seen.length, 1)
        assert.instanceOf(error, OpenAI.APIError)
        assert.include(error.message, "cut off")
      }))

    it.effect("a client that goes away mid-stream cancels the upstream request", () =>
      Effect.gen(function*() {
        const emulator = yield* Chat.ChatEmulator
        const client = yield* Chat.openai()
        const abortsBefore = (yield* emulator.clientAborts).length
        yield* emulator.inject("stream", { _tag: "SlowStream", delayMs: 300 })
        const stream = yield* Effect.promise(() => client.chat.completions.create({ model, stream: true, messages: Chat.ask("slow") }))
        const first = yield* Effect.promise(async () => {
          for await (const chunk of stream) return chunk // leaving the loop aborts the request
          return undefined
        })
        assert.strictEqual((first as any).choices[0].finish_reason, null)
        yield* emulator.awaitClientAborts(abortsBefore + 1)
        const aborted = (yield* emulator.clientAborts).slice(abortsBefore)
        assert.strictEqual(aborted.length, 1)
        assert.strictEqual(aborted[0]!.kind, "stream")
      }))
  })

  layer(Chat.liveLayer({ heartbeat: "1 second", idleTimeout: "10 seconds" }))((it) => {
    it.effect("a vendor silent past the idle timeout: a 504 error event, and the upstream request is cancelled", () =>
      Effect.gen(function*() {
        const emulator = yield* Chat.ChatEmulator
        yield* emulator.inject("stream", { _tag: "SlowStream", delayMs: 60_000 })
        const url = yield* Chat.baseUrl
        const text = yield* Chat.withClock(async () => {
          const response = await fetch(`${url}/v1/chat/completions`, {
            method: "POST",
            headers: { authorization: "Bearer test-token-a", "content-type": "application/json" },
            body: JSON.stringify({ model, stream: true, messages: Chat.ask("never") })
          })
          return response.text()
        }, "1 second")
        assert.include(text, ": keep-alive\n\n")
        const error = JSON.parse(dataEvents(text).pop()!).error
        assert.strictEqual(error.type, "api_error")
        assert.strictEqual(error.code, "upstream_timeout")
        assert.notInclude(text, "[DONE]")
        yield* emulator.awaitClientAborts(1)
      }))
  })

  layer(Chat.liveLayer({ heartbeat: "2 seconds", emulator: { streamDelayMs: 100 } }))((it) => {
    it.effect("comment heartbeats while the vendor is silent; the stream still ends with [DONE]", () =>
      Effect.gen(function*() {
        const url = yield* Chat.baseUrl
        const text = yield* Chat.withClock(async () => {
          const response = await fetch(`${url}/v1/chat/completions`, {
            method: "POST",
            headers: { authorization: "Bearer test-token-a", "content-type": "application/json" },
            body: JSON.stringify({ model, stream: true, messages: Chat.ask("slow") })
          })
          return response.text()
        }, "1 second")
        assert.include(text, ": keep-alive\n\n")
        assert.isTrue(text.endsWith("data: [DONE]\n\n"))
        assert.strictEqual(dataEvents(text).length, 5)
      }))
  })
})

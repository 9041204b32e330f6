/**
 * An in-process vendor-d upstream for integration tests and benchmarks, written from UPSTREAMS.md
 * rather than from the adapter:
 * - protocol "long-running" (`:predictLongRunning`, operation polling, video URIs that need the key
 *   and answer with a redirect to a separate storage origin); operations finish on a configurable
 *   poll and carry a real MP4;
 * - protocol "generate-content" (`:generateContent`, `:streamGenerateContent?alt=sse`): a real PNG
 *   after some text, `finishReason` and `usageMetadata`, optionally streamed slowly.
 * Faults can be switched on for the next requests of a kind (rate limits, outages, content-filter
 * finishes, finishes without an image, cut streams), every request is logged, accepted creates are
 * counted so a test can assert exactly-once submission, and a client that closes its connection
 * before the answer is complete is recorded, so a test can prove a cancellation reached the vendor.
 */
import { Server } from "@genway/adapter-kit/testing"
import { SampleMedia } from "@genway/core"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import { randomBytes } from "node:crypto"
import * as http from "node:http"

/**
 * Which kind of request a fault applies to: `download` is the key-protected video URI, `blob` the
 * storage URL it redirects to, `generate` and `stream` the two generate-content calls, `other`
 * anything outside the protocols.
 */
export type RequestKind = "submit" | "poll" | "download" | "blob" | "generate" | "stream" | "other"

/** A misbehaviour of the emulated vendor, applied to the next request(s) of a kind. */
export type Fault =
  /** 429 `RESOURCE_EXHAUSTED` with a `RetryInfo` detail (`retryDelay`, default 2 s); not processed. */
  | { readonly _tag: "RateLimited"; readonly retryDelaySeconds?: number }
  /** 503 `UNAVAILABLE`; not processed. */
  | { readonly _tag: "Unavailable" }
  /** Any error status with the vendor's error envelope; not processed. */
  | { readonly _tag: "HttpError"; readonly status: number; readonly statusName?: string; readonly message?: string }
  /** The request is processed, its answer held back for `delayMs`. */
  | { readonly _tag: "Slow"; readonly delayMs: number }
  /** The socket is destroyed without an answer; with `afterAccept`, only after processing (a create is then accepted). */
  | { readonly _tag: "Drop"; readonly afterAccept?: boolean }
  /** The request is processed, its answer replaced by truncated JSON. */
  | { readonly _tag: "MalformedJson" }
  /** Polls only: the operation is reported with a `done` that is neither true nor false. */
  | { readonly _tag: "UnknownStatus" }
  /** Polls only: the operation finishes now with `error{code, message}` (gRPC code, default 13). */
  | { readonly _tag: "FailTask"; readonly code?: number; readonly message?: string }
  /** Polls only: the operation finishes now with no samples and `raiMediaFilteredCount: 1`. */
  | { readonly _tag: "ContentFilter"; readonly reasons?: ReadonlyArray<string> }
  /** Generations: the candidate finishes with `reason` (`SAFETY`, `IMAGE_SAFETY`, `NO_IMAGE`, …) and no image. */
  | { readonly _tag: "Finish"; readonly reason: string; readonly message?: string }
  /** Generations: `STOP` with text only (the model talked instead of drawing). */
  | { readonly _tag: "NoImage"; readonly text?: string }
  /** Generations: the prompt is blocked (`promptFeedback.blockReason`, default `SAFETY`); no candidate. */
  | { readonly _tag: "PromptBlocked"; readonly reason?: string }
  /** Streams: the connection is destroyed `pauseMs` (default 50) after `afterEvents` events (default 1). */
  | { readonly _tag: "CutStream"; readonly afterEvents?: number; readonly pauseMs?: number }
  /** Streams: each event is held back `delayMs` (overrides `streamDelayMs`). */
  | { readonly _tag: "SlowStream"; readonly delayMs: number }

/** One request as the emulator saw it. */
export interface RecordedRequest {
  readonly kind: RequestKind
  readonly method: string
  /** Path without the query. */
  readonly path: string
  readonly query: Readonly<Record<string, string>>
  /** Lower-cased names. */
  readonly headers: Readonly<Record<string, string>>
  /** Parsed JSON, or the text, of the body. */
  readonly body?: unknown
}

/** Settings of an emulator. */
export interface EmulatorOptions {
  /** The key clients must send as `x-goog-api-key`. */
  readonly apiKey?: string
  /** The poll on which an operation is done (1-based, per operation). */
  readonly completeOnPoll?: number
  /** Path prefix of the API (the base URL is the origin plus this). */
  readonly basePath?: string
  /** Delay before each event of a generate-content stream, the first one included (default 0). */
  readonly streamDelayMs?: number
  /** Width and height of generated images (default 64 × 64). */
  readonly imageSize?: readonly [number, number]
}

/** A running emulator (its requests are those of both hosts). */
export interface Emulator extends Server.Controls<RequestKind, Fault, RecordedRequest> {
  /** The `{base}` to configure (`VENDOR_D_BASE_URL`). */
  readonly baseUrl: string
  /** Origin of the storage host the video URIs redirect to. */
  readonly storageOrigin: string
  readonly apiKey: string
  /** Requests whose client closed the connection before the answer was complete, oldest first. */
  readonly clientAborts: Effect.Effect<ReadonlyArray<RecordedRequest>>
  /** Waits until at least `count` (default 1) requests were abandoned by their client. */
  readonly awaitClientAborts: (count?: number) => Effect.Effect<void>
}

interface Operation {
  readonly name: string
  readonly samples: number
  polls: number
  outcome?:
    | { readonly _tag: "Succeeded"; readonly files: ReadonlyArray<string> }
    | { readonly _tag: "Failed"; readonly code: number; readonly message: string }
    | { readonly _tag: "Filtered"; readonly reasons: ReadonlyArray<string> }
}

interface Reply {
  readonly status: number
  readonly headers: Record<string, string>
  readonly body: string | Uint8Array
}

const json = (status: number, value: unknown, headers: Record<string, string> = {}): Reply => ({
  status,
  headers: { "content-type": "application/json; charset=UTF-8", ...headers },
  body: JSON.stringify(value)
})

const statusNames: Record<number, string> = {
  400: "INVALID_ARGUMENT",
  403: "PERMISSION_DENIED",
  404: "NOT_FOUND",
  429: "RESOURCE_EXHAUSTED",
  500: "INTERNAL",
  503: "UNAVAILABLE",
  504: "DEADLINE_EXCEEDED"
}

const vendorError = (status: number, message: string, details: ReadonlyArray<unknown> = [], statusName?: string) =>
  json(status, {
    error: {
      code: status,
      message,
      status: statusName ?? statusNames[status] ?? "UNKNOWN",
      ...(details.length > 0 ? { details } : {})
    }
  })

const invalid = (message: string) => vendorError(400, message)

const RESPONSE_TYPE = "type.googleapis.com/google.ai.generativelanguage.v1beta.PredictLongRunningResponse"
const IMAGE_TYPES = ["image/png", "image/jpeg", "image/webp"]
const INSTANCE_KEYS = new Set(["prompt", "image", "lastFrame"])
const PARAMETER_KEYS = new Set(["aspectRatio", "durationSeconds", "resolution", "negativePrompt", "sampleCount", "personGeneration", "seed"])

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

const looksLike = (type: string, bytes: Buffer): boolean => {
  switch (type) {
    case "image/png":
      return bytes[0] === 0x89 && bytes.subarray(1, 4).toString("latin1") === "PNG"
    case "image/jpeg":
      return bytes[0] === 0xff && bytes[1] === 0xd8
    case "image/webp":
      return bytes.subarray(0, 4).toString("latin1") === "RIFF" && bytes.subarray(8, 12).toString("latin1") === "WEBP"
    default:
      return false
  }
}

/** Checks a create body; the error reply, or `undefined` when it is valid. */
const validateCreate = (body: unknown): Reply | undefined => {
  if (!isRecord(body)) return invalid("Invalid JSON payload received.")
  for (const key of Object.keys(body)) {
    if (key !== "instances" && key !== "parameters") return invalid(`Invalid JSON payload received. Unknown name "${key}": Cannot find field.`)
  }
  const instances = body["instances"]
  if (!Array.isArray(instances) || instances.length !== 1 || !isRecord(instances[0])) {
    return invalid("instances must hold exactly one instance.")
  }
  const instance = instances[0]
  for (const key of Object.keys(instance)) {
    if (!INSTANCE_KEYS.has(key)) return invalid(`Invalid JSON payload received. Unknown name "${key}" at 'instances[0]': Cannot find field.`)
  }
  if (instance["prompt"] !== undefined && typeof instance["prompt"] !== "string") return invalid("instances[0].prompt must be a string.")
  if (instance["prompt"] === undefined && instance["image"] === undefined) return invalid("instances[0].prompt is required.")
  if (instance["lastFrame"] !== undefined && instance["image"] === undefined) return invalid("lastFrame requires image.")
  for (const key of ["image", "lastFrame"]) {
    const image = instance[key]
    if (image === undefined) continue
    if (!isRecord(image) || typeof image["bytesBase64Encoded"] !== "string" || typeof image["mimeType"] !== "string") {
      return invalid(`instances[0].${key} must be {bytesBase64Encoded, mimeType}.`)
    }
    if (!IMAGE_TYPES.includes(image["mimeType"])) return invalid(`instances[0].${key}.mimeType is not supported.`)
    const base64 = image["bytesBase64Encoded"]
    if (!/^[A-Za-z0-9+/]+={0,2}$/.test(base64) || !looksLike(image["mimeType"], Buffer.from(base64, "base64"))) {
      return invalid(`instances[0].${key} is not a valid ${image["mimeType"]} image.`)
    }
  }
  const parameters = body["parameters"] ?? {}
  if (!isRecord(parameters)) return invalid("parameters must be an object.")
  for (const key of Object.keys(parameters)) {
    if (!PARAMETER_KEYS.has(key)) return invalid(`Invalid JSON payload received. Unknown name "${key}" at 'parameters': Cannot find field.`)
  }
  const { aspectRatio, durationSeconds, negativePrompt, resolution, sampleCount } = parameters
  if (aspectRatio !== undefined && aspectRatio !== "16:9" && aspectRatio !== "9:16") return invalid("aspectRatio must be 16:9 or 9:16.")
  if (durationSeconds !== undefined && ![4, 6, 8].includes(durationSeconds as number)) {
    return invalid("durationSeconds must be the number 4, 6 or 8.")
  }
  if (resolution !== undefined && resolution !== "720p" && resolution !== "1080p") return invalid("resolution must be 720p or 1080p.")
  if (negativePrompt !== undefined && typeof negativePrompt !== "string") return invalid("negativePrompt must be a string.")
  if (sampleCount !== undefined && (!Number.isInteger(sampleCount) || (sampleCount as number) < 1 || (sampleCount as number) > 4)) {
    return invalid("sampleCount must be an integer from 1 to 4.")
  }
  return undefined
}

const GENERATE_KEYS = new Set(["contents", "systemInstruction", "generationConfig", "safetySettings", "tools", "toolConfig", "cachedContent"])
const GENERATION_CONFIG_KEYS = new Set([
  "responseModalities",
  "temperature",
  "topP",
  "topK",
  "maxOutputTokens",
  "candidateCount",
  "stopSequences",
  "seed",
  "imageConfig"
])
const MODALITIES = new Set(["TEXT", "IMAGE", "AUDIO"])

/** What a valid generate-content body asks for. */
interface GenerateRequest {
  readonly textChars: number
  readonly images: number
  readonly wantsImage: boolean
}

const checkParts = (parts: unknown, at: string): Reply | { readonly textChars: number; readonly images: number } => {
  if (!Array.isArray(parts) || parts.length === 0) return invalid(`${at}.parts must be a non-empty array.`)
  let textChars = 0
  let images = 0
  for (const [i, part] of parts.entries()) {
    const where = `${at}.parts[${i}]`
    if (!isRecord(part)) return invalid(`${where} must be an object.`)
    const keys = Object.keys(part).filter((k) => k !== "thought" && k !== "thoughtSignature")
    if (keys.length !== 1 || (keys[0] !== "text" && keys[0] !== "inlineData")) {
      return invalid(`${where} must hold exactly one of text or inlineData.`)
    }
    if (keys[0] === "text") {
      if (typeof part["text"] !== "string") return invalid(`${where}.text must be a string.`)
      textChars += part["text"].length
      continue
    }
    const data = part["inlineData"]
    if (!isRecord(data) || typeof data["mimeType"] !== "string" || typeof data["data"] !== "string") {
      return invalid(`${where}.inlineData must be {mimeType, data}.`)
    }
    if (!IMAGE_TYPES.includes(data["mimeType"])) return invalid(`${where}.inlineData.mimeType ${data["mimeType"]} is not supported.`)
    if (!/^[A-Za-z0-9+/]+={0,2}$/.test(data["data"]) || !looksLike(data["mimeType"], Buffer.from(data["data"].slice(0, 64), "base64"))) {
      return invalid(`${where}.inlineData is not a valid ${data["mimeType"]} image.`)
    }
    images += 1
  }
  return { textChars, images }
}

/** Checks a generate-content body: the request it makes, or the error reply. */
const validateGenerate = (body: unknown): Reply | GenerateRequest => {
  if (!isRecord(body)) return invalid("Invalid JSON payload received.")
  for (const key of Object.keys(body)) {
    if (!GENERATE_KEYS.has(key)) return invalid(`Invalid JSON payload received. Unknown name "${key}": Cannot find field.`)
  }
  const contents = body["contents"]
  if (!Array.isArray(contents) || contents.length === 0) return invalid("* GenerateContentRequest.contents: contents is not specified")
  let textChars = 0
  let images = 0
  for (const [i, content] of contents.entries()) {
    if (!isRecord(content)) return invalid(`contents[${i}] must be an object.`)
    const role = content["role"]
    if (role !== undefined && role !== "user" && role !== "model") {
      return invalid(`Please use a valid role: user, model. (contents[${i}].role)`)
    }
    const checked = checkParts(content["parts"], `contents[${i}]`)
    if ("status" in checked) return checked
    textChars += checked.textChars
    images += checked.images
  }
  const system = body["systemInstruction"]
  if (system !== undefined) {
    if (!isRecord(system)) return invalid("systemInstruction must be an object.")
    const checked = checkParts(system["parts"], "systemInstruction")
    if ("status" in checked) return checked
    if (checked.images > 0) return invalid("systemInstruction accepts text parts only.")
    textChars += checked.textChars
  }
  const config = body["generationConfig"] ?? {}
  if (!isRecord(config)) return invalid("generationConfig must be an object.")
  for (const key of Object.keys(config)) {
    if (!GENERATION_CONFIG_KEYS.has(key)) {
      return invalid(`Invalid JSON payload received. Unknown name "${key}" at 'generation_config': Cannot find field.`)
    }
  }
  const modalities = config["responseModalities"]
  if (modalities !== undefined && (!Array.isArray(modalities) || !modalities.every((m) => MODALITIES.has(m as string)))) {
    return invalid("generationConfig.responseModalities must list TEXT, IMAGE or AUDIO.")
  }
  const { maxOutputTokens, temperature, topP } = config
  if (temperature !== undefined && (typeof temperature !== "number" || temperature < 0 || temperature > 2)) {
    return invalid("generationConfig.temperature must be a number from 0 to 2.")
  }
  if (topP !== undefined && (typeof topP !== "number" || topP < 0 || topP > 1)) return invalid("generationConfig.topP must be from 0 to 1.")
  if (maxOutputTokens !== undefined && (!Number.isInteger(maxOutputTokens) || (maxOutputTokens as number) < 1)) {
    return invalid("generationConfig.maxOutputTokens must be a positive integer.")
  }
  return { textChars, images, wantsImage: Array.isArray(modalities) && modalities.includes("IMAGE") }
}

/** Tokens the vendor counts: about four characters per text token, fixed counts per image. */
const PROMPT_IMAGE_TOKENS = 258
const OUTPUT_IMAGE_TOKENS = 1290
const textTokens = (chars: number) => Math.ceil(chars / 4)

type GenerationEvent = Record<string, unknown>

/**
 * The events of one generation, as a stream sends them: text first, then the image with the
 * finish reason and the full usage. A whole answer merges them.
 */
const generationEvents = (
  request: GenerateRequest,
  model: string,
  responseId: string,
  image: () => string,
  fault: Fault | undefined
): ReadonlyArray<GenerationEvent> => {
  const promptText = textTokens(request.textChars)
  const promptTokenCount = promptText + request.images * PROMPT_IMAGE_TOKENS
  const promptTokensDetails = [
    { modality: "TEXT", tokenCount: promptText },
    ...(request.images > 0 ? [{ modality: "IMAGE", tokenCount: request.images * PROMPT_IMAGE_TOKENS }] : [])
  ]
  const usage = (texts: ReadonlyArray<string>, images: number) => {
    const text = textTokens(texts.join("").length)
    const candidatesTokenCount = text + images * OUTPUT_IMAGE_TOKENS
    return {
      promptTokenCount,
      candidatesTokenCount,
      totalTokenCount: promptTokenCount + candidatesTokenCount,
      promptTokensDetails,
      candidatesTokensDetails: [
        { modality: "TEXT", tokenCount: text },
        ...(images > 0 ? [{ modality: "IMAGE", tokenCount: images * OUTPUT_IMAGE_TOKENS }] : [])
      ]
    }
  }
  const event = (candidate: Record<string, unknown> | undefined, usageMetadata: unknown, extra: Record<string, unknown> = {}) => ({
    ...(candidate !== undefined ? { candidates: [{ ...candidate, index: 0 }] } : {}),
    ...extra,
    usageMetadata,
    modelVersion: model,
    responseId
  })
  const content = (parts: ReadonlyArray<unknown>) => ({ content: { role: "model", parts } })
  const opening = ["Here is the image ", "you asked for."]
  const openingEvents = opening.map((text, i) => event(content([{ text }]), { promptTokenCount, totalTokenCount: promptTokenCount + i }))

  if (fault?._tag === "PromptBlocked") {
    return [event(undefined, { promptTokenCount, totalTokenCount: promptTokenCount }, { promptFeedback: { blockReason: fault.reason ?? "SAFETY" } })]
  }
  if (fault?._tag === "Finish") {
    return [
      openingEvents[0]!,
      event({ finishReason: fault.reason, ...(fault.message !== undefined ? { finishMessage: fault.message } : {}) }, usage(opening.slice(0, 1), 0))
    ]
  }
  if (fault?._tag === "NoImage" || !request.wantsImage) {
    const text = fault?._tag === "NoImage" ? fault.text ?? "I would rather describe it in words." : "A picture of what you asked for."
    return [event({ ...content([{ text }]), finishReason: "STOP" }, usage([text], 0))]
  }
  return [
    ...openingEvents,
    event({ ...content([{ inlineData: { mimeType: "image/png", data: image() } }]), finishReason: "STOP" }, usage(opening, 1))
  ]
}

/** A whole `:generateContent` answer: the events' parts in one candidate, the last finish and usage. */
const mergeEvents = (events: ReadonlyArray<GenerationEvent>): GenerationEvent => {
  const parts: Array<unknown> = []
  let candidate: Record<string, unknown> | undefined
  for (const e of events) {
    const c = (e["candidates"] as Array<Record<string, unknown>> | undefined)?.[0]
    if (c === undefined) continue
    parts.push(...(((c["content"] as Record<string, unknown> | undefined)?.["parts"] as Array<unknown> | undefined) ?? []))
    candidate = { ...candidate, ...c }
  }
  const last = events[events.length - 1] ?? {}
  if (candidate === undefined) return last
  const { content: _content, ...rest } = candidate
  return { ...last, candidates: [{ ...(parts.length > 0 ? { content: { role: "model", parts } } : {}), ...rest }] }
}

/** Starts an emulator (API and storage host) on 127.0.0.1 (free ports); it stops when the scope closes. */
export const make = (options: EmulatorOptions = {}): Effect.Effect<Emulator, never, Scope.Scope> =>
  Effect.gen(function*() {
    const apiKey = options.apiKey ?? "vendor-d-emulator-key"
    const completeOnPoll = Math.max(1, options.completeOnPoll ?? 2)
    const basePath = (options.basePath ?? "/v1beta").replace(/\/+$/, "")
    const streamDelayMs = Math.max(0, options.streamDelayMs ?? 0)
    const [imageWidth, imageHeight] = options.imageSize ?? [64, 64]

    const operations = new Map<string, Operation>()
    const files = new Map<string, string>() // file id → storage token
    const recorder = new Server.Recorder<RequestKind, Fault, RecordedRequest>()
    const aborts = new Server.Journal<RecordedRequest>()
    const timers = new Server.Timers()
    // Answers the emulator itself cut short: their close is not the client's doing.
    const intentional = new WeakSet<http.ServerResponse>()
    let nextId = 1
    let generations = 0
    let apiOrigin = ""
    let storageOrigin = ""

    const fileUri = (id: string) => `${apiOrigin}${basePath}/files/${id}:download?alt=media`

    const finish = (operation: Operation) => {
      const ids = Array.from({ length: operation.samples }, () => randomBytes(6).toString("hex"))
      for (const id of ids) files.set(id, randomBytes(12).toString("hex"))
      operation.outcome = { _tag: "Succeeded", files: ids }
    }

    const operationReply = (operation: Operation): Reply => {
      const outcome = operation.outcome
      if (outcome === undefined) return json(200, { name: operation.name })
      switch (outcome._tag) {
        case "Succeeded":
          return json(200, {
            name: operation.name,
            done: true,
            response: {
              "@type": RESPONSE_TYPE,
              generateVideoResponse: { generatedSamples: outcome.files.map((id) => ({ video: { uri: fileUri(id) } })) }
            }
          })
        case "Failed":
          return json(200, { name: operation.name, done: true, error: { code: outcome.code, message: outcome.message } })
        case "Filtered":
          return json(200, {
            name: operation.name,
            done: true,
            response: {
              "@type": RESPONSE_TYPE,
              generateVideoResponse: { raiMediaFilteredCount: 1, raiMediaFilteredReasons: outcome.reasons }
            }
          })
      }
    }

    const authFailure = (headers: http.IncomingHttpHeaders): Reply | undefined => {
      const key = headers["x-goog-api-key"]
      if (key === undefined) {
        return vendorError(403, "Method doesn't allow unregistered callers. Please use an API key.")
      }
      if (key !== apiKey) {
        return vendorError(400, "API key not valid. Please pass a valid API key.", [
          { "@type": "type.googleapis.com/google.rpc.ErrorInfo", reason: "API_KEY_INVALID", domain: "googleapis.com" }
        ])
      }
      return undefined
    }

    type Route =
      | { readonly kind: "submit"; readonly model: string }
      | { readonly kind: "poll"; readonly name: string }
      | { readonly kind: "download"; readonly file: string }
      | { readonly kind: "blob"; readonly file: string }
      | { readonly kind: "generate" | "stream"; readonly model: string }
      | { readonly kind: "other" }

    const apiRoute = (method: string, path: string): Route => {
      if (!path.startsWith(`${basePath}/`)) return { kind: "other" }
      const rest = decodeURIComponent(path.slice(basePath.length + 1))
      const create = /^models\/([^/:]+):predictLongRunning$/.exec(rest)
      if (method === "POST" && create !== null) return { kind: "submit", model: create[1]! }
      const generate = /^models\/([^/:]+):(generateContent|streamGenerateContent)$/.exec(rest)
      if (method === "POST" && generate !== null) {
        return { kind: generate[2] === "generateContent" ? "generate" : "stream", model: generate[1]! }
      }
      if (method === "GET" && /^models\/[^/]+\/operations\/[^/]+$/.test(rest)) return { kind: "poll", name: rest }
      const file = /^files\/([^/:]+):download$/.exec(rest)
      if (method === "GET" && file !== null) return { kind: "download", file: file[1]! }
      return { kind: "other" }
    }

    const answer = (route: Route, req: http.IncomingMessage, url: URL, body: unknown, fault: Fault | undefined): Reply => {
      if (route.kind === "blob") {
        const token = files.get(route.file)
        if (token === undefined || url.searchParams.get("token") !== token) {
          return { status: 403, headers: { "content-type": "text/plain" }, body: "Forbidden" }
        }
        const mp4 = SampleMedia.mp4()
        return { status: 200, headers: { "content-type": "video/mp4", "content-length": String(mp4.length) }, body: mp4 }
      }
      const denied = authFailure(req.headers)
      if (denied !== undefined) return denied
      switch (route.kind) {
        case "submit": {
          const problem = validateCreate(body)
          if (problem !== undefined) return problem
          const parameters = (body as { parameters?: { sampleCount?: number } }).parameters
          const operation: Operation = {
            name: `models/${route.model}/operations/${(nextId++).toString(36).padStart(8, "0")}`,
            samples: parameters?.sampleCount ?? 1,
            polls: 0
          }
          operations.set(operation.name, operation)
          recorder.accept()
          return json(200, { name: operation.name })
        }
        case "poll": {
          const operation = operations.get(route.name)
          if (operation === undefined) return vendorError(404, `Operation ${route.name} not found.`)
          if (fault?._tag === "UnknownStatus") return json(200, { name: operation.name, done: "PENDING" })
          if (operation.outcome === undefined) {
            operation.polls += 1
            if (fault?._tag === "FailTask") {
              operation.outcome = { _tag: "Failed", code: fault.code ?? 13, message: fault.message ?? "Video generation failed." }
            } else if (fault?._tag === "ContentFilter") {
              operation.outcome = { _tag: "Filtered", reasons: fault.reasons ?? ["The video was blocked by the safety filter."] }
            } else if (operation.polls >= completeOnPoll) {
              finish(operation)
            }
          }
          return operationReply(operation)
        }
        case "download": {
          const token = files.get(route.file)
          if (token === undefined) return vendorError(404, "File not found.")
          if (url.searchParams.get("alt") !== "media") return json(200, { name: `files/${route.file}`, mimeType: "video/mp4" })
          return {
            status: 302,
            headers: { location: `${storageOrigin}/blobs/${route.file}?token=${token}` },
            body: ""
          }
        }
        case "generate":
        case "stream": {
          const planned = generation(route.model, url, body, fault)
          if (!Array.isArray(planned)) return planned as Reply
          return json(200, mergeEvents(planned))
        }
        case "other":
          return vendorError(404, `The requested URL ${url.pathname} was not found on this server.`)
      }
    }

    /** The events of a generation, or the error reply for an invalid one. */
    const generation = (model: string, url: URL, body: unknown, fault: Fault | undefined): Reply | ReadonlyArray<GenerationEvent> => {
      const checked = validateGenerate(body)
      if ("status" in checked) return checked
      if (url.pathname.endsWith(":streamGenerateContent") && url.searchParams.get("alt") !== "sse") {
        return invalid("This emulator streams server-sent events only: add ?alt=sse.")
      }
      generations += 1
      const seed = generations
      const responseId = randomBytes(8).toString("base64url")
      return generationEvents(checked, model, responseId, () => Buffer.from(SampleMedia.png(imageWidth, imageHeight, seed)).toString("base64"), fault)
    }

    /** Sends events as server-sent events, each held back `delayMs`; `cutAfter` destroys the connection. */
    const streamEvents = (
      res: http.ServerResponse,
      events: ReadonlyArray<GenerationEvent>,
      delayMs: number,
      cut: { readonly after: number; readonly pauseMs: number } | undefined
    ) => {
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" })
      res.flushHeaders()
      let sent = 0
      const next = () => {
        if (res.destroyed) return
        if (cut !== undefined && sent >= cut.after) {
          intentional.add(res)
          return timers.after(cut.pauseMs, () => res.socket?.destroy())
        }
        if (sent >= events.length) return void res.end()
        res.write(`data: ${JSON.stringify(events[sent++])}\r\n\r\n`)
        schedule()
      }
      const schedule = () => {
        if (delayMs === 0 && sent > 0 && sent < events.length && cut === undefined) return next()
        timers.after(delayMs, next)
      }
      schedule()
    }

    const send = (res: http.ServerResponse, reply: Reply) => {
      res.writeHead(reply.status, reply.headers)
      res.end(reply.body)
    }

    const handler = (host: "api" | "storage") => async (req: http.IncomingMessage, res: http.ServerResponse) => {
      const { body, headers, method, url } = await Server.readIncoming(req)
      const blob = /^\/blobs\/([^/]+)$/.exec(url.pathname)
      const route: Route = host === "storage"
        ? blob !== null && method === "GET" ? { kind: "blob", file: blob[1]! } : { kind: "other" }
        : apiRoute(method, url.pathname)
      const recorded: RecordedRequest = {
        kind: route.kind,
        method,
        path: url.pathname,
        query: Object.fromEntries(url.searchParams),
        headers,
        ...(body !== undefined ? { body } : {})
      }
      res.once("close", () => {
        if (!res.writableFinished && !intentional.has(res)) aborts.add(recorded)
      })
      recorder.record(recorded)

      const fault = recorder.take(route.kind)
      switch (fault?._tag) {
        case "RateLimited":
          return send(
            res,
            vendorError(429, "Resource has been exhausted (e.g. check quota).", [
              { "@type": "type.googleapis.com/google.rpc.RetryInfo", retryDelay: `${fault.retryDelaySeconds ?? 2}s` }
            ])
          )
        case "Unavailable":
          return send(res, vendorError(503, "The service is currently unavailable."))
        case "HttpError":
          return send(res, vendorError(fault.status, fault.message ?? "Injected error.", [], fault.statusName))
        case "Drop":
          if (fault.afterAccept === true) answer(route, req, url, body, fault)
          intentional.add(res)
          return void req.socket.destroy()
      }
      if (route.kind === "stream") {
        const denied = authFailure(req.headers)
        const planned = denied ?? generation(route.model, url, body, fault)
        if (!Array.isArray(planned)) return send(res, planned as Reply)
        const start = () =>
          streamEvents(
            res,
            planned,
            fault?._tag === "SlowStream" ? fault.delayMs : streamDelayMs,
            fault?._tag === "CutStream" ? { after: Math.max(0, fault.afterEvents ?? 1), pauseMs: fault.pauseMs ?? 50 } : undefined
          )
        if (fault?._tag !== "Slow") return start()
        return timers.after(fault.delayMs, () => {
          if (!res.destroyed) start()
        })
      }
      const reply = answer(route, req, url, body, fault)
      if (fault?._tag === "MalformedJson") {
        return send(res, { status: 200, headers: { "content-type": "application/json" }, body: "{\"name\": \"models/" })
      }
      if (fault?._tag === "Slow") {
        return timers.after(fault.delayMs, () => {
          if (!res.destroyed) send(res, reply)
        })
      }
      send(res, reply)
    }

    const serve = (host: "api" | "storage") => {
      const handle = handler(host)
      return http.createServer((req, res) => {
        handle(req, res).catch(() => {
          if (!res.headersSent) send(res, vendorError(500, "Emulator error."))
          else res.destroy()
        })
      })
    }

    apiOrigin = yield* Server.listen(serve("api"))
    storageOrigin = yield* Server.listen(serve("storage"))
    // Runs before the servers close: held answers are dropped with their connections.
    yield* Effect.addFinalizer(() => Effect.sync(() => timers.clear()))

    const emulator: Emulator = {
      baseUrl: `${apiOrigin}${basePath}`,
      storageOrigin,
      apiKey,
      ...recorder.controls,
      clientAborts: aborts.all,
      awaitClientAborts: (count = 1) => aborts.awaitCount(count)
    }
    return emulator
  })

/**
 * An in-process vendor-a upstream for integration tests, written from UPSTREAMS.md rather than
 * from the adapter: protocol "videos" (multipart create, polling with `openai-poll-after-ms`, MP4
 * content behind the key) and protocol "responses" (JSON create, the full SSE event sequence for
 * `stream: true`, background responses that advance on each retrieve, retrieval of stored ones).
 * Videos complete on a configurable poll and carry a real MP4. Faults can be switched on for the
 * next requests of a kind, every request is logged, accepted creates are counted so a test can
 * assert exactly-once submission, and requests whose client left before the answer ended are
 * counted so a test can see a cancellation arrive.
 */
import { Server } from "@genway/adapter-kit/testing"
import { Responses, SampleMedia } from "@genway/core"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import * as http from "node:http"

/**
 * Which kind of request a fault applies to: video `submit`, `poll`, `download`; model
 * `responses.create`, `responses.retrieve` (also a streamed one, `?stream=true`), `responses.cancel`
 * and `responses.delete`; `other` is anything outside the protocols.
 */
export type RequestKind =
  | "submit"
  | "poll"
  | "download"
  | "responses.create"
  | "responses.retrieve"
  | "responses.cancel"
  | "responses.delete"
  | "other"

/** A misbehaviour of the emulated vendor, applied to the next request(s) of a kind. */
export type Fault =
  /**
   * 429 `rate_limit_exceeded` with `Retry-After` (seconds; default 2 unless `resetRequests` is
   * given) and, with `resetRequests` (e.g. `"12ms"`), `x-ratelimit-reset-requests`; the request is
   * not processed.
   */
  | { readonly _tag: "RateLimited"; readonly retryAfterSeconds?: number; readonly resetRequests?: string }
  /** 503, with `Retry-After` when given; the request is not processed. */
  | { readonly _tag: "Unavailable"; readonly retryAfterSeconds?: number }
  /** Any error status with the vendor's error envelope; the request is not processed. */
  | { readonly _tag: "HttpError"; readonly status: number; readonly code?: string; readonly message?: string }
  /** The request is processed, its answer held back for `delayMs`. */
  | { readonly _tag: "Slow"; readonly delayMs: number }
  /** The socket is destroyed without an answer; with `afterAccept`, only after processing (a create is then accepted). */
  | { readonly _tag: "Drop"; readonly afterAccept?: boolean }
  /** The request is processed, its answer replaced by truncated JSON. */
  | { readonly _tag: "MalformedJson" }
  /**
   * Polls, and model response creates: the video or the response object is reported with a status
   * the protocol does not define (default `paused`).
   */
  | { readonly _tag: "UnknownStatus"; readonly status?: string }
  /** Polls only: the video fails now with `error{code, message}`. */
  | { readonly _tag: "FailTask"; readonly code?: string; readonly message?: string }
  /** Streamed responses only: after the first text delta the stream stalls until the client leaves. */
  | { readonly _tag: "StallStream" }
  /** Streamed responses only: after the first text delta comes an `error` event, then the end. */
  | { readonly _tag: "StreamError"; readonly code?: string; readonly message?: string }
  /** Streamed responses only: after the first text delta the socket is destroyed. */
  | { readonly _tag: "CutStream" }

/** A multipart field as received: text, or a file with its name, media type and bytes. */
export type FormField = string | { readonly filename: string; readonly type: string; readonly bytes: Uint8Array }

/** One request as the emulator saw it. */
export interface RecordedRequest {
  readonly kind: RequestKind
  readonly method: string
  /** Path without the query. */
  readonly path: string
  readonly query: Readonly<Record<string, string>>
  /** Lower-cased names. */
  readonly headers: Readonly<Record<string, string>>
  /** Parsed JSON, or the text, of a non-multipart body. */
  readonly body?: unknown
  /** Named fields of a multipart body. */
  readonly fields?: Readonly<Record<string, FormField>>
}

/** Settings of an emulator. */
export interface EmulatorOptions {
  /** The key clients must send as `Authorization: Bearer <key>`. */
  readonly apiKey?: string
  /** The poll on which a video completes (1-based, per video). Earlier polls: `queued`, then `in_progress`. */
  readonly completeOnPoll?: number
  /** Value of `openai-poll-after-ms` on running videos. */
  readonly pollAfterMs?: number
  /** Path prefix of the API (the base URL is the origin plus this). */
  readonly basePath?: string
  /** The retrieve on which a background response completes (1-based, per response; default 2). Earlier: `in_progress`. */
  readonly completeOnRetrieve?: number
  /** The `seconds` a completed video reports (default: the requested), to tell the two apart in tests. */
  readonly reportedSeconds?: string
}

/** A running emulator. */
export interface Emulator extends Server.Controls<RequestKind, Fault, RecordedRequest> {
  /** The `{base}` to configure (`VENDOR_A_BASE_URL`). */
  readonly baseUrl: string
  readonly apiKey: string
  /** How many answers were cut short by a closed connection (the client left, or a `Drop`/`CutStream` fault). */
  readonly abortedRequests: Effect.Effect<number>
  /** Waits until at least `count` answers were cut short by a closed connection. */
  readonly awaitAborted: (count: number) => Effect.Effect<void>
  /** Forgets a stored response, as the vendor does some minutes after a background response ends. */
  readonly forget: (id: string) => Effect.Effect<void>
  /** Ids of the responses the emulator keeps, oldest first. */
  readonly storedResponses: Effect.Effect<ReadonlyArray<string>>
}

/** The text the emulator answers an input with: deterministic, several words long. */
export const answerText = (input: string): string => `Emulated answer: ${input.trim() === "" ? "(empty input)" : input.trim()}.`

/** The event types of a streamed response in order, up to the first text delta. */
export const streamPrelude = [
  "response.created",
  "response.in_progress",
  "response.output_item.added",
  "response.content_part.added"
] as const

interface Video {
  readonly id: string
  readonly model: string
  readonly seconds: string
  readonly size: string
  readonly createdAt: number
  status: string
  progress: number
  polls: number
  completedAt?: number
  error?: { readonly code: string; readonly message: string }
}

interface Reply {
  readonly status: number
  readonly headers: Record<string, string>
  readonly body: string | Uint8Array
}

const json = (status: number, value: unknown, headers: Record<string, string> = {}): Reply => ({
  status,
  headers: { "content-type": "application/json", ...headers },
  body: JSON.stringify(value)
})

const vendorError = (status: number, message: string, type: string, code: string | null, param: string | null = null) =>
  json(status, { error: { message, type, param, code } })

const SECONDS = ["4", "8", "12"]
const SIZES = ["720x1280", "1280x720"]
const REFERENCE_TYPES = ["image/jpeg", "image/png", "image/webp"]
const CREATE_FIELDS = new Set(["prompt", "model", "seconds", "size", "input_reference"])

const looksLike = (type: string, bytes: Uint8Array): boolean => {
  const ascii = (from: number, to: number) => Buffer.from(bytes.subarray(from, to)).toString("latin1")
  switch (type) {
    case "image/png":
      return bytes[0] === 0x89 && ascii(1, 4) === "PNG"
    case "image/jpeg":
      return bytes[0] === 0xff && bytes[1] === 0xd8
    case "image/webp":
      return ascii(0, 4) === "RIFF" && ascii(8, 12) === "WEBP"
    default:
      return false
  }
}

/** Fields of a create of the "responses" protocol (the vendor answers any other with 400). */
const RESPONSE_FIELDS = new Set([
  "model", "input", "instructions", "previous_response_id", "prompt", "max_output_tokens", "max_tool_calls",
  "temperature", "top_p", "top_logprobs", "parallel_tool_calls", "stream", "background", "store", "text", "tools",
  "tool_choice", "reasoning", "truncation", "metadata", "user", "include"
])

interface StoredResponse {
  readonly id: string
  readonly body: Readonly<Record<string, unknown>>
  readonly createdAt: number
  readonly text: string
  status: string
  retrievals: number
}


const words = (text: string) => text.split(/\s+/).filter((w) => w.length > 0).length

/** Starts an emulator on 127.0.0.1 (a free port); it stops when the scope closes. */
export const make = (options: EmulatorOptions = {}): Effect.Effect<Emulator, never, Scope.Scope> =>
  Effect.gen(function*() {
    const apiKey = options.apiKey ?? "vendor-a-emulator-key"
    const completeOnPoll = Math.max(1, options.completeOnPoll ?? 3)
    const pollAfterMs = options.pollAfterMs ?? 1000
    const basePath = (options.basePath ?? "/v1").replace(/\/+$/, "")

    const completeOnRetrieve = Math.max(1, options.completeOnRetrieve ?? 2)
    const videos = new Map<string, Video>()
    const responses = new Map<string, StoredResponse>()
    const recorder = new Server.Recorder<RequestKind, Fault, RecordedRequest>()
    // Requests whose answer a closed connection cut short.
    const aborted = new Server.Journal<http.IncomingMessage>()
    const timers = new Server.Timers()
    let nextId = 1

    const videoObject = (video: Video, status = video.status) => ({
      id: video.id,
      object: "video",
      model: video.model,
      status,
      progress: video.progress,
      created_at: video.createdAt,
      completed_at: video.completedAt ?? null,
      expires_at: video.completedAt !== undefined ? video.completedAt + 3600 : null,
      seconds: video.status === "completed" ? (options.reportedSeconds ?? video.seconds) : video.seconds,
      size: video.size,
      error: video.error ?? null
    })

    const running = (video: Video) => video.status === "queued" || video.status === "in_progress"

    const videoReply = (video: Video, status?: string) =>
      json(200, videoObject(video, status), running(video) ? { "openai-poll-after-ms": String(pollAfterMs) } : {})

    const authorized = (headers: http.IncomingHttpHeaders) => headers.authorization === `Bearer ${apiKey}`

    const unauthorized = () =>
      vendorError(401, "Incorrect API key provided.", "invalid_request_error", "invalid_api_key")

    const create = (contentType: string, fields: Readonly<Record<string, FormField>> | undefined): Reply => {
      if (!contentType.toLowerCase().startsWith("multipart/form-data") || fields === undefined) {
        return vendorError(400, "The body must be multipart/form-data.", "invalid_request_error", null)
      }
      const invalid = (param: string, message: string) =>
        vendorError(400, message, "invalid_request_error", "invalid_value", param)
      for (const name of Object.keys(fields)) {
        if (!CREATE_FIELDS.has(name)) return invalid(name, `Unknown parameter: '${name}'.`)
      }
      // `undefined`: absent; `null`: a file where text belongs.
      const text = (name: string): string | undefined | null => {
        const value = fields[name]
        return value === undefined ? undefined : typeof value === "string" ? value : null
      }
      const prompt = text("prompt")
      if (typeof prompt !== "string" || prompt.trim() === "") return invalid("prompt", "prompt is required.")
      const model = text("model")
      if (model === null || model === "") return invalid("model", "model must be a non-empty string.")
      const seconds = text("seconds")
      if (seconds === null || (seconds !== undefined && !SECONDS.includes(seconds))) {
        return invalid("seconds", `seconds must be one of ${SECONDS.join(", ")}.`)
      }
      const size = text("size")
      if (size === null || (size !== undefined && !SIZES.includes(size))) {
        return invalid("size", `size must be one of ${SIZES.join(", ")}.`)
      }
      const reference = fields["input_reference"]
      if (reference !== undefined) {
        if (typeof reference === "string") return invalid("input_reference", "input_reference must be a file.")
        if (!REFERENCE_TYPES.includes(reference.type)) {
          return invalid("input_reference", `input_reference must be one of ${REFERENCE_TYPES.join(", ")}.`)
        }
        if (!looksLike(reference.type, reference.bytes)) {
          return invalid("input_reference", `input_reference is not a valid ${reference.type} file.`)
        }
      }
      const video: Video = {
        id: `video_${(nextId++).toString(16).padStart(8, "0")}`,
        model: model ?? "default-video-model",
        seconds: seconds ?? "4",
        size: size ?? "720x1280",
        createdAt: Math.floor(Date.now() / 1000),
        status: "queued",
        progress: 0,
        polls: 0
      }
      videos.set(video.id, video)
      recorder.accept()
      return videoReply(video)
    }

    const advance = (video: Video) => {
      if (!running(video)) return
      video.polls += 1
      if (video.polls >= completeOnPoll) {
        video.status = "completed"
        video.progress = 100
        video.completedAt = Math.floor(Date.now() / 1000)
      } else if (video.polls > 1) {
        video.status = "in_progress"
        video.progress = Math.round((100 * (video.polls - 1)) / (completeOnPoll - 1))
      }
    }

    // -------------------------------------------------------------------------------------------
    // protocol "responses"
    // -------------------------------------------------------------------------------------------

    const messageItem = (r: StoredResponse, status: string, text: string | undefined) => ({
      id: `msg_${r.id.slice("resp_".length)}`,
      type: "message",
      status,
      role: "assistant",
      content: text === undefined ? [] : [{ type: "output_text", text, annotations: [] }]
    })

    const responseObject = (r: StoredResponse, status = r.status) => {
      const done = status === "completed"
      const inputTokens = words(Responses.inputText(r.body["input"]))
      const outputTokens = done ? words(r.text) : 0
      const body = r.body
      return {
        id: r.id,
        object: "response",
        created_at: r.createdAt,
        status,
        background: body["background"] === true,
        error: null,
        incomplete_details: null,
        instructions: body["instructions"] ?? null,
        max_output_tokens: body["max_output_tokens"] ?? null,
        model: body["model"],
        output: done ? [messageItem(r, "completed", r.text)] : [],
        parallel_tool_calls: body["parallel_tool_calls"] ?? true,
        previous_response_id: body["previous_response_id"] ?? null,
        store: body["store"] ?? true,
        temperature: body["temperature"] ?? 1,
        text: body["text"] ?? { format: { type: "text" } },
        tool_choice: body["tool_choice"] ?? "auto",
        tools: body["tools"] ?? [],
        top_p: body["top_p"] ?? 1,
        truncation: body["truncation"] ?? "disabled",
        usage: done
          ? {
            input_tokens: inputTokens,
            input_tokens_details: { cached_tokens: 0 },
            output_tokens: outputTokens,
            output_tokens_details: { reasoning_tokens: 0 },
            total_tokens: inputTokens + outputTokens
          }
          : null,
        user: body["user"] ?? null,
        metadata: body["metadata"] ?? {}
      }
    }

    const createResponse = (body: unknown): { readonly reply: Reply } | { readonly response: StoredResponse } => {
      const invalid = (param: string | null, message: string) =>
        ({ reply: vendorError(400, message, "invalid_request_error", param === null ? null : "invalid_value", param) })
      if (typeof body !== "object" || body === null || Array.isArray(body)) return invalid(null, "The body must be a JSON object.")
      const fields = body as Record<string, unknown>
      for (const name of Object.keys(fields)) {
        if (!RESPONSE_FIELDS.has(name)) return invalid(name, `Unknown parameter: '${name}'.`)
      }
      if (typeof fields["model"] !== "string" || fields["model"] === "") return invalid("model", "Missing required parameter: 'model'.")
      const background = fields["background"] === true
      if (background && fields["store"] === false) return invalid("background", "Background mode requires store=true.")
      const previous = fields["previous_response_id"]
      if (typeof previous === "string" && !responses.has(previous)) {
        return invalid("previous_response_id", `Previous response with id '${previous}' not found.`)
      }
      const response: StoredResponse = {
        id: `resp_${(nextId++).toString(16).padStart(24, "0")}`,
        body: fields,
        createdAt: Math.floor(Date.now() / 1000),
        text: answerText(Responses.inputText(fields["input"])),
        status: background ? "queued" : "completed",
        retrievals: 0
      }
      if (background || fields["store"] !== false) responses.set(response.id, response)
      return { response }
    }

    const retrieveResponse = (id: string): Reply => {
      const r = responses.get(id)
      if (r === undefined) return vendorError(404, `Response with id '${id}' not found.`, "invalid_request_error", null)
      if (r.status === "queued" || r.status === "in_progress") {
        r.retrievals += 1
        r.status = r.retrievals >= completeOnRetrieve ? "completed" : "in_progress"
      }
      return json(200, responseObject(r))
    }

    const cancelResponse = (id: string): Reply => {
      const r = responses.get(id)
      if (r === undefined) return vendorError(404, `Response with id '${id}' not found.`, "invalid_request_error", null)
      if (r.body["background"] !== true) {
        return vendorError(400, "Only responses created with background=true can be cancelled.", "invalid_request_error", null)
      }
      if (r.status === "queued" || r.status === "in_progress") r.status = "cancelled"
      return json(200, responseObject(r))
    }

    const deleteResponse = (id: string): Reply => {
      if (!responses.delete(id)) return vendorError(404, `Response with id '${id}' not found.`, "invalid_request_error", null)
      return json(200, { id, object: "response", deleted: true })
    }

    const frame = (event: Record<string, unknown>) => `event: ${event["type"]}\ndata: ${JSON.stringify(event)}\n\n`

    /** Every event of a streamed response, in the protocol's order. */
    const streamEvents = (r: StoredResponse) => {
      let sequence = 0
      const event = (type: string, fields: Record<string, unknown>) => ({ type, sequence_number: sequence++, ...fields })
      const item = messageItem(r, "in_progress", undefined)
      const at = { item_id: item.id, output_index: 0, content_index: 0 }
      const part = { type: "output_text", text: "", annotations: [] }
      const deltas = r.text.split(/(?<=\s)/)
      return [
        event("response.created", { response: responseObject(r, r.body["background"] === true ? "queued" : "in_progress") }),
        event("response.in_progress", { response: responseObject(r, "in_progress") }),
        event("response.output_item.added", { output_index: 0, item }),
        event("response.content_part.added", { ...at, part }),
        ...deltas.map((delta) => event("response.output_text.delta", { ...at, delta, logprobs: [] })),
        event("response.output_text.done", { ...at, text: r.text, logprobs: [] }),
        event("response.content_part.done", { ...at, part: { ...part, text: r.text } }),
        event("response.output_item.done", { output_index: 0, item: messageItem(r, "completed", r.text) }),
        event("response.completed", { response: responseObject(r, "completed") })
      ]
    }

    const streamResponse = (res: http.ServerResponse, r: StoredResponse, fault: Fault | undefined) => {
      r.status = "in_progress"
      const events = streamEvents(r)
      res.on("close", () => {
        // A background response goes on without its client; any other is cancelled with it.
        if (!res.writableEnded) r.status = r.body["background"] === true ? "completed" : "cancelled"
      })
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" })
      const firstDelta = events.findIndex((e) => e.type === "response.output_text.delta")
      for (const [index, event] of events.entries()) {
        if (index === firstDelta && fault?._tag === "CutStream") {
          // Destroyed once what came before has left, so the client sees a stream break off.
          return void res.write(frame(event), () => res.socket?.destroy())
        }
        res.write(frame(event))
        if (index !== firstDelta) continue
        switch (fault?._tag) {
          case "StallStream":
            return
          case "StreamError":
            return void res.end(frame({
              type: "error",
              sequence_number: index + 1,
              code: fault.code ?? "server_error",
              message: fault.message ?? "The server had an error while processing your request.",
              param: null
            }))
        }
      }
      r.status = "completed"
      res.end()
    }

    /** `GET …/responses/{id}?stream=true[&starting_after=n]`: a background response's events after `n`. */
    const resumeStream = (res: http.ServerResponse, id: string, startingAfter: string | null) => {
      const r = responses.get(id)
      if (r === undefined) return send(res, vendorError(404, `Response with id '${id}' not found.`, "invalid_request_error", null))
      if (r.body["background"] !== true) {
        return send(res, vendorError(400, "Only background responses can be streamed again.", "invalid_request_error", null, "stream"))
      }
      if (r.status === "cancelled") {
        return send(res, vendorError(400, "Cannot stream a cancelled response.", "invalid_request_error", null))
      }
      const after = startingAfter === null ? -1 : Number(startingAfter)
      if (!Number.isInteger(after) || after < -1) {
        return send(res, vendorError(400, "Invalid 'starting_after': must be an integer.", "invalid_request_error", "invalid_value", "starting_after"))
      }
      r.status = "completed"
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" })
      for (const event of streamEvents(r)) if (event.sequence_number > after) res.write(frame(event))
      res.end()
    }

    const route = (method: string, path: string): { kind: RequestKind; id?: string } => {
      if (!path.startsWith(`${basePath}/`)) return { kind: "other" }
      const rest = path.slice(basePath.length)
      if (method === "POST" && rest === "/responses") return { kind: "responses.create" }
      const response = /^\/responses\/([^/]+)$/.exec(rest)
      if (method === "GET" && response !== null) return { kind: "responses.retrieve", id: decodeURIComponent(response[1]!) }
      if (method === "DELETE" && response !== null) return { kind: "responses.delete", id: decodeURIComponent(response[1]!) }
      const cancel = /^\/responses\/([^/]+)\/cancel$/.exec(rest)
      if (method === "POST" && cancel !== null) return { kind: "responses.cancel", id: decodeURIComponent(cancel[1]!) }
      if (method === "POST" && rest === "/videos") return { kind: "submit" }
      const content = /^\/videos\/([^/]+)\/content$/.exec(rest)
      if (method === "GET" && content !== null) return { kind: "download", id: decodeURIComponent(content[1]!) }
      const one = /^\/videos\/([^/]+)$/.exec(rest)
      if (method === "GET" && one !== null) return { kind: "poll", id: decodeURIComponent(one[1]!) }
      return { kind: "other" }
    }

    const answer = (
      kind: RequestKind,
      id: string | undefined,
      req: http.IncomingMessage,
      fields: Readonly<Record<string, FormField>> | undefined,
      fault: Fault | undefined,
      body: unknown
    ): Reply => {
      if (!authorized(req.headers)) return unauthorized()
      switch (kind) {
        case "responses.create": {
          const created = createResponse(body)
          return "reply" in created ? created.reply : json(200, responseObject(created.response))
        }
        case "responses.retrieve":
          return retrieveResponse(id!)
        case "responses.cancel":
          return cancelResponse(id!)
        case "responses.delete":
          return deleteResponse(id!)
        case "submit":
          return create(req.headers["content-type"] ?? "", fields)
        case "poll": {
          const video = videos.get(id!)
          if (video === undefined) return vendorError(404, "Video not found.", "invalid_request_error", "not_found", "id")
          if (fault?._tag === "UnknownStatus") return videoReply(video, fault.status ?? "paused")
          if (fault?._tag === "FailTask" && running(video)) {
            video.status = "failed"
            video.error = { code: fault.code ?? "internal_error", message: fault.message ?? "Video generation failed." }
          }
          advance(video)
          return videoReply(video)
        }
        case "download": {
          const video = videos.get(id!)
          if (video === undefined) return vendorError(404, "Video not found.", "invalid_request_error", "not_found", "id")
          if (video.status !== "completed") {
            return vendorError(400, "Video is not ready yet.", "invalid_request_error", "video_not_ready")
          }
          const mp4 = SampleMedia.mp4()
          return { status: 200, headers: { "content-type": "video/mp4", "content-length": String(mp4.length) }, body: mp4 }
        }
        case "other":
          return vendorError(404, `Invalid URL (${req.method} ${req.url})`, "invalid_request_error", null)
      }
    }

    const send = (res: http.ServerResponse, reply: Reply) => {
      res.writeHead(reply.status, reply.headers)
      res.end(reply.body)
    }

    const readForm = async (contentType: string, raw: Buffer) => {
      if (!contentType.toLowerCase().startsWith("multipart/form-data")) return undefined
      try {
        return await new Request("http://emulator/", { method: "POST", headers: { "content-type": contentType }, body: raw })
          .formData()
      } catch {
        return undefined
      }
    }

    const fieldsOf = async (form: FormData) => {
      const fields: Record<string, FormField> = {}
      for (const [name, value] of form.entries()) {
        fields[name] = typeof value === "string"
          ? value
          : { filename: value.name, type: value.type, bytes: new Uint8Array(await value.arrayBuffer()) }
      }
      return fields
    }

    const handle = async (req: http.IncomingMessage, res: http.ServerResponse) => {
      const incoming = await Server.readIncoming(req)
      const { method, url } = incoming
      const { id, kind } = route(method, url.pathname)
      const contentType = req.headers["content-type"] ?? ""
      const form = await readForm(contentType, incoming.raw)
      const fields = form === undefined ? undefined : await fieldsOf(form)
      const body = form === undefined ? incoming.body : undefined
      recorder.record({
        kind,
        method,
        path: url.pathname,
        query: Object.fromEntries(url.searchParams),
        headers: incoming.headers,
        ...(body !== undefined ? { body } : {}),
        ...(fields !== undefined ? { fields } : {})
      })

      const fault = recorder.take(kind)
      switch (fault?._tag) {
        case "RateLimited": {
          const headers: Record<string, string> = { "content-type": "application/json" }
          const retryAfter = fault.retryAfterSeconds ?? (fault.resetRequests === undefined ? 2 : undefined)
          if (retryAfter !== undefined) headers["retry-after"] = String(retryAfter)
          if (fault.resetRequests !== undefined) {
            headers["x-ratelimit-remaining-requests"] = "0"
            headers["x-ratelimit-reset-requests"] = fault.resetRequests
          }
          return send(res, { ...vendorError(429, "Rate limit reached for requests.", "requests", "rate_limit_exceeded"), headers })
        }
        case "Unavailable": {
          const reply = vendorError(503, "The server is overloaded.", "server_error", null)
          return send(res, fault.retryAfterSeconds === undefined ? reply : {
            ...reply,
            headers: { ...reply.headers, "retry-after": String(fault.retryAfterSeconds) }
          })
        }
        case "HttpError":
          return send(
            res,
            vendorError(fault.status, fault.message ?? "Injected error.", fault.status >= 500 ? "server_error" : "invalid_request_error", fault.code ?? null)
          )
        case "Drop":
          if (fault.afterAccept === true) answer(kind, id, req, fields, fault, body)
          return void req.socket.destroy()
      }
      if (kind === "responses.create" && authorized(req.headers) && (body as { stream?: unknown } | undefined)?.stream === true) {
        const created = createResponse(body)
        if ("reply" in created) return send(res, created.reply)
        return streamResponse(res, created.response, fault)
      }
      if (kind === "responses.retrieve" && authorized(req.headers) && url.searchParams.get("stream") === "true") {
        return resumeStream(res, id!, url.searchParams.get("starting_after"))
      }
      const reply = answer(kind, id, req, fields, fault, body)
      if (fault?._tag === "MalformedJson") {
        return send(res, { status: 200, headers: { "content-type": "application/json" }, body: "{\"id\": \"video_" })
      }
      if (fault?._tag === "UnknownStatus" && kind === "responses.create" && reply.status === 200) {
        const object = JSON.parse(String(reply.body)) as Record<string, unknown>
        return send(res, json(200, { ...object, status: fault.status ?? "paused" }))
      }
      if (fault?._tag === "Slow") {
        return timers.after(fault.delayMs, () => {
          if (!res.destroyed) send(res, reply)
        })
      }
      send(res, reply)
    }

    const server = http.createServer((req, res) => {
      res.on("close", () => {
        if (!res.writableEnded) aborted.add(req)
      })
      handle(req, res).catch(() => {
        if (!res.headersSent) send(res, vendorError(500, "Emulator error.", "server_error", null))
        else res.destroy()
      })
    })

    const origin = yield* Server.listen(server, timers)

    const emulator: Emulator = {
      baseUrl: `${origin}${basePath}`,
      apiKey,
      ...recorder.controls,
      abortedRequests: aborted.size,
      awaitAborted: aborted.awaitCount,
      forget: (id) => Effect.sync(() => void responses.delete(id)),
      storedResponses: Effect.sync(() => [...responses.keys()])
    }
    return emulator
  })

/**
 * An in-process vendor-a upstream for integration tests: protocol "videos" as UPSTREAMS.md describes
 * it (multipart create, polling with `openai-poll-after-ms`, MP4 content behind the key), written
 * from that description rather than from the adapter. Videos complete on a configurable poll and
 * carry a real MP4. Faults can be switched on for the next requests of a kind, every request is
 * logged, and accepted creates are counted so a test can assert exactly-once submission.
 */
import { SampleMedia } from "@genway/core"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import * as http from "node:http"
import type { AddressInfo } from "node:net"

/** Which kind of request a fault applies to. `other` is anything outside the protocol. */
export type RequestKind = "submit" | "poll" | "download" | "other"

/** A misbehaviour of the emulated vendor, applied to the next request(s) of a kind. */
export type Fault =
  /** 429 `rate_limit_exceeded` with `Retry-After` (seconds, default 2); the request is not processed. */
  | { readonly _tag: "RateLimited"; readonly retryAfterSeconds?: number }
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
  /** Polls only: the video is reported with a status the protocol does not define (default `paused`). */
  | { readonly _tag: "UnknownStatus"; readonly status?: string }
  /** Polls only: the video fails now with `error{code, message}`. */
  | { readonly _tag: "FailTask"; readonly code?: string; readonly message?: string }

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
}

/** A running emulator. */
export interface Emulator {
  /** The `{base}` to configure (`VENDOR_A_BASE_URL`). */
  readonly baseUrl: string
  readonly apiKey: string
  /** Applies `fault` to the next `times` requests of `kind` (queued after earlier injections). */
  readonly inject: (kind: RequestKind, fault: Fault, times?: number) => Effect.Effect<void>
  /** Every request so far, oldest first. */
  readonly requests: Effect.Effect<ReadonlyArray<RecordedRequest>>
  /** How many creates were accepted (videos created). */
  readonly acceptedSubmits: Effect.Effect<number>
  /** Waits until at least `count` requests have arrived. */
  readonly awaitRequests: (count: number) => Effect.Effect<void>
}

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

/** Starts an emulator on 127.0.0.1 (a free port); it stops when the scope closes. */
export const make = (options: EmulatorOptions = {}): Effect.Effect<Emulator, never, Scope.Scope> =>
  Effect.gen(function*() {
    const apiKey = options.apiKey ?? "vendor-a-emulator-key"
    const completeOnPoll = Math.max(1, options.completeOnPoll ?? 3)
    const pollAfterMs = options.pollAfterMs ?? 1000
    const basePath = (options.basePath ?? "/v1").replace(/\/+$/, "")

    const videos = new Map<string, Video>()
    const log: Array<RecordedRequest> = []
    const faults: Array<{ kind: RequestKind; fault: Fault; remaining: number }> = []
    const waiters = new Set<() => unknown>()
    const timers = new Set<NodeJS.Timeout>()
    let accepted = 0
    let nextId = 1

    const takeFault = (kind: RequestKind): Fault | undefined => {
      const index = faults.findIndex((f) => f.kind === kind)
      if (index < 0) return undefined
      const entry = faults[index]!
      entry.remaining -= 1
      if (entry.remaining <= 0) faults.splice(index, 1)
      return entry.fault
    }

    const videoObject = (video: Video, status = video.status) => ({
      id: video.id,
      object: "video",
      model: video.model,
      status,
      progress: video.progress,
      created_at: video.createdAt,
      completed_at: video.completedAt ?? null,
      expires_at: video.completedAt !== undefined ? video.completedAt + 3600 : null,
      seconds: video.seconds,
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
      accepted += 1
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

    const route = (method: string, path: string): { kind: RequestKind; id?: string } => {
      if (!path.startsWith(`${basePath}/`)) return { kind: "other" }
      const rest = path.slice(basePath.length)
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
      fault: Fault | undefined
    ): Reply => {
      if (!authorized(req.headers)) return unauthorized()
      switch (kind) {
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
      const chunks: Array<Buffer> = []
      for await (const chunk of req) chunks.push(chunk as Buffer)
      const raw = Buffer.concat(chunks)
      const url = new URL(req.url ?? "/", "http://emulator")
      const method = req.method ?? "GET"
      const { id, kind } = route(method, url.pathname)
      const contentType = req.headers["content-type"] ?? ""
      const form = await readForm(contentType, raw)
      const fields = form === undefined ? undefined : await fieldsOf(form)
      const headers: Record<string, string> = {}
      for (const [name, value] of Object.entries(req.headers)) {
        if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(", ") : value
      }
      let body: unknown = undefined
      if (form === undefined && raw.length > 0) {
        const text = raw.toString("utf8")
        try {
          body = JSON.parse(text)
        } catch {
          body = text
        }
      }
      log.push({
        kind,
        method,
        path: url.pathname,
        query: Object.fromEntries(url.searchParams),
        headers,
        ...(body !== undefined ? { body } : {}),
        ...(fields !== undefined ? { fields } : {})
      })
      for (const wake of [...waiters]) wake()

      const fault = takeFault(kind)
      switch (fault?._tag) {
        case "RateLimited":
          return send(res, {
            ...vendorError(429, "Rate limit reached for requests.", "requests", "rate_limit_exceeded"),
            headers: { "content-type": "application/json", "retry-after": String(fault.retryAfterSeconds ?? 2) }
          })
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
          if (fault.afterAccept === true) answer(kind, id, req, fields, fault)
          return void req.socket.destroy()
      }
      const reply = answer(kind, id, req, fields, fault)
      if (fault?._tag === "MalformedJson") {
        return send(res, { status: 200, headers: { "content-type": "application/json" }, body: "{\"id\": \"video_" })
      }
      if (fault?._tag === "Slow") {
        const timer = setTimeout(() => {
          timers.delete(timer)
          if (!res.destroyed) send(res, reply)
        }, fault.delayMs)
        timers.add(timer)
        return
      }
      send(res, reply)
    }

    const server = http.createServer((req, res) => {
      handle(req, res).catch(() => {
        if (!res.headersSent) send(res, vendorError(500, "Emulator error.", "server_error", null))
        else res.destroy()
      })
    })

    const port = yield* Effect.acquireRelease(
      Effect.async<number>((resume) => {
        server.listen(0, "127.0.0.1", () => resume(Effect.succeed((server.address() as AddressInfo).port)))
      }),
      () =>
        Effect.async<void>((resume) => {
          for (const timer of timers) clearTimeout(timer)
          timers.clear()
          server.closeAllConnections()
          server.close(() => resume(Effect.void))
        })
    )

    const emulator: Emulator = {
      baseUrl: `http://127.0.0.1:${port}${basePath}`,
      apiKey,
      inject: (kind, fault, times = 1) => Effect.sync(() => void faults.push({ kind, fault, remaining: times })),
      requests: Effect.sync(() => [...log]),
      acceptedSubmits: Effect.sync(() => accepted),
      awaitRequests: (count) =>
        Effect.async<void>((resume) => {
          const check = () => {
            if (log.length < count) return false
            waiters.delete(check)
            resume(Effect.void)
            return true
          }
          if (check()) return
          waiters.add(check)
          return Effect.sync(() => void waiters.delete(check))
        })
    }
    return emulator
  })

/**
 * An in-process vendor-d upstream for integration tests: protocol "long-running" as UPSTREAMS.md
 * describes it (`:predictLongRunning`, operation polling, video URIs that need the key and answer
 * with a redirect to a separate storage origin), written from that description rather than from the
 * adapter. Operations finish on a configurable poll and carry a real MP4. Faults can be switched on
 * for the next requests of a kind, every request is logged, and accepted creates are counted so a
 * test can assert exactly-once submission.
 */
import { SampleMedia } from "@genway/core"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import { randomBytes } from "node:crypto"
import * as http from "node:http"
import type { AddressInfo } from "node:net"

/**
 * Which kind of request a fault applies to: `download` is the key-protected video URI, `blob` the
 * storage URL it redirects to, `other` anything outside the protocol.
 */
export type RequestKind = "submit" | "poll" | "download" | "blob" | "other"

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
}

/** A running emulator. */
export interface Emulator {
  /** The `{base}` to configure (`VENDOR_D_BASE_URL`). */
  readonly baseUrl: string
  /** Origin of the storage host the video URIs redirect to. */
  readonly storageOrigin: string
  readonly apiKey: string
  /** Applies `fault` to the next `times` requests of `kind` (queued after earlier injections). */
  readonly inject: (kind: RequestKind, fault: Fault, times?: number) => Effect.Effect<void>
  /** Every request so far, on either host, oldest first. */
  readonly requests: Effect.Effect<ReadonlyArray<RecordedRequest>>
  /** How many creates were accepted (operations started). */
  readonly acceptedSubmits: Effect.Effect<number>
  /** Waits until at least `count` requests have arrived. */
  readonly awaitRequests: (count: number) => Effect.Effect<void>
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

const listen = (server: http.Server) =>
  Effect.acquireRelease(
    Effect.async<number>((resume) => {
      server.listen(0, "127.0.0.1", () => resume(Effect.succeed((server.address() as AddressInfo).port)))
    }),
    () =>
      Effect.async<void>((resume) => {
        server.closeAllConnections()
        server.close(() => resume(Effect.void))
      })
  )

/** Starts an emulator (API and storage host) on 127.0.0.1 (free ports); it stops when the scope closes. */
export const make = (options: EmulatorOptions = {}): Effect.Effect<Emulator, never, Scope.Scope> =>
  Effect.gen(function*() {
    const apiKey = options.apiKey ?? "vendor-d-emulator-key"
    const completeOnPoll = Math.max(1, options.completeOnPoll ?? 2)
    const basePath = (options.basePath ?? "/v1beta").replace(/\/+$/, "")

    const operations = new Map<string, Operation>()
    const files = new Map<string, string>() // file id → storage token
    const log: Array<RecordedRequest> = []
    const faults: Array<{ kind: RequestKind; fault: Fault; remaining: number }> = []
    const waiters = new Set<() => unknown>()
    const timers = new Set<NodeJS.Timeout>()
    let accepted = 0
    let nextId = 1
    let apiOrigin = ""
    let storageOrigin = ""

    const takeFault = (kind: RequestKind): Fault | undefined => {
      const index = faults.findIndex((f) => f.kind === kind)
      if (index < 0) return undefined
      const entry = faults[index]!
      entry.remaining -= 1
      if (entry.remaining <= 0) faults.splice(index, 1)
      return entry.fault
    }

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
      | { readonly kind: "other" }

    const apiRoute = (method: string, path: string): Route => {
      if (!path.startsWith(`${basePath}/`)) return { kind: "other" }
      const rest = decodeURIComponent(path.slice(basePath.length + 1))
      const create = /^models\/([^/:]+):predictLongRunning$/.exec(rest)
      if (method === "POST" && create !== null) return { kind: "submit", model: create[1]! }
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
          accepted += 1
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
        case "other":
          return vendorError(404, `The requested URL ${url.pathname} was not found on this server.`)
      }
    }

    const send = (res: http.ServerResponse, reply: Reply) => {
      res.writeHead(reply.status, reply.headers)
      res.end(reply.body)
    }

    const handler = (host: "api" | "storage") => async (req: http.IncomingMessage, res: http.ServerResponse) => {
      const chunks: Array<Buffer> = []
      for await (const chunk of req) chunks.push(chunk as Buffer)
      const raw = Buffer.concat(chunks)
      const url = new URL(req.url ?? "/", "http://emulator")
      const method = req.method ?? "GET"
      const blob = /^\/blobs\/([^/]+)$/.exec(url.pathname)
      const route: Route = host === "storage"
        ? blob !== null && method === "GET" ? { kind: "blob", file: blob[1]! } : { kind: "other" }
        : apiRoute(method, url.pathname)
      const headers: Record<string, string> = {}
      for (const [name, value] of Object.entries(req.headers)) {
        if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(", ") : value
      }
      let body: unknown = undefined
      if (raw.length > 0) {
        const text = raw.toString("utf8")
        try {
          body = JSON.parse(text)
        } catch {
          body = text
        }
      }
      log.push({
        kind: route.kind,
        method,
        path: url.pathname,
        query: Object.fromEntries(url.searchParams),
        headers,
        ...(body !== undefined ? { body } : {})
      })
      for (const wake of [...waiters]) wake()

      const fault = takeFault(route.kind)
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
          return void req.socket.destroy()
      }
      const reply = answer(route, req, url, body, fault)
      if (fault?._tag === "MalformedJson") {
        return send(res, { status: 200, headers: { "content-type": "application/json" }, body: "{\"name\": \"models/" })
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

    const serve = (host: "api" | "storage") => {
      const handle = handler(host)
      return http.createServer((req, res) => {
        handle(req, res).catch(() => {
          if (!res.headersSent) send(res, vendorError(500, "Emulator error."))
          else res.destroy()
        })
      })
    }

    const apiPort = yield* listen(serve("api"))
    const storagePort = yield* listen(serve("storage"))
    apiOrigin = `http://127.0.0.1:${apiPort}`
    storageOrigin = `http://127.0.0.1:${storagePort}`
    // Runs before the servers close: held answers are dropped with their connections.
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        for (const timer of timers) clearTimeout(timer)
        timers.clear()
      })
    )

    const emulator: Emulator = {
      baseUrl: `${apiOrigin}${basePath}`,
      storageOrigin,
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

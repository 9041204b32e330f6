/**
 * An in-process emulator of vendor-b's "async-task" API, written from UPSTREAMS.md (not from the
 * adapter), for integration tests: bearer auth, the mandatory `X-DashScope-Async: enable` header on
 * creates, nested `{model, input, parameters}` bodies, tasks kept in memory that finish on the Nth
 * poll (or after a delay on the Effect clock), real result media behind signed-looking URLs, and
 * fault switches for the next N requests of a kind.
 */
import { randomUUID } from "node:crypto"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import { Http } from "@genway/adapter-kit"
import { Server } from "@genway/adapter-kit/testing"
import { SampleMedia } from "@genway/core"

/** Which requests a fault applies to: task creation, task queries, or result media. */
export type RequestKind = "submit" | "poll" | "download"

/** A request as the emulator saw it. */
export type LoggedRequest = Server.LoggedRequest<RequestKind>

/** What the next request(s) of a kind get instead of (or on top of) a normal answer. */
export type Fault =
  /** `Slow`, `Drop` (optionally `afterAccept`) and `MalformedJson`, as every task emulator has them. */
  | Server.TransportFault
  /** 429 `Throttling.RateQuota`, with `Retry-After` when `retryAfterSeconds` is given. */
  | { readonly _tag: "RateLimited"; readonly retryAfterSeconds?: number }
  /** 503 overload, with `Retry-After` when `retryAfterSeconds` is given. */
  | { readonly _tag: "Unavailable"; readonly retryAfterSeconds?: number }
  /** Any vendor error answer, e.g. 400 `DataInspectionFailed`. */
  | { readonly _tag: "HttpError"; readonly status: number; readonly code: string; readonly message: string }
  /** A poll reports this `task_status` (default: one no documentation lists). */
  | { readonly _tag: "ReportStatus"; readonly status?: string }
  /** The task (created by this submit, or polled now) ends `FAILED` with this `output.code`/`message`. */
  | { readonly _tag: "FailTask"; readonly code?: string; readonly message?: string }

/** Emulator settings; every field has a default. Tasks report `PENDING`, `RUNNING`, then their final state. */
export interface EmulatorOptions extends Server.TaskOptions {
  /** The accepted API key; default `"emulator-key"`. */
  readonly apiKey?: string
  /** Image results as `output.choices[].message.content[].image` (default) or `output.results[].url`. */
  readonly imageResults?: "choices" | "results"
}

/** A task the emulator holds. */
export interface EmulatedTask {
  readonly taskId: string
  readonly createPath: string
  readonly body: unknown
  readonly polls: number
  readonly status: string
}

/** A running emulator. */
export interface Emulator extends Server.Controls<RequestKind, Fault> {
  /** The `{base}` to configure the adapter with (`http://127.0.0.1:<port>/api/v1`). */
  readonly baseUrl: string
  readonly apiKey: string
  readonly tasks: Effect.Effect<ReadonlyArray<EmulatedTask>>
  /** Requests whose answer found the client gone (it timed out or died while the answer was held). */
  readonly unanswered: Effect.Effect<ReadonlyArray<LoggedRequest>>
}

const createPaths: Readonly<Record<string, "video" | "image">> = {
  "/api/v1/services/aigc/video-generation/video-synthesis": "video",
  "/api/v1/services/aigc/image2video/video-synthesis": "video",
  "/api/v1/services/aigc/image-generation/generation": "image"
}

interface Task {
  readonly taskId: string
  readonly createPath: string
  readonly result: "video" | "image"
  readonly body: Record<string, unknown>
  readonly createdAt: number
  polls: number
  status: string
  failure?: { readonly code: string; readonly message: string }
  endedAt?: number
}

const vendorTime = (ms: number) => new Date(ms).toISOString().replace("T", " ").replace("Z", "")

const error = (status: number, code: string, message: string, headers?: Record<string, string>): Server.Reply => ({
  _tag: "Json",
  status,
  body: { request_id: randomUUID(), code, message },
  ...(headers !== undefined ? { headers } : {})
})

/** Starts an emulator on 127.0.0.1 (a free port) for the life of the scope. */
export const make = (options: EmulatorOptions = {}): Effect.Effect<Emulator, never, Scope.Scope> =>
  Effect.gen(function*() {
    const clock = yield* Effect.clock
    const now = () => clock.unsafeCurrentTimeMillis()
    const apiKey = options.apiKey ?? "emulator-key"
    const isDue = Server.isDue(options)
    const recorder = new Server.Recorder<RequestKind, Fault>()
    const tasks = new Map<string, Task>()
    let origin = ""

    const classify = (method: string, path: string): RequestKind | "other" =>
      method === "POST" && createPaths[path] !== undefined
        ? "submit"
        : method === "GET" && path.startsWith("/api/v1/tasks/")
        ? "poll"
        : method === "GET" && (path.startsWith("/media/") || path.startsWith("/signed/"))
        ? "download"
        : "other"

    const authorized = (request: LoggedRequest) => request.headers["authorization"] === `Bearer ${apiKey}`

    const create = (request: LoggedRequest, fault: Fault | undefined): Server.Reply => {
      if (!authorized(request)) return error(401, "InvalidApiKey", "Invalid API-key provided.")
      if (request.headers["x-dashscope-async"] !== "enable") {
        return error(403, "AccessDenied", "current user api does not support synchronous calls")
      }
      const body = request.body
      if (!Http.isRecord(body)) return error(400, "InvalidParameter", "The request body is not valid JSON.")
      if (typeof body["model"] !== "string" || body["model"] === "") {
        return error(400, "InvalidParameter", "Model not specified.")
      }
      const input = body["input"]
      if (!Http.isRecord(input)) return error(400, "InvalidParameter", "Field required: input")
      if (body["parameters"] !== undefined && !Http.isRecord(body["parameters"])) {
        return error(400, "InvalidParameter", "parameters must be an object")
      }
      const result = createPaths[request.path]!
      if (result === "image") {
        const messages = input["messages"]
        const first = Array.isArray(messages) && Http.isRecord(messages[0]) ? messages[0]["content"] : undefined
        if (!Array.isArray(first) || !first.some((part) => Http.isRecord(part) && typeof part["text"] === "string")) {
          return error(400, "InvalidParameter", "Field required: input.messages[0].content[].text")
        }
      }
      const taskId = randomUUID()
      const task: Task = { taskId, createPath: request.path, result, body, createdAt: now(), polls: 0, status: "PENDING" }
      if (fault?._tag === "FailTask") {
        task.failure = { code: fault.code ?? "InternalError.Algo", message: fault.message ?? "Algorithm process error." }
      }
      tasks.set(taskId, task)
      recorder.accept()
      return { _tag: "Json", status: 200, body: { request_id: randomUUID(), output: { task_id: taskId, task_status: "PENDING" } } }
    }

    const mediaUrls = (task: Task): ReadonlyArray<string> => {
      const prefix = options.redirectMedia === true ? "signed" : "media"
      const from = options.mediaOrigin ?? origin
      if (task.result === "video") return [`${from}/${prefix}/${task.taskId}/0.mp4?Expires=86400&Signature=emulated`]
      const n = Http.isRecord(task.body["parameters"]) && typeof task.body["parameters"]["n"] === "number"
        ? Math.min(4, Math.max(1, task.body["parameters"]["n"]))
        : 1
      return Array.from({ length: n }, (_, i) => `${from}/${prefix}/${task.taskId}/${i}.png?Expires=86400&Signature=emulated`)
    }

    const query = (request: LoggedRequest, fault: Fault | undefined): Server.Reply => {
      if (!authorized(request)) return error(401, "InvalidApiKey", "Invalid API-key provided.")
      const taskId = decodeURIComponent(request.path.slice("/api/v1/tasks/".length))
      const task = tasks.get(taskId)
      if (task === undefined) {
        return { _tag: "Json", status: 200, body: { request_id: randomUUID(), output: { task_id: taskId, task_status: "UNKNOWN" } } }
      }
      task.polls++
      if (fault?._tag === "FailTask") {
        task.failure = { code: fault.code ?? "InternalError.Algo", message: fault.message ?? "Algorithm process error." }
        task.status = "FAILED"
      }
      if (task.status !== "SUCCEEDED" && task.status !== "FAILED" && task.status !== "CANCELED") {
        task.status = isDue(task, now()) ? (task.failure !== undefined ? "FAILED" : "SUCCEEDED") : task.polls === 1 ? "PENDING" : "RUNNING"
      }
      if ((task.status === "SUCCEEDED" || task.status === "FAILED") && task.endedAt === undefined) task.endedAt = now()
      const output: Record<string, unknown> = {
        task_id: task.taskId,
        task_status: fault?._tag === "ReportStatus" ? (fault.status ?? "RECALIBRATING") : task.status,
        submit_time: vendorTime(task.createdAt)
      }
      if (task.endedAt !== undefined && fault?._tag !== "ReportStatus") {
        output["end_time"] = vendorTime(task.endedAt)
        if (task.status === "FAILED" && task.failure !== undefined) {
          output["code"] = task.failure.code
          output["message"] = task.failure.message
        } else if (task.result === "video") {
          output["video_url"] = mediaUrls(task)[0]
        } else if (options.imageResults === "results") {
          output["results"] = mediaUrls(task).map((url) => ({ url }))
        } else {
          output["choices"] = mediaUrls(task).map((image) => ({
            finish_reason: "stop",
            message: { role: "assistant", content: [{ image, type: "image" }] }
          }))
        }
      }
      const usage = task.result === "video" ? { video_count: 1, duration: 5 } : { image_count: mediaUrls(task).length }
      return { _tag: "Json", status: 200, body: { request_id: randomUUID(), output, usage } }
    }

    // `POST /api/v1/tasks/{id}/cancel`: only a task still PENDING (never polled past it) stops.
    const cancel = (request: LoggedRequest): Server.Reply => {
      const match = /^\/api\/v1\/tasks\/([^/]+)\/cancel$/.exec(request.path)
      if (request.method !== "POST" || match === null) return error(404, "NotFound", "No such API.")
      if (!authorized(request)) return error(401, "InvalidApiKey", "Invalid API-key provided.")
      const task = tasks.get(decodeURIComponent(match[1]!))
      if (task === undefined) return error(404, "NotFound", "The task does not exist.")
      if (task.status !== "PENDING") {
        return error(400, "UnsupportedOperation", "Failed to cancel the task, please confirm if the task is in PENDING status.")
      }
      task.status = "CANCELED"
      task.endedAt = now()
      return { _tag: "Json", status: 200, body: { request_id: randomUUID() } }
    }

    const media = (request: LoggedRequest): Server.Reply => {
      const match = /^\/(media|signed)\/([^/]+)\/(\d+)\.(mp4|png)$/.exec(request.path)
      const task = match !== null ? tasks.get(match[2]!) : undefined
      if (match === null || task === undefined) return { _tag: "Json", status: 404, body: { code: "NoSuchKey" } }
      if (match[1] === "signed") return { _tag: "Redirect", location: `${origin}/media/${match[2]}/${match[3]}.${match[4]}` }
      if (match[4] === "mp4") return { _tag: "Bytes", status: 200, bytes: SampleMedia.mp4(), contentType: "video/mp4" }
      const size = Http.isRecord(task.body["parameters"]) ? task.body["parameters"]["size"] : undefined
      const [w, h] = typeof size === "string" && /^\d+\*\d+$/.test(size) ? size.split("*").map(Number) : [64, 64]
      return {
        _tag: "Bytes",
        status: 200,
        bytes: SampleMedia.png(Math.min(w!, 256), Math.min(h!, 256), Number(match[3])),
        contentType: "image/png"
      }
    }

    const server = yield* Server.emulate(recorder, {
      classify,
      refuse: (fault) => {
        switch (fault._tag) {
          case "RateLimited":
            return error(429, "Throttling.RateQuota", "Requests rate limit exceeded, please try again later.", Server.retryAfterHeader(fault.retryAfterSeconds))
          case "Unavailable":
            return error(503, "ServiceUnavailable", "The service is overloaded, please try again later.", Server.retryAfterHeader(fault.retryAfterSeconds))
          case "HttpError":
            return error(fault.status, fault.code, fault.message)
          default:
            return undefined
        }
      },
      answer: { submit: create, poll: query, download: media, other: cancel }

    }, options.latency)
    origin = server.origin

    return {
      baseUrl: `${server.origin}/api/v1`,
      apiKey,
      tasks: Effect.sync(() =>
        [...tasks.values()].map((t) => ({
          taskId: t.taskId,
          createPath: t.createPath,
          body: t.body,
          polls: t.polls,
          status: t.status
        }))
      ),
      unanswered: server.unanswered,
      ...recorder.controls
    }
  })

/**
 * An in-process emulator of vendor-e's "task-info" API — SPEC.md's own task surface — written
 * from UPSTREAMS.md and SPEC.md (not from the adapter), for integration tests: bearer auth,
 * `POST {base}/vendors/vendor-e/v1/<model>/generation` with a flat body answered 202 `{task_info}`,
 * `GET …/generation/{task_id}` answered `{task_info, videos | images}`, tasks that finish on the
 * Nth poll, real result media, and fault switches for the next N requests of a kind.
 */
import { randomUUID } from "node:crypto"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import { Http } from "@genway/adapter-kit"
import { Server } from "@genway/adapter-kit/testing"
import { SampleMedia } from "@genway/core"

/** Which requests a fault applies to: task creation, task retrieval, or result media. */
export type RequestKind = "submit" | "poll" | "download"

/** A request as the emulator saw it. */
export type LoggedRequest = Server.LoggedRequest<RequestKind>

/** What the next request(s) of a kind get instead of (or on top of) a normal answer. */
export type Fault =
  /** `Slow`, `Drop` (optionally `afterAccept`) and `MalformedJson`, as every task emulator has them. */
  | Server.TransportFault
  /** 429 with `Retry-After` when `retryAfterSeconds` is given. */
  | { readonly _tag: "RateLimited"; readonly retryAfterSeconds?: number }
  /** 503 with `Retry-After` when `retryAfterSeconds` is given. */
  | { readonly _tag: "Unavailable"; readonly retryAfterSeconds?: number }
  /** Any error answer `{error: {code: status, title, detail, param?}}`, e.g. 402 (balance). */
  | { readonly _tag: "HttpError"; readonly status: number; readonly title?: string; readonly detail: string; readonly param?: string }
  /** A retrieval reports this `task_info.status` (default: one SPEC.md does not list). */
  | { readonly _tag: "ReportStatus"; readonly status?: string }
  /** The task (created by this submit, or retrieved now) ends `failed` with this error (default 3001). */
  | { readonly _tag: "FailTask"; readonly code?: number; readonly title?: string; readonly detail?: string }

/** Emulator settings; every field has a default. Tasks report `pending`, `processing`, then their final state. */
export interface EmulatorOptions extends Server.TaskOptions {
  readonly apiKey?: string
  /** Models served and their result kind; default: any model path, `videos`. */
  readonly models?: Readonly<Record<string, "videos" | "images">>
}

/** A task the emulator holds. */
export interface EmulatedTask {
  readonly id: string
  readonly model: string
  readonly body: unknown
  readonly polls: number
  readonly status: string
}

/** A running emulator. */
export interface Emulator extends Server.Controls<RequestKind, Fault> {
  /** The `{base}` to configure the adapter with (`http://127.0.0.1:<port>`). */
  readonly baseUrl: string
  readonly apiKey: string
  readonly tasks: Effect.Effect<ReadonlyArray<EmulatedTask>>
  /** Requests whose answer found the client gone (it timed out or died while the answer was held). */
  readonly unanswered: Effect.Effect<ReadonlyArray<LoggedRequest>>
}

interface Task {
  readonly id: string
  readonly model: string
  readonly result: "videos" | "images"
  readonly body: Record<string, unknown>
  readonly createdAt: number
  updatedAt: number
  polls: number
  status: string
  error?: { readonly code: number; readonly title: string; readonly detail: string }
}

const titles: Record<number, string> = {
  400: "Invalid request",
  401: "Unauthorized",
  402: "Payment required",
  403: "Forbidden",
  404: "Not found",
  429: "Too many requests",
  503: "Service unavailable"
}

const failure = (status: number, detail: string, extra: { param?: string; title?: string; headers?: Record<string, string> } = {}): Server.Reply => ({
  _tag: "Json",
  status,
  body: {
    error: {
      code: status,
      title: extra.title ?? titles[status] ?? "Error",
      detail,
      ...(extra.param !== undefined ? { param: extra.param } : {})
    }
  },
  ...(extra.headers !== undefined ? { headers: extra.headers } : {})
})

const sizes = ["1920*1080", "1080*1920", "1440*1440", "1632*1248", "1248*1632"]

const route = /^\/vendors\/vendor-e\/v1\/(.+)\/generation(?:\/([^/]+))?$/

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

    const classify = (method: string, path: string): RequestKind | "other" => {
      const match = route.exec(path)
      if (match !== null && method === "POST" && match[2] === undefined) return "submit"
      if (match !== null && method === "GET" && match[2] !== undefined) return "poll"
      if (method === "GET" && (path.startsWith("/media/") || path.startsWith("/signed/"))) return "download"
      return "other"
    }

    const unauthorized = (request: LoggedRequest): Server.Reply | undefined =>
      request.headers["authorization"] === `Bearer ${apiKey}`
        ? undefined
        : failure(401, "Missing or unknown bearer token.", { headers: { "www-authenticate": "Bearer" } })

    const resultOf = (model: string) => options.models === undefined ? "videos" : options.models[model]

    const info = (task: Task, status: string) => ({
      id: task.id,
      status,
      created_at: new Date(task.createdAt).toISOString(),
      updated_at: new Date(task.updatedAt).toISOString(),
      ...(status === "failed" && task.error !== undefined ? { error: task.error } : {})
    })

    const create = (request: LoggedRequest, fault: Fault | undefined): Server.Reply => {
      const denied = unauthorized(request)
      if (denied !== undefined) return denied
      const model = route.exec(request.path)![1]!
      const result = resultOf(model)
      if (result === undefined) return failure(404, `Unknown model ${model}.`)
      const body = request.body
      if (!Http.isRecord(body)) return failure(400, "The body must be a JSON object.")
      if (typeof body["prompt"] !== "string" || body["prompt"] === "") return failure(400, "prompt is required.", { param: "prompt" })
      if (body["prompt"].length > 2000) return failure(400, "prompt is longer than 2000 characters.", { param: "prompt" })
      if (body["duration"] !== undefined && ![5, 10, 15].includes(body["duration"] as number)) {
        return failure(400, "duration must be 5, 10 or 15.", { param: "duration" })
      }
      if (body["size"] !== undefined && !sizes.includes(body["size"] as string)) {
        return failure(400, `size must be one of ${sizes.join(", ")}.`, { param: "size" })
      }
      const created = now()
      const task: Task = { id: randomUUID(), model, result, body, createdAt: created, updatedAt: created, polls: 0, status: "pending" }
      if (fault?._tag === "FailTask") {
        task.error = { code: fault.code ?? 3001, title: fault.title ?? "Execution error", detail: fault.detail ?? "Generation failed." }
      }
      tasks.set(task.id, task)
      recorder.accept()
      return { _tag: "Json", status: 202, body: { task_info: info(task, "pending") } }
    }

    const retrieve = (request: LoggedRequest, fault: Fault | undefined): Server.Reply => {
      const denied = unauthorized(request)
      if (denied !== undefined) return denied
      const [, model, id] = route.exec(request.path)!
      const task = tasks.get(decodeURIComponent(id!))
      if (task === undefined || task.model !== model) return failure(404, "Unknown task.")
      task.polls++
      if (fault?._tag === "FailTask") {
        task.error = { code: fault.code ?? 3001, title: fault.title ?? "Execution error", detail: fault.detail ?? "Generation failed." }
        task.status = "failed"
        task.updatedAt = now()
      }
      if (task.status !== "completed" && task.status !== "failed") {
        const next = isDue(task, now()) ? (task.error !== undefined ? "failed" : "completed") : task.polls === 1 ? "pending" : "processing"
        if (next !== task.status) task.updatedAt = now()
        task.status = next
      }
      if (fault?._tag === "ReportStatus") {
        return { _tag: "Json", status: 200, body: { task_info: info(task, fault.status ?? "queued") } }
      }
      const body: Record<string, unknown> = { task_info: info(task, task.status) }
      if (task.status === "completed") {
        const prefix = options.redirectMedia === true ? "signed" : "media"
        const ext = task.result === "videos" ? "mp4" : "png"
        body[task.result] = [`${options.mediaOrigin ?? origin}/${prefix}/${task.id}.${ext}?expires=172800&signature=emulated`]
      }
      return { _tag: "Json", status: 200, body }
    }

    const media = (request: LoggedRequest): Server.Reply => {
      const match = /^\/(media|signed)\/([^/]+)\.(mp4|png)$/.exec(request.path)
      if (match === null || !tasks.has(match[2]!)) return failure(404, "Unknown media.")
      if (match[1] === "signed") return { _tag: "Redirect", location: `${origin}/media/${match[2]}.${match[3]}` }
      return match[3] === "mp4"
        ? { _tag: "Bytes", status: 200, bytes: SampleMedia.mp4(), contentType: "video/mp4" }
        : { _tag: "Bytes", status: 200, bytes: SampleMedia.png(64, 64), contentType: "image/png" }
    }

    const server = yield* Server.emulate(recorder, {
      classify,
      refuse: (fault) => {
        switch (fault._tag) {
          case "RateLimited":
            return failure(429, "Rate limit reached.", { headers: Server.retryAfterHeader(fault.retryAfterSeconds) })
          case "Unavailable":
            return failure(503, "Temporarily unavailable.", { headers: Server.retryAfterHeader(fault.retryAfterSeconds) })
          case "HttpError":
            return failure(fault.status, fault.detail, {
              ...(fault.title !== undefined ? { title: fault.title } : {}),
              ...(fault.param !== undefined ? { param: fault.param } : {})
            })
          default:
            return undefined
        }
      },
      answer: { submit: create, poll: retrieve, download: media, other: () => failure(404, "Unknown route.") }

    }, options.latency)
    origin = server.origin

    return {
      baseUrl: server.origin,
      apiKey,
      tasks: Effect.sync(() =>
        [...tasks.values()].map((t) => ({ id: t.id, model: t.model, body: t.body, polls: t.polls, status: t.status }))
      ),
      unanswered: server.unanswered,
      ...recorder.controls
    }
  })

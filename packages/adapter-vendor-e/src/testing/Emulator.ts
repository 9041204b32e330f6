/**
 * An in-process emulator of vendor-e's "task-info" API — SPEC.md's own task surface — written
 * from UPSTREAMS.md and SPEC.md (not from the adapter), for integration tests: bearer auth,
 * `POST {base}/vendors/vendor-e/v1/<model>/generation` with a flat body answered 202 `{task_info}`,
 * `GET …/generation/{task_id}` answered `{task_info, videos | images}`, tasks that finish on the
 * Nth poll, real result media, and fault switches for the next N requests of a kind.
 */
import { randomUUID } from "node:crypto"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import { SampleMedia } from "@genway/core"
import { type LoggedRequest as Logged, Recorder, type Reply, serve } from "./internal/server.js"

/** Which requests a fault applies to: task creation, task retrieval, or result media. */
export type RequestKind = "submit" | "poll" | "download"

/** A request as the emulator saw it. */
export type LoggedRequest = Logged<RequestKind>

/** What the next request(s) of a kind get instead of (or on top of) a normal answer. */
export type Fault =
  /** 429 with `Retry-After` when `retryAfterSeconds` is given. */
  | { readonly _tag: "RateLimited"; readonly retryAfterSeconds?: number }
  /** 503 with `Retry-After` when `retryAfterSeconds` is given. */
  | { readonly _tag: "Unavailable"; readonly retryAfterSeconds?: number }
  /** Any error answer `{error: {code: status, title, detail, param?}}`, e.g. 402 (balance). */
  | { readonly _tag: "HttpError"; readonly status: number; readonly title?: string; readonly detail: string; readonly param?: string }
  /** The normal answer, after `delay` of real time. */
  | { readonly _tag: "Slow"; readonly delay: Duration.DurationInput }
  /** The connection is cut; with `afterAccept`, a submit is accepted (and counted) first. */
  | { readonly _tag: "Drop"; readonly afterAccept?: boolean }
  /** A 200 whose JSON is cut off; a submit is accepted (and counted) first. */
  | { readonly _tag: "MalformedJson" }
  /** A retrieval reports this `task_info.status` (default: one SPEC.md does not list). */
  | { readonly _tag: "ReportStatus"; readonly status?: string }
  /** The task (created by this submit, or retrieved now) ends `failed` with this error (default 3001). */
  | { readonly _tag: "FailTask"; readonly code?: number; readonly title?: string; readonly detail?: string }

/** Emulator settings; every field has a default. */
export interface EmulatorOptions {
  readonly apiKey?: string
  /** A task reports its final state on this poll (1-based); default 3 (`pending`, `processing`, then final). */
  readonly completeAfterPolls?: number
  /** Alternatively or additionally, a task is final this long after its creation (Effect clock). */
  readonly completeAfter?: Duration.DurationInput
  /** Models served and their result kind; default: any model path, `videos`. */
  readonly models?: Readonly<Record<string, "videos" | "images">>
  /** Hand out media URLs that answer with a redirect to the bytes. */
  readonly redirectMedia?: boolean
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
export interface Emulator {
  /** The `{base}` to configure the adapter with (`http://127.0.0.1:<port>`). */
  readonly baseUrl: string
  readonly apiKey: string
  /** Every request received, oldest first. */
  readonly requests: Effect.Effect<ReadonlyArray<LoggedRequest>>
  /** How many creates were accepted (a task was made), including ones whose answer was then lost. */
  readonly acceptedSubmits: Effect.Effect<number>
  readonly tasks: Effect.Effect<ReadonlyArray<EmulatedTask>>
  /** Applies `fault` to the next `times` (default 1) requests of `kind`. */
  readonly inject: (kind: RequestKind, fault: Fault, times?: number) => Effect.Effect<void>
  /** Completes once at least `count` requests were received. */
  readonly awaitRequests: (count: number) => Effect.Effect<void>
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

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v)

const titles: Record<number, string> = {
  400: "Invalid request",
  401: "Unauthorized",
  402: "Payment required",
  403: "Forbidden",
  404: "Not found",
  429: "Too many requests",
  503: "Service unavailable"
}

const failure = (status: number, detail: string, extra: { param?: string; title?: string; headers?: Record<string, string> } = {}): Reply => ({
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
    const completeAfterMs = options.completeAfter !== undefined ? Duration.toMillis(options.completeAfter) : undefined
    const completeAfterPolls = options.completeAfterPolls ?? (completeAfterMs !== undefined ? Infinity : 3)
    const recorder = new Recorder<RequestKind, Fault>()
    const tasks = new Map<string, Task>()
    let accepted = 0
    let origin = ""

    const classify = (method: string, path: string): RequestKind | "other" => {
      const match = route.exec(path)
      if (match !== null && method === "POST" && match[2] === undefined) return "submit"
      if (match !== null && method === "GET" && match[2] !== undefined) return "poll"
      if (method === "GET" && (path.startsWith("/media/") || path.startsWith("/signed/"))) return "download"
      return "other"
    }

    const unauthorized = (request: LoggedRequest): Reply | undefined =>
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

    const create = (request: LoggedRequest, fault: Fault | undefined): Reply => {
      const denied = unauthorized(request)
      if (denied !== undefined) return denied
      const model = route.exec(request.path)![1]!
      const result = resultOf(model)
      if (result === undefined) return failure(404, `Unknown model ${model}.`)
      const body = request.body
      if (!isObject(body)) return failure(400, "The body must be a JSON object.")
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
      accepted++
      return { _tag: "Json", status: 202, body: { task_info: info(task, "pending") } }
    }

    const retrieve = (request: LoggedRequest, fault: Fault | undefined): Reply => {
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
        const due = task.polls >= completeAfterPolls ||
          (completeAfterMs !== undefined && now() - task.createdAt >= completeAfterMs)
        const next = due ? (task.error !== undefined ? "failed" : "completed") : task.polls === 1 ? "pending" : "processing"
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
        body[task.result] = [`${origin}/${prefix}/${task.id}.${ext}?expires=172800&signature=emulated`]
      }
      return { _tag: "Json", status: 200, body }
    }

    const media = (request: LoggedRequest): Reply => {
      const match = /^\/(media|signed)\/([^/]+)\.(mp4|png)$/.exec(request.path)
      if (match === null || !tasks.has(match[2]!)) return failure(404, "Unknown media.")
      if (match[1] === "signed") return { _tag: "Redirect", location: `${origin}/media/${match[2]}.${match[3]}` }
      return match[3] === "mp4"
        ? { _tag: "Bytes", status: 200, bytes: SampleMedia.mp4(), contentType: "video/mp4" }
        : { _tag: "Bytes", status: 200, bytes: SampleMedia.png(64, 64), contentType: "image/png" }
    }

    const retryAfter = (seconds: number | undefined) =>
      seconds !== undefined ? { headers: { "retry-after": String(seconds) } } : {}

    const server = yield* serve<RequestKind>(recorder as Recorder<RequestKind, unknown>, classify, async (request) => {
      const fault = recorder.take(request.kind)
      switch (fault?._tag) {
        case "RateLimited":
          return failure(429, "Rate limit reached.", retryAfter(fault.retryAfterSeconds))
        case "Unavailable":
          return failure(503, "Temporarily unavailable.", retryAfter(fault.retryAfterSeconds))
        case "HttpError":
          return failure(fault.status, fault.detail, {
            ...(fault.title !== undefined ? { title: fault.title } : {}),
            ...(fault.param !== undefined ? { param: fault.param } : {})
          })
        case "Drop":
          if (fault.afterAccept !== true) return { _tag: "Drop" }
          break
        case "Slow":
          await server.wait(Duration.toMillis(fault.delay))
          break
      }
      const reply = request.kind === "submit"
        ? create(request, fault)
        : request.kind === "poll"
        ? retrieve(request, fault)
        : request.kind === "download"
        ? media(request)
        : failure(404, "Unknown route.")
      if (fault?._tag === "Drop") return { _tag: "Drop" }
      if (fault?._tag === "MalformedJson") return { _tag: "Garbled" }
      return reply
    })
    origin = server.origin

    return {
      baseUrl: server.origin,
      apiKey,
      requests: Effect.sync(() => [...recorder.log]),
      acceptedSubmits: Effect.sync(() => accepted),
      tasks: Effect.sync(() =>
        [...tasks.values()].map((t) => ({ id: t.id, model: t.model, body: t.body, polls: t.polls, status: t.status }))
      ),
      inject: (kind, fault, times = 1) => Effect.sync(() => recorder.inject(kind, fault, times)),
      awaitRequests: (count) => recorder.awaitRequests(count)
    }
  })

/**
 * An in-process emulator of vendor-c's "jwt-task" API, written from UPSTREAMS.md (not from the
 * adapter), for integration tests: HS256 tokens checked for signature, issuer, `exp` and `nbf`
 * (on the Effect clock, so `TestClock` drives expiry), the `{code, message, request_id, data}`
 * envelope, string durations, raw Base64 images, `external_task_id` unique per account and usable
 * in place of the task id, tasks that finish on the Nth poll, real MP4 results, and fault switches
 * for the next N requests of a kind.
 */
import { createHmac, randomUUID, timingSafeEqual } from "node:crypto"
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
  /** 429 with `code` 1302 (rate, the default) or 1303 (concurrency); `Retry-After` when given. */
  | { readonly _tag: "RateLimited"; readonly code?: number; readonly retryAfterSeconds?: number }
  /** 503, code 5001. */
  | { readonly _tag: "Unavailable"; readonly retryAfterSeconds?: number }
  /** Any vendor error answer, e.g. HTTP 400 code 1301 (content safety). */
  | { readonly _tag: "HttpError"; readonly status: number; readonly code: number; readonly message: string }
  /** 401 code 1004 whatever the token. */
  | { readonly _tag: "ExpiredToken" }
  /** A query reports this `task_status` (default: one no documentation lists). */
  | { readonly _tag: "ReportStatus"; readonly status?: string }
  /** The task (created by this submit, or queried now) ends `failed` with this `task_status_msg`. */
  | { readonly _tag: "FailTask"; readonly message?: string }

/** Emulator settings; every field has a default. Tasks report `submitted`, `processing`, then their final state. */
export interface EmulatorOptions extends Server.TaskOptions {
  readonly accessKey?: string
  readonly secretKey?: string
  /** Upstream model ids that exist; default: any. */
  readonly models?: ReadonlyArray<string>
  /** The `duration` finished videos report (default: the requested one, else "5"), e.g. `"5.1"`. */
  readonly reportedDuration?: string
}

/** A task the emulator holds. */
export interface EmulatedTask {
  readonly taskId: string
  readonly externalTaskId: string | undefined
  readonly kind: "image2video" | "text2video"
  readonly body: unknown
  readonly polls: number
  readonly status: string
}

/** A running emulator. */
export interface Emulator extends Server.Controls<RequestKind, Fault> {
  /** The `{base}` to configure the adapter with (`http://127.0.0.1:<port>`). */
  readonly baseUrl: string
  readonly accessKey: string
  readonly secretKey: string
  readonly tasks: Effect.Effect<ReadonlyArray<EmulatedTask>>
  /** Requests whose answer found the client gone (it timed out or died while the answer was held). */
  readonly unanswered: Effect.Effect<ReadonlyArray<LoggedRequest>>
}

interface Task {
  readonly taskId: string
  readonly externalTaskId: string | undefined
  readonly kind: "image2video" | "text2video"
  readonly body: Record<string, unknown>
  readonly createdAt: number
  updatedAt: number
  polls: number
  status: string
  failure?: string
}

const answer = (status: number, code: number, message: string, data?: unknown, headers?: Record<string, string>): Server.Reply => ({
  _tag: "Json",
  status,
  body: { code, message, request_id: randomUUID(), ...(data !== undefined ? { data } : {}) },
  ...(headers !== undefined ? { headers } : {})
})

const invalid = (message: string) => answer(400, 1201, message)

const decodeSegment = (segment: string | undefined): unknown => {
  try {
    return JSON.parse(Buffer.from(segment ?? "", "base64url").toString("utf8"))
  } catch {
    return undefined
  }
}

/** Starts an emulator on 127.0.0.1 (a free port) for the life of the scope. */
export const make = (options: EmulatorOptions = {}): Effect.Effect<Emulator, never, Scope.Scope> =>
  Effect.gen(function*() {
    const clock = yield* Effect.clock
    const now = () => clock.unsafeCurrentTimeMillis()
    const accessKey = options.accessKey ?? "emulator-access-key"
    const secretKey = options.secretKey ?? "emulator-secret-key"
    const isDue = Server.isDue(options)
    const recorder = new Server.Recorder<RequestKind, Fault>()
    const tasks = new Map<string, Task>()
    let origin = ""

    const classify = (method: string, path: string): RequestKind | "other" =>
      method === "POST" && /^\/v1\/videos\/(image2video|text2video)$/.test(path)
        ? "submit"
        : method === "GET" && /^\/v1\/videos\/(image2video|text2video)\/[^/]+$/.test(path)
        ? "poll"
        : method === "GET" && (path.startsWith("/media/") || path.startsWith("/signed/"))
        ? "download"
        : "other"

    /** The auth error of a request, if any (401 codes 1000-1004). */
    const authError = (request: LoggedRequest): Server.Reply | undefined => {
      const header = request.headers["authorization"]
      if (header === undefined || !header.startsWith("Bearer ")) return answer(401, 1001, "Authorization is empty")
      const parts = header.slice("Bearer ".length).split(".")
      if (parts.length !== 3) return answer(401, 1002, "Authorization is invalid")
      const head = decodeSegment(parts[0])
      const claims = decodeSegment(parts[1])
      if (!Http.isRecord(head) || head["alg"] !== "HS256" || head["typ"] !== "JWT" || !Http.isRecord(claims)) {
        return answer(401, 1002, "Authorization is invalid")
      }
      const expected = createHmac("sha256", secretKey).update(`${parts[0]}.${parts[1]}`).digest()
      const given = Buffer.from(parts[2]!, "base64url")
      if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
        return answer(401, 1002, "Authorization is invalid")
      }
      if (claims["iss"] !== accessKey) return answer(401, 1000, "Authentication failed")
      const seconds = now() / 1000
      if (typeof claims["exp"] !== "number" || seconds >= claims["exp"]) return answer(401, 1004, "Authorization has expired")
      if (typeof claims["nbf"] !== "number" || seconds < claims["nbf"]) return answer(401, 1003, "Authorization is not yet valid")
      return undefined
    }

    const create = (request: LoggedRequest, fault: Fault | undefined): Server.Reply => {
      const denied = authError(request)
      if (denied !== undefined) return denied
      const kind = request.path.endsWith("image2video") ? "image2video" : "text2video"
      const body = request.body
      if (!Http.isRecord(body)) return invalid("request body must be a JSON object")
      if (typeof body["model_name"] !== "string" || body["model_name"] === "") return invalid("model_name is required")
      if (options.models !== undefined && !options.models.includes(body["model_name"])) {
        return answer(404, 1203, "model not found")
      }
      if (body["duration"] !== undefined && body["duration"] !== "5" && body["duration"] !== "10") {
        return invalid('duration must be the string "5" or "10"')
      }
      const masks = Array.isArray(body["dynamic_masks"]) ? body["dynamic_masks"].map((m) => Http.isRecord(m) ? m["mask"] : m) : []
      for (const image of [body["image"], body["image_tail"], body["static_mask"], ...masks]) {
        if (typeof image === "string" && image.startsWith("data:")) {
          return invalid("images must be URLs or raw Base64 without a data-URL prefix")
        }
      }
      if (kind === "image2video" && typeof body["image"] !== "string" && typeof body["image_tail"] !== "string") {
        return invalid("one of image and image_tail is required")
      }
      if (kind === "text2video" && typeof body["prompt"] !== "string") return invalid("prompt is required")
      const external = typeof body["external_task_id"] === "string" ? body["external_task_id"] : undefined
      if (external !== undefined && [...tasks.values()].some((t) => t.externalTaskId === external)) {
        return invalid("external_task_id already exists")
      }
      const created = now()
      const task: Task = {
        taskId: String(800000000000000000n + BigInt(tasks.size + 1)),
        externalTaskId: external,
        kind,
        body,
        createdAt: created,
        updatedAt: created,
        polls: 0,
        status: "submitted"
      }
      if (fault?._tag === "FailTask") task.failure = fault.message ?? "Failure to pass the risk control system"
      tasks.set(task.taskId, task)
      recorder.accept()
      return answer(200, 0, "SUCCEED", {
        task_id: task.taskId,
        task_status: task.status,
        created_at: task.createdAt,
        updated_at: task.updatedAt
      })
    }

    const query = (request: LoggedRequest, fault: Fault | undefined): Server.Reply => {
      const denied = authError(request)
      if (denied !== undefined) return denied
      const [, , , kind, rawId] = request.path.split("/")
      const id = decodeURIComponent(rawId ?? "")
      const task = [...tasks.values()].find((t) => t.kind === kind && (t.taskId === id || t.externalTaskId === id))
      if (task === undefined) return answer(404, 1203, "task not found")
      task.polls++
      if (fault?._tag === "FailTask") {
        task.failure = fault.message ?? "Failure to pass the risk control system"
        task.status = "failed"
        task.updatedAt = now()
      }
      if (task.status !== "succeed" && task.status !== "failed") {
        const next = isDue(task, now()) ? (task.failure !== undefined ? "failed" : "succeed") : task.polls === 1 ? "submitted" : "processing"
        if (next !== task.status) task.updatedAt = now()
        task.status = next
      }
      const data: Record<string, unknown> = {
        task_id: task.taskId,
        task_status: fault?._tag === "ReportStatus" ? (fault.status ?? "queued_for_review") : task.status,
        task_status_msg: task.status === "failed" ? task.failure : "",
        created_at: task.createdAt,
        updated_at: task.updatedAt,
        task_info: { external_task_id: task.externalTaskId ?? "" }
      }
      if (task.status === "succeed" && fault?._tag !== "ReportStatus") {
        const prefix = options.redirectMedia === true ? "signed" : "media"
        data["task_result"] = {
          videos: [{
            id: `${task.taskId}-0`,
            url: `${options.mediaOrigin ?? origin}/${prefix}/${task.taskId}.mp4?x-expires=2592000&sig=emulated`,
            duration: options.reportedDuration ?? (typeof task.body["duration"] === "string" ? task.body["duration"] : "5")
          }]
        }
      }
      return answer(200, 0, "SUCCEED", data)
    }

    const media = (request: LoggedRequest): Server.Reply => {
      const match = /^\/(media|signed)\/([^/]+)\.mp4$/.exec(request.path)
      if (match === null || !tasks.has(match[2]!)) return { _tag: "Json", status: 404, body: { message: "not found" } }
      if (match[1] === "signed") return { _tag: "Redirect", location: `${origin}/media/${match[2]}.mp4` }
      return { _tag: "Bytes", status: 200, bytes: SampleMedia.mp4(), contentType: "video/mp4" }
    }

    const server = yield* Server.emulate(recorder, {
      classify,
      refuse: (fault) => {
        switch (fault._tag) {
          case "RateLimited": {
            const code = fault.code ?? 1302
            const message = code === 1303 ? "parallel task over resource pack limit" : "request rate limit exceeded"
            return answer(429, code, message, undefined, Server.retryAfterHeader(fault.retryAfterSeconds))
          }
          case "Unavailable":
            return answer(503, 5001, "server is temporarily unavailable", undefined, Server.retryAfterHeader(fault.retryAfterSeconds))
          case "HttpError":
            return answer(fault.status, fault.code, fault.message)
          case "ExpiredToken":
            return answer(401, 1004, "Authorization has expired")
          default:
            return undefined
        }
      },
      answer: { submit: create, poll: query, download: media, other: () => answer(404, 1202, "the requested method is invalid") }

    }, options.latency)
    origin = server.origin

    return {
      baseUrl: server.origin,
      accessKey,
      secretKey,
      tasks: Effect.sync(() =>
        [...tasks.values()].map((t) => ({
          taskId: t.taskId,
          externalTaskId: t.externalTaskId,
          kind: t.kind,
          body: t.body,
          polls: t.polls,
          status: t.status
        }))
      ),
      unanswered: server.unanswered,
      ...recorder.controls
    }
  })

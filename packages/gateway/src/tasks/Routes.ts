/**
 * The task routes of DESIGN.md §8 beside create and retrieve: the event stream
 * (`GET <path>/{task_id}/events`), cancel (`POST <path>/{task_id}/cancel`) and the tenant's
 * listing (`GET /v1/tasks`). Derived from the registry like the others: nothing names a model.
 */
import * as Sse from "@effect/experimental/Sse"
import * as HttpRouter from "@effect/platform/HttpRouter"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as SqlClient from "@effect/sql/SqlClient"
import { ModelEntry, TaskInfo, TaskState } from "@genway/core"
import type { VendorAdapter } from "@genway/core"
import { Registry } from "@genway/registry"
import * as Chunk from "effect/Chunk"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import * as Stream from "effect/Stream"
import { httpError } from "../http/Errors.js"
import { handle } from "../http/Handle.js"
import { authenticate, requestUrl } from "../http/Request.js"
import type { Settings } from "../platform/Config.js"
import { MediaStore } from "../platform/MediaStore.js"
import { Vendors } from "../vendors/Vendors.js"
import * as TaskBodies from "./Bodies.js"
import { envelope } from "./Envelope.js"
import type { ProgressWriter } from "./Progress.js"
import { ownTask, taskInfo, uuidPattern } from "./Http.js"
import { type Task, TaskStore } from "./Store.js"


/** How often a stream looks for changes (made by any replica). */
export const eventPollMs = 250

/** A `: keep-alive` comment this often on a stream. */
export const keepAliveMs = 15_000

/** The error code and title of a canceled task. */
export const canceledCode = 499

interface StateChange {
  readonly seq: number
  readonly at: number
  readonly to: Task["status"]
}

/** The task's status changes after `seq`, oldest first (notes that change nothing are skipped). */
const changesAfter = (taskId: string, seq: number) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql`SELECT id, at, to_status FROM task_events
      WHERE task_id = ${taskId} AND id > ${seq} AND (from_status IS NULL OR from_status <> to_status)
      ORDER BY id`).pipe(
      Effect.map((rows) => rows.map((r): StateChange => ({ seq: Number(r.id), at: Number(r.at), to: r.to_status as Task["status"] })))
    )

/** The sequence of the task's latest status change. */
const latestChange = (taskId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql`SELECT MAX(id) AS seq FROM task_events WHERE task_id = ${taskId} AND (from_status IS NULL OR from_status <> to_status)`).pipe(
      Effect.map((rows) => Number(rows[0]?.seq ?? 0))
    )

const frame = (seq: number, status: string, data: unknown) =>
  Sse.encoder.write({ _tag: "Event", event: `task.${status}`, id: String(seq), data: JSON.stringify(data) })

const keepAliveFrame = ": keep-alive\n\n"

interface StreamState {
  readonly seq: number
  readonly first: boolean
  readonly checked: boolean
}

/** `GET <path>/{task_id}/events`: SSE, one frame per status change, ends after the terminal one. */
export const events = (entry: ModelEntry.ModelEntry) =>
  Effect.gen(function*() {
    const task = yield* ownTask(entry)
    const request = yield* HttpServerRequest.HttpServerRequest
    const header = request.headers["last-event-id"]?.trim()
    let resumeFrom: number | undefined
    if (header !== undefined && header !== "") {
      if (!/^\d{1,15}$/.test(header)) {
        return yield* httpError(400, "Last-Event-ID must be an event id of this stream", { param: "Last-Event-ID" })
      }
      resumeFrom = Number(header)
    }
    const store = yield* TaskStore
    const context = yield* Effect.context<SqlClient.SqlClient | TaskStore | Settings | MediaStore | ProgressWriter>()
    const current = Effect.map(store.findById(task.id), Option.getOrElse(() => task))

    /** The data of a change: the task as it is when the status matches, else as of that change. */
    const dataOf = (now: Task, change: StateChange) =>
      now.status === change.to
        ? envelope(now, entry)
        : envelope({ ...now, status: change.to, updatedAt: change.at, error: null, result: null }, entry, false)

    const step = (state: StreamState) =>
      Effect.gen(function*() {
        if (state.first) {
          const now = yield* current
          const seq = yield* latestChange(task.id)
          const next = TaskState.isTerminal(now.status) ? Option.none() : Option.some({ seq, first: false, checked: true })
          return [Chunk.of(frame(seq, now.status, yield* envelope(now, entry))), next] as const
        }
        if (state.checked) yield* Effect.sleep(eventPollMs)
        const changes = yield* changesAfter(task.id, state.seq)
        if (changes.length === 0) {
          // Resuming after the terminal frame: nothing follows, the stream ends.
          if (!state.checked && TaskState.isTerminal((yield* current).status)) return [Chunk.empty<string>(), Option.none()] as const
          return [Chunk.empty<string>(), Option.some({ ...state, checked: true })] as const
        }
        const now = yield* current
        const out: Array<string> = []
        for (const change of changes) {
          out.push(frame(change.seq, change.to, yield* dataOf(now, change)))
          if (TaskState.isTerminal(change.to)) return [Chunk.fromIterable(out), Option.none()] as const
        }
        return [Chunk.fromIterable(out), Option.some({ seq: changes[changes.length - 1]!.seq, first: false, checked: true })] as const
      })

    const changes = Stream.paginateChunkEffect<StreamState, string, unknown, SqlClient.SqlClient | TaskStore | Settings | MediaStore | ProgressWriter>(
      { seq: resumeFrom ?? 0, first: resumeFrom === undefined, checked: false },
      step
    )
    const keepAlive = Stream.fromSchedule(Schedule.spaced(keepAliveMs)).pipe(Stream.as(keepAliveFrame))
    const body = changes.pipe(
      Stream.merge(keepAlive, { haltStrategy: "left" }),
      Stream.provideContext(context),
      Stream.encodeText
    )
    return HttpServerResponse.stream(body, {
      contentType: "text/event-stream",
      headers: { "cache-control": "no-cache", "x-accel-buffering": "no", ...(task.mode === "sandbox" ? { "x-genway-sandbox": "true" } : {}) }
    })
  })

const vendorCancel = (task: Task, entry: ModelEntry.ModelEntry) =>
  Effect.gen(function*() {
    const vendors = yield* Vendors
    const adapter = vendors.adapter(task.vendor, task.mode)
    if (adapter?.cancel === undefined || task.upstreamRef === null) return undefined
    const upstream: VendorAdapter.UpstreamTask & { readonly upstreamRef: string } = {
      taskId: task.id,
      entry,
      body: JSON.parse(task.request),
      upstreamModel: task.upstreamModel,
      hints: task.hints,
      upstreamRef: task.upstreamRef,
      ...(task.submittedAt !== null ? { submittedAt: task.submittedAt } : {})
    }
    return yield* adapter.cancel(upstream).pipe(
      Effect.timeout("15 seconds"),
      Effect.catchAll((e) =>
        Effect.as(
          Effect.logWarning("vendor cancel failed", e).pipe(Effect.annotateLogs("task", task.id)),
          { canceled: false, reason: "the vendor's cancel did not answer" } satisfies VendorAdapter.CancelOutcome
        )
      )
    )
  })

const cancelDetail = (task: Task, outcome: VendorAdapter.CancelOutcome | undefined): string => {
  if (outcome?.canceled === true) return "canceled by the client; the vendor's job was canceled too"
  if (outcome !== undefined) {
    return `canceled by the client; polling stopped, but the vendor did not cancel its job${
      outcome.reason !== undefined ? ` (${outcome.reason})` : ""
    }: it may still finish and bill it`
  }
  if (task.submitState === "new") return "canceled by the client before it was sent to the vendor"
  return "canceled by the client; polling stopped, but this vendor offers no cancel: it may still finish and bill the job"
}

/** `POST <path>/{task_id}/cancel`: 200 with the envelope of the now failed task; 409 when finished. */
export const cancel = (entry: ModelEntry.ModelEntry) =>
  Effect.gen(function*() {
    const found = yield* ownTask(entry)
    const store = yield* TaskStore
    const media = yield* MediaStore
    let task = found
    let outcome: VendorAdapter.CancelOutcome | undefined
    let asked = false
    // Compare-and-set against a worker that may be changing the task right now: re-read and retry.
    for (let round = 0; round < 20; round++) {
      if (TaskState.isTerminal(task.status)) {
        return yield* httpError(409, `task ${task.id} is already ${task.status}; only a pending or processing task can be canceled`, {
          param: "task_id"
        })
      }
      if (!asked && task.upstreamRef !== null) {
        asked = true
        outcome = yield* vendorCancel(task, entry)
      }
      const now = yield* Clock.currentTimeMillis
      const error = new TaskInfo.TaskError({ code: canceledCode, title: "Canceled", detail: cancelDetail(task, outcome) })
      const done = yield* store.update(
        task,
        { status: "failed", error, finishedAt: now, leaseOwner: null, leaseUntil: null },
        now,
        "canceled"
      ).pipe(Effect.orDie)
      if (Option.isSome(done)) {
        if (TaskBodies.hasSpool(task.request)) yield* media.dropSpool(task.id).pipe(Effect.ignore)
        return HttpServerResponse.unsafeJson({ task_info: taskInfo(done.value) }, {
          headers: task.mode === "sandbox" ? { "x-genway-sandbox": "true" } : {}
        })
      }
      const reread = yield* store.findById(task.id).pipe(Effect.orDie)
      if (Option.isNone(reread)) return yield* httpError(404, `no task ${task.id}`, { param: "task_id" })
      task = reread.value
    }
    return yield* httpError(503, "the task kept changing; try the cancel again")
  })

const statuses = ["pending", "processing", "completed", "failed"]

const encodeCursor = (task: Task) => Buffer.from(JSON.stringify([task.createdAt, task.id])).toString("base64url")

const decodeCursor = (raw: string): { readonly createdAt: number; readonly id: string } | undefined => {
  try {
    const v = JSON.parse(Buffer.from(raw, "base64url").toString("utf8"))
    if (Array.isArray(v) && v.length === 2 && Number.isSafeInteger(v[0]) && typeof v[1] === "string" && uuidPattern.test(v[1])) {
      return { createdAt: v[0], id: v[1] }
    }
  } catch {
    // reported by the caller
  }
  return undefined
}

/** `GET /v1/tasks`: the tenant's tasks, newest first, filtered, paged by cursor. */
export const list = Effect.gen(function*() {
  const principal = yield* authenticate
  const request = yield* HttpServerRequest.HttpServerRequest
  const query = requestUrl(request.url)?.searchParams ?? new URLSearchParams()
  const registry = yield* Registry.Registry
  const known = new Set(["model", "status", "limit", "after"])
  for (const name of query.keys()) {
    if (!known.has(name)) return yield* httpError(400, `unknown query parameter ${name}; known: model, status, limit, after`, { param: name })
  }
  const model = query.get("model") ?? undefined
  const taskEntries = new Map(registry.entries.filter(ModelEntry.isTaskEntry).map((e) => [e.id, e]))
  if (model !== undefined && !taskEntries.has(model)) {
    return yield* httpError(400, `unknown model ${JSON.stringify(model)}: use a task entry id as /v1/models lists it`, { param: "model" })
  }
  const status = query.get("status") ?? undefined
  if (status !== undefined && !statuses.includes(status)) {
    return yield* httpError(400, `status must be one of ${statuses.join(", ")}`, { param: "status" })
  }
  const rawLimit = query.get("limit")
  const limit = rawLimit === null ? 20 : /^\d{1,3}$/.test(rawLimit) ? Number(rawLimit) : NaN
  if (!(limit >= 1 && limit <= 100)) return yield* httpError(400, "limit must be an integer from 1 to 100", { param: "limit" })
  const rawAfter = query.get("after")
  const after = rawAfter === null ? undefined : decodeCursor(rawAfter)
  if (rawAfter !== null && after === undefined) {
    return yield* httpError(400, "after must be a cursor returned as `next` by this listing", { param: "after" })
  }
  const store = yield* TaskStore
  const rows = yield* store.list(principal.tenant, { entryId: model, status, after }, limit + 1).pipe(Effect.orDie)
  const page = rows.slice(0, limit)
  const data = yield* Effect.forEach(page, (task) => {
    const entry = taskEntries.get(task.entryId)
    return entry === undefined ? Effect.succeed({ model: task.entryId, url: null, task_info: taskInfo(task) }) : envelope(task, entry)
  })
  return HttpServerResponse.unsafeJson({ data, next: rows.length > limit ? encodeCursor(page[page.length - 1]!) : null })
})

/** What the routes need. */
export type Services =
  | Effect.Effect.Context<ReturnType<typeof events>>
  | Effect.Effect.Context<ReturnType<typeof cancel>>
  | Effect.Effect.Context<typeof list>

/** Adds the events and cancel routes of every task entry, and the listing. */
export const mount = <R>(router: HttpRouter.HttpRouter<never, R>, entries: ReadonlyArray<ModelEntry.ModelEntry>) => {
  let r: HttpRouter.HttpRouter<never, R | Services> = router.pipe(HttpRouter.get("/v1/tasks", handle("task", list)))
  for (const entry of entries) {
    if (!ModelEntry.isTaskEntry(entry)) continue
    r = r.pipe(
      HttpRouter.get(`${entry.path}/:task_id/events` as HttpRouter.PathInput, handle("task", events(entry))),
      HttpRouter.post(`${entry.path}/:task_id/cancel` as HttpRouter.PathInput, handle("task", cancel(entry)))
    )
  }
  return r
}

/**
 * The task surface, derived from the registry: for every task entry a create route
 * (`POST <path>` → 202 `{task_info}`) and a retrieval route (`GET <path>/{task_id}`). Nothing here
 * names a model: a new entry is a new pair of routes.
 */
import * as HttpRouter from "@effect/platform/HttpRouter"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import type { ModelEntry, TaskInfo } from "@genway/core"
import { Validate } from "@genway/registry"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import { createHash } from "node:crypto"
import * as Ledger from "../ledger/Ledger.js"
import * as Cadence from "../platform/Cadence.js"
import { uuidv7 } from "../platform/Ids.js"
import * as AnswerRows from "../platform/AnswerRows.js"
import * as Limits from "../platform/Limits.js"
import { Settings } from "../platform/Config.js"
import { MediaStore } from "../platform/MediaStore.js"
import * as Sandbox from "./Sandbox.js"
import { Scheduler } from "./Scheduler.js"
import * as TaskBodies from "./Bodies.js"
import { IdempotencyConflict, type InFlightExceeded, type Task, TaskStore } from "./Store.js"
import { Vendors } from "../vendors/Vendors.js"
import { ApiKeys } from "../platform/ApiKeys.js"
import { httpError, invalid } from "../http/Errors.js"
import { authenticate, identify, readJson } from "../http/Request.js"
import { traced } from "../observability/Request.js"

export const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

const iso = (ms: number) => new Date(ms).toISOString()

/** The `task_info` of a stored task. */
export const taskInfo = (task: Task, includeStatus = true): TaskInfo.TaskInfo => ({
  id: task.id,
  ...(includeStatus ? { status: task.status } : {}),
  created_at: iso(task.createdAt),
  updated_at: iso(task.updatedAt),
  ...(task.status === "failed" && task.error !== null ? { error: task.error } : {})
})

const sandboxHeader = (mode: "live" | "sandbox"): Record<string, string> => (mode === "sandbox" ? { "x-genway-sandbox": "true" } : {})

/**
 * When to look again at an unfinished task (whole seconds): when the workers next look at it,
 * bounded by the poll cadence (at least 1 s, at most its longest interval: the deployment's
 * `GATEWAY_POLL_INTERVAL_MS` when set, else the high end of the entry's `every`). A task a
 * worker holds (leased) with its stored time past is polled from that worker's hand, which
 * writes no time (tasks/Scheduler.ts, `keep`): the poll interval then (the deployment's
 * `GATEWAY_POLL_INTERVAL_MS`, or the entry's shortest).
 */
const retryAfterSeconds = (entry: ModelEntry.ModelEntry, task: Task, now: number, pollIntervalMs: Option.Option<number>): number => {
  const longest = Math.ceil(Cadence.longestPollMs(entry, pollIntervalMs) / 1000)
  const untilNext = task.nextRunAt > now || task.leaseOwner === null ? task.nextRunAt - now : Cadence.shortestPollMs(entry, pollIntervalMs)
  return Math.min(Math.max(1, longest), Math.max(1, Math.ceil(untilNext / 1000)))
}

/** When a finished task's stored media reach the end of the entry's retention, if it has one. */
const retentionEnd = (entry: ModelEntry.ModelEntry, task: Task): number | undefined =>
  entry.retention === null || task.finishedAt === null ? undefined : task.finishedAt + Duration.toMillis(Duration.decode(entry.retention))

/** `POST <entry.path>`: validate, store, answer 202; the vendor is called by the workers. */
export const create = (entry: ModelEntry.ModelEntry) =>
  Effect.gen(function*() {
    const caller = yield* identify
    yield* Limits.requireModel(caller, entry.id)
    // A create over max_in_flight is refused before it counts against the rpm (checked again,
    // exactly, when the task is stored).
    if (caller.maxInFlight != null && (yield* Effect.orDie(Effect.flatMap(TaskStore, (s) => s.inFlight(caller.keyId)))) >= caller.maxInFlight) {
      return yield* Limits.inFlightExceeded(caller.maxInFlight)
    }
    const principal = yield* Limits.admit(caller)
    const request = yield* HttpServerRequest.HttpServerRequest
    const json = yield* readJson(entry.maxBodyBytes, principal.tenant)
    const checked = yield* traced("validate", () => Validate.validate(entry, json))
    if (Either.isLeft(checked)) return yield* invalid(checked.left)
    const vendors = yield* Vendors
    const keys = yield* ApiKeys
    const mode = vendors.modeOf(entry.vendor)

    const hints: Record<string, string> = {}
    const outcome = request.headers[Sandbox.outcomeHeader]
    if (outcome !== undefined && mode === "sandbox") {
      const parsed = Sandbox.parseOutcome(outcome)
      if (typeof parsed === "string") return yield* httpError(400, parsed, { param: Sandbox.outcomeHeader })
      hints[Sandbox.outcomeHeader] = outcome.trim()
    }
    const idempotencyKey = request.headers["idempotency-key"] ?? null
    if (idempotencyKey !== null && (idempotencyKey.length === 0 || idempotencyKey.length > 255)) {
      return yield* httpError(400, "Idempotency-Key must be 1 to 255 characters", { param: "Idempotency-Key" })
    }

    // Time-ordered (UUID version 7): each new id sorts after the last, so the tasks' primary key
    // and the indexes keyed by task id grow at one end instead of at random pages (README,
    // "Task ids").
    const id = uuidv7()
    const now = yield* Clock.currentTimeMillis
    const media = yield* MediaStore
    // The hash covers what decides the task (body and hints), before spooling renames anything.
    const requestHash = idempotencyKey === null
      ? null
      : createHash("sha256").update(JSON.stringify([checked.right.body, hints])).digest("hex")
    const stored = yield* TaskBodies.toStored(checked.right.body, (i, v) => media.spool(id, i, v)).pipe(
      Effect.mapError(() => httpError(503, "the gateway could not store the request; try again"))
    )
    const store = yield* TaskStore
    // None for a key known to have no budget (nor its tenant): the create then has nothing to check
    // first, and on PostgreSQL is one statement (tasks/Store.ts). A budget counts every answer
    // already given, rows written behind it included (platform/AnswerRows.ts).
    const budgeted = !keys.budgetFree(principal.tenant, principal.keyId, now)
    if (budgeted) yield* AnswerRows.settled
    const result = yield* store.create(
      {
        id,
        tenant: principal.tenant,
        entryId: entry.id,
        vendor: entry.vendor,
        mode,
        request: stored,
        hints,
        idempotencyKey,
        requestHash,
        upstreamModel: entry.upstream.model,
        deadlineAt: now + Duration.toMillis(Duration.decode(entry.poll.deadline)),
        createdAt: now,
        keyId: principal.keyId,
        maxInFlight: principal.maxInFlight ?? null,
        ...(budgeted ? { guard: Ledger.checkBudgetOf(keys, principal, Ledger.reservationFor(entry, checked.right.body), now) } : {})
      },
      now
    ).pipe(
      // No task was made from this request: its spooled inputs go (a replay drops them below).
      Effect.tapError(() => (TaskBodies.hasSpool(stored) ? media.dropSpool(id) : Effect.void)),
      Effect.catchTag("IdempotencyConflict", (e: IdempotencyConflict) =>
        httpError(409, `Idempotency-Key was already used for task ${e.existing.id} with a different body`, {
          param: "Idempotency-Key"
        })),
      Effect.catchTag("InFlightExceeded", (e: InFlightExceeded) => Limits.inFlightExceeded(e.limit)),
      Effect.catchTag("BudgetExceeded", (e) => httpError(402, Ledger.describe(e), { title: "Budget exceeded", openAiCode: "insufficient_quota" })),
      Effect.catchTag("SqlError", (e) =>
        Effect.zipRight(Effect.logError("task insert failed", e), httpError(503, "the gateway could not store the task; try again")))
    )
    if (!result.replay) yield* Effect.flatMap(Scheduler, (s) => s.wake)
    else if (TaskBodies.hasSpool(stored)) yield* media.dropSpool(id)
    return HttpServerResponse.unsafeJson(
      { task_info: taskInfo(result.task, entry.createIncludesStatus) },
      {
        status: 202,
        headers: {
          location: `${entry.path}/${result.task.id}`,
          ...sandboxHeader(result.task.mode),
          ...(result.replay ? { "idempotent-replayed": "true" } : {})
        }
      }
    )
  })

/**
 * The caller's task of `entry` named by the path: 403 for a model outside the key's list, 400 for
 * an id that is not a UUID, 404 otherwise (another tenant's task included). Every task route uses it.
 */
export const ownTask = (entry: ModelEntry.ModelEntry) =>
  Effect.gen(function*() {
    const principal = yield* authenticate
    yield* Limits.requireModel(principal, entry.id)
    const params = yield* HttpRouter.params
    const id = params.task_id ?? ""
    if (!uuidPattern.test(id)) return yield* httpError(400, "task_id must be a UUID", { param: "task_id" })
    const store = yield* TaskStore
    const found = yield* store.find(principal.tenant, entry.id, id.toLowerCase()).pipe(Effect.orDie)
    if (Option.isNone(found)) return yield* httpError(404, `no task ${id} for ${entry.model}`, { param: "task_id" })
    return found.value
  })

/** `GET <entry.path>/{task_id}`: the task envelope; media by signed URL once completed. */
export const retrieve = (entry: ModelEntry.ModelEntry) =>
  Effect.gen(function*() {
    const task = yield* ownTask(entry)
    const body: Record<string, unknown> = { task_info: taskInfo(task) }
    const headers: Record<string, string> = sandboxHeader(task.mode)
    const now = yield* Clock.currentTimeMillis
    if (task.status === "pending" || task.status === "processing") {
      headers["retry-after"] = String(retryAfterSeconds(entry, task, now, (yield* Settings).pollIntervalMs))
    }
    if (task.status === "completed" && task.result !== null && entry.result !== undefined) {
      const media = yield* MediaStore
      body[entry.result] = yield* Effect.forEach(task.result, (item) => ("url" in item ? Effect.succeed(item.url) : media.signUrl(item.media)))
      // Past retention the stored media are deleted (their URLs answer 410): the envelope keeps its
      // shape, and this header says when the media ended.
      const ended = retentionEnd(entry, task)
      if (ended !== undefined && ended <= now && task.result.some((item) => "media" in item)) {
        headers["x-genway-media-retention-ended"] = iso(ended)
      }
    }
    return HttpServerResponse.unsafeJson(body, { headers })
  })

/**
 * Routes that are not models: health, readiness, the model list, the API description and the
 * signed media URLs.
 */
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import type { ModelEntry } from "@genway/core"
import { Registry } from "@genway/registry"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Database from "../platform/Database.js"
import * as Limits from "../platform/Limits.js"
import { MediaStore } from "../platform/MediaStore.js"
import { Vendors } from "../vendors/Vendors.js"
import { httpError } from "./Errors.js"
import { authenticate, requestUrl } from "./Request.js"

/** `GET /healthz`: the process answers. */
export const healthz = Effect.succeed(HttpServerResponse.unsafeJson({ status: "ok" }))

/**
 * `GET /readyz`: the database answers (migrations ran before the server started) and so does the
 * media store (`media_store`: `local` or `s3`).
 */
export const readyz = Effect.gen(function*() {
  const store = yield* MediaStore
  yield* Database.ping.pipe(Effect.catchAll(() => httpError(503, "the database is not reachable")))
  yield* store.ping.pipe(
    Effect.tapError((e) => Effect.logWarning("readyz: the media store does not answer", e.message)),
    Effect.catchAll(() => httpError(503, `the media store (${store.kind}) is not reachable`))
  )
  return HttpServerResponse.unsafeJson({ status: "ready", media_store: store.kind })
})

/**
 * `created` of every listed model: when this gateway process started serving the registry (Unix
 * seconds). The registry records no release dates, and 0 reads as "1970" in clients.
 */
const servingSince = Math.floor(Date.now() / 1000)

const fmt = (d: Duration.DurationInput) => Duration.format(Duration.decode(d))

/** The listing of one entry (also used at startup). */
export const describe = (entry: ModelEntry.ModelEntry, mode: "live" | "sandbox") => ({
  id: entry.id,
  object: "model" as const,
  created: servingSince,
  owned_by: entry.vendor,
  model: entry.model,
  endpoints: entry.endpoints,
  summary: entry.summary,
  kind: entry.kind,
  ...(entry.result !== undefined ? { result: entry.result } : {}),
  routes: entry.kind === "task"
    ? [{ method: "POST", path: entry.path }, { method: "GET", path: `${entry.path}/{task_id}` }]
    : entry.kind === "responses"
    ? [
      { method: "POST", path: entry.path },
      { method: "GET", path: `${entry.path}/{response_id}` },
      { method: "DELETE", path: `${entry.path}/{response_id}` },
      { method: "POST", path: `${entry.path}/{response_id}/cancel` },
      { method: "GET", path: `${entry.path}/{response_id}/input_items` }
    ]
    : [{ method: "POST", path: entry.path }],
  stage: entry.stage,
  mode,
  sandbox: mode === "sandbox",
  poll: entry.kind === "task"
    ? { initial: fmt(entry.poll.initial), every: entry.poll.every.map(fmt), deadline: fmt(entry.poll.deadline) }
    : null,
  retention: entry.retention === null ? null : fmt(entry.retention)
})

/** `GET /v1/models`: every entry, OpenAI list shape with Genway's details on each item. */
export const models = Effect.gen(function*() {
  const principal = yield* authenticate
  const registry = yield* Registry.Registry
  const vendors = yield* Vendors
  return HttpServerResponse.unsafeJson({
    object: "list",
    // A key with a model allow-list sees the models it may use.
    data: registry.entries.filter((e) => Limits.allows(principal, e.id)).map((e) => describe(e, vendors.modeOf(e.vendor)))
  })
})

/**
 * An entry by the id `/v1/models` lists (`<vendor>/<model>`) or by its
 * bare model name when no other entry shares it.
 */
export const findEntry = (entries: ReadonlyArray<ModelEntry.ModelEntry>, name: string): ModelEntry.ModelEntry | undefined => {
  const byId = entries.find((e) => e.id === name)
  if (byId !== undefined) return byId
  const byModel = entries.filter((e) => e.model === name)
  return byModel.length === 1 ? byModel[0] : undefined
}

/** `GET /v1/models/{id}`: one entry, as `/v1/models` lists it (the id's `/` may be sent as `%2F`). */
export const model = Effect.gen(function*() {
  yield* authenticate
  const request = yield* HttpServerRequest.HttpServerRequest
  const raw = requestUrl(request.url)?.pathname.replace(/^\/v1\/models\//, "") ?? ""
  const id = decodeURIComponent(raw)
  const registry = yield* Registry.Registry
  const vendors = yield* Vendors
  const entry = findEntry(registry.entries, id)
  if (entry === undefined) {
    return yield* httpError(404, `The model '${id.slice(0, 200)}' does not exist; GET /v1/models lists the models`, {
      param: "model",
      openAiCode: "model_not_found"
    })
  }
  return HttpServerResponse.unsafeJson(describe(entry, vendors.modeOf(entry.vendor)))
})

/** `GET /media/<key>?expires=&signature=`: a stored result, without a bearer token. */
export const media = Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  const url = requestUrl(request.url)
  if (url === undefined) return yield* httpError(404, "no such media")
  const key = decodeURIComponent(url.pathname.replace(/^\/media\//, ""))
  const store = yield* MediaStore
  const check = yield* store.checkSignature(key, url.searchParams.get("expires") ?? undefined, url.searchParams.get("signature") ?? undefined)
  if (check === "invalid") return yield* httpError(403, "invalid media signature")
  if (check === "expired") return yield* httpError(403, "this media URL has expired; retrieve the task again for a fresh URL")
  const found = yield* store.lookup(key).pipe(Effect.orDie)
  if (found._tag === "NotFound") return yield* httpError(404, "no such media")
  if (found._tag === "Gone") {
    return yield* httpError(410, `this media was deleted on ${new Date(found.deletedAt).toISOString()} at the end of its retention period`)
  }
  const headers: Record<string, string> = {
    "accept-ranges": "bytes",
    "cache-control": "private, max-age=3600"
  }
  const range = /^bytes=(\d*)-(\d*)$/.exec(request.headers["range"] ?? "")
  if (range !== null && (range[1] !== "" || range[2] !== "")) {
    const start = range[1] === "" ? Math.max(0, found.bytes - Number(range[2])) : Number(range[1])
    const end = range[1] === "" || range[2] === "" ? found.bytes - 1 : Math.min(Number(range[2]), found.bytes - 1)
    if (start > end || start >= found.bytes) {
      return HttpServerResponse.empty({ status: 416, headers: { "content-range": `bytes */${found.bytes}` } })
    }
    return HttpServerResponse.stream(store.read(found, { start, end }), {
      status: 206,
      contentType: found.contentType,
      contentLength: end - start + 1,
      headers: { ...headers, "content-range": `bytes ${start}-${end}/${found.bytes}` }
    })
  }
  return HttpServerResponse.stream(store.read(found), {
    contentType: found.contentType,
    contentLength: found.bytes,
    headers
  })
})

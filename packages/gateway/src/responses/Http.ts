/**
 * The OpenAI-compatible model responses surface (E2), for every entry of kind "responses":
 * `POST <path>` creates a response (one JSON object, or server-sent events with `stream: true`),
 * `GET <path>/{response_id}` reads a kept one back (`?stream=true&starting_after=<n>` streams a
 * background one again), `DELETE <path>/{response_id}` deletes it, `POST <path>/{response_id}/cancel`
 * cancels a background one and `GET <path>/{response_id}/input_items` lists its input. Errors take the OpenAI shape so official
 * clients raise their typed errors; `x-genway-sandbox: true` marks sandboxed answers.
 */
import * as Sse from "@effect/experimental/Sse"
import * as HttpRouter from "@effect/platform/HttpRouter"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import type * as SqlClient from "@effect/sql/SqlClient"
import type { ModelEntry, Responses } from "@genway/core"
import type { Registry } from "@genway/registry"
import { Validate } from "@genway/registry"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import type { ApiKeys } from "../platform/ApiKeys.js"
import * as InputItems from "./InputItems.js"
import { jsonOf, ResponsesService, type ServiceError } from "./Service.js"
import { type HttpError, httpError, invalid } from "../http/Errors.js"
import { authenticate, readJson, requestUrl } from "../http/Request.js"
import * as EventStream from "../http/EventStream.js"
import * as Usage from "../ledger/Usage.js"
import * as Limits from "../platform/Limits.js"
import { handle } from "../http/Handle.js"
import { traced } from "../observability/Request.js"

/** What this surface's routes need. */
export type Services = ApiKeys | ResponsesService | SqlClient.SqlClient | Registry.Registry

const sandboxHeader = (mode: "live" | "sandbox"): Record<string, string> => (mode === "sandbox" ? { "x-genway-sandbox": "true" } : {})

/** `Retry-After` (whole seconds, for every client) and `retry-after-ms` (what official clients prefer). */
const retryHeaders = (ms: number | undefined) =>
  ms === undefined ? undefined : { "retry-after": String(Math.max(1, Math.ceil(ms / 1000))), "retry-after-ms": String(Math.round(ms)) }

/** The client's answer for a failure of the service. */
export const toHttpError = (error: ServiceError): HttpError => {
  switch (error._tag) {
    case "UpstreamRejected":
      return httpError(error.status, error.message, { param: error.param ?? undefined, openAiCode: error.code ?? undefined })
    case "UpstreamAuthFailed":
      return httpError(502, error.message, { openAiType: "api_error", openAiCode: "upstream_auth_failed" })
    case "UpstreamRateLimited":
      return httpError(429, error.message, { openAiCode: error.code ?? "rate_limit_exceeded", headers: retryHeaders(error.retryAfterMs) })
    case "UpstreamUnavailable":
      return httpError(error.status, error.message, { openAiType: "api_error", headers: retryHeaders(error.retryAfterMs) })
    case "ResponseNotFound":
      return httpError(404, `Response with id '${error.id}' not found.`)
    case "RequestRefused":
      return httpError(400, error.message, { param: error.param, openAiCode: error.code })
    case "SqlError":
      return httpError(503, "the gateway could not keep the response; try again", { openAiType: "api_error" })
  }
}

/** One SSE frame: `event: <type>` and the event as `data`. */
const frame = (event: Responses.ResponseEvent): string =>
  Sse.encoder.write({ _tag: "Event", event: event.type, id: undefined, data: JSON.stringify(event) })

/**
 * The frames of a response's events, the first one produced before the answer is committed (a
 * failure before it is an HTTP error, never an empty `200`); a later failure ends the stream with
 * an `error` event.
 */
const guardedFrames = (events: Stream.Stream<Responses.ResponseEvent>) => {
  let sequence = -1
  const encode = (event: Responses.ResponseEvent) => {
    sequence = event.sequence_number
    return frame(event)
  }
  const errorFrame = () =>
    frame({
      type: "error",
      sequence_number: sequence + 1,
      code: "internal_error",
      message: "the gateway failed while streaming this response; the request id identifies it in the gateway's log",
      param: null
    })
  return EventStream.started(events, encode, errorFrame)
}

/** `POST <entry.path>`: validate, then answer with the response object or its event stream. */
export const create = (entry: ModelEntry.ModelEntry) =>
  Effect.gen(function*() {
    const principal = yield* authenticate
    yield* Limits.requireModel(principal, entry.id, "model")
    yield* Usage.requireQuota(principal)
    const json = yield* readJson(entry.maxBodyBytes, principal.tenant)
    const checked = yield* traced("validate", () => Validate.validate(entry, json))
    if (Either.isLeft(checked)) return yield* invalid(checked.left)
    const service = yield* ResponsesService
    // Forwarded as the client sent it: the schema only checked it.
    const request = { entry, tenant: principal.tenant, keyId: principal.keyId, body: json as Readonly<Record<string, unknown>> }
    const headers = sandboxHeader(service.mode)
    if (request.body["stream"] === true) {
      const events = yield* Effect.mapError(service.stream(request), toHttpError)
      const frames = yield* guardedFrames(events)
      return HttpServerResponse.stream(Stream.encodeText(frames), {
        contentType: "text/event-stream",
        headers: { ...headers, "cache-control": "no-cache", "x-accel-buffering": "no" }
      })
    }
    const response = yield* Effect.mapError(service.create(request), toHttpError)
    // A kept response is answered with the text its row holds (serialised once).
    return HttpServerResponse.text(jsonOf(response), { contentType: "application/json", headers })
  })

const idPattern = /^[A-Za-z0-9_.:-]{1,200}$/

/** The caller and the `{response_id}` of a request on one kept response; an id that cannot be one is a 404. */
const target = (entry: ModelEntry.ModelEntry) =>
  Effect.gen(function*() {
    const principal = yield* authenticate
    yield* Limits.requireModel(principal, entry.id)
    const id = (yield* HttpRouter.params).response_id ?? ""
    const notFound = httpError(404, `Response with id '${id.slice(0, 200)}' not found.`, { param: "response_id" })
    if (!idPattern.test(id)) return yield* notFound
    return { tenant: principal.tenant, id, notFound, service: yield* ResponsesService }
  })

/** `starting_after`: absent, or a sequence number. */
const startingAfterOf = (params: URLSearchParams | undefined) => {
  const raw = params?.get("starting_after") ?? null
  if (raw === null || raw === "") return Effect.succeed(undefined)
  const n = Number(raw)
  return Number.isSafeInteger(n) && n >= 0
    ? Effect.succeed(n)
    : httpError(400, "starting_after must be the sequence_number of an event (a whole number of 0 or more)", { param: "starting_after" })
}

/**
 * `GET <entry.path>/{response_id}`: a kept response of the caller's tenant; any other id is a 404.
 * With `?stream=true`, a background response's events again, those after `starting_after`.
 */
export const retrieve = (entry: ModelEntry.ModelEntry) =>
  Effect.gen(function*() {
    const { id, notFound, service, tenant } = yield* target(entry)
    const request = yield* HttpServerRequest.HttpServerRequest
    const params = requestUrl(request.url)?.searchParams
    if (params?.get("stream") === "true") {
      const startingAfter = yield* startingAfterOf(params)
      const resumed = yield* Effect.mapError(service.resume(tenant, entry, id, startingAfter), toHttpError)
      if (Option.isNone(resumed)) return yield* notFound
      const frames = yield* guardedFrames(resumed.value.events)
      return HttpServerResponse.stream(Stream.encodeText(frames), {
        contentType: "text/event-stream",
        headers: { ...sandboxHeader(resumed.value.mode), "cache-control": "no-cache", "x-accel-buffering": "no" }
      })
    }
    const found = yield* Effect.mapError(service.retrieve(tenant, entry, id), toHttpError)
    if (Option.isNone(found)) return yield* notFound
    return HttpServerResponse.text(found.value.json, { contentType: "application/json", headers: sandboxHeader(found.value.mode) })
  })

/** `DELETE <entry.path>/{response_id}`: deletes a kept response of the caller's tenant. */
export const remove = (entry: ModelEntry.ModelEntry) =>
  Effect.gen(function*() {
    const { id, notFound, service, tenant } = yield* target(entry)
    const deleted = yield* Effect.mapError(service.remove(tenant, entry, id), toHttpError)
    if (!deleted) return yield* notFound
    return HttpServerResponse.unsafeJson({ id, object: "response", deleted: true }, { headers: sandboxHeader(service.mode) })
  })

/** `POST <entry.path>/{response_id}/cancel`: cancels a kept background response; answers its state. */
export const cancel = (entry: ModelEntry.ModelEntry) =>
  Effect.gen(function*() {
    const { id, notFound, service, tenant } = yield* target(entry)
    const cancelled = yield* Effect.mapError(service.cancel(tenant, entry, id), toHttpError)
    if (Option.isNone(cancelled)) return yield* notFound
    return HttpServerResponse.text(cancelled.value.json, { contentType: "application/json", headers: sandboxHeader(cancelled.value.mode) })
  })

/** `GET <entry.path>/{response_id}/input_items`: a page of a kept response's input items (`order`, `limit`, `after`). */
export const inputItems = (entry: ModelEntry.ModelEntry) =>
  Effect.gen(function*() {
    const { id, notFound, service, tenant } = yield* target(entry)
    const request = yield* HttpServerRequest.HttpServerRequest
    const query = InputItems.parseQuery(requestUrl(request.url)?.searchParams ?? new URLSearchParams())
    if ("param" in query) return yield* httpError(400, query.message, { param: query.param })
    const items = yield* Effect.mapError(service.inputItems(tenant, entry, id), toHttpError)
    if (Option.isNone(items)) return yield* notFound
    return HttpServerResponse.unsafeJson(InputItems.page(items.value, query), { headers: sandboxHeader(service.mode) })
  })

/** Adds this surface's routes for the entries of its kind. */
export const mount = <R>(router: HttpRouter.HttpRouter<never, R>, entries: ReadonlyArray<ModelEntry.ModelEntry>) => {
  let r: HttpRouter.HttpRouter<never, R | Services> = router
  for (const entry of entries) {
    if (entry.kind !== "responses") continue
    r = r.pipe(
      HttpRouter.post(entry.path as HttpRouter.PathInput, handle("openai", create(entry), { serverTiming: true })),
      HttpRouter.get(`${entry.path}/:response_id` as HttpRouter.PathInput, handle("openai", retrieve(entry))),
      HttpRouter.del(`${entry.path}/:response_id` as HttpRouter.PathInput, handle("openai", remove(entry))),
      HttpRouter.post(`${entry.path}/:response_id/cancel` as HttpRouter.PathInput, handle("openai", cancel(entry))),
      HttpRouter.get(`${entry.path}/:response_id/input_items` as HttpRouter.PathInput, handle("openai", inputItems(entry)))
    )
  }
  return r
}

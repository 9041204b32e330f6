/**
 * `/v1/webhooks` (DESIGN.md §8): register, list, delete, send a test event, read the deliveries
 * log. Every route is the caller's tenant's: another tenant's endpoint is a 404.
 */
import * as HttpRouter from "@effect/platform/HttpRouter"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { httpError } from "../http/Errors.js"
import { handle } from "../http/Handle.js"
import { authenticate, readJson } from "../http/Request.js"
import { checkUrl } from "./Address.js"
import { type Delivery, type Endpoint, taskEvents, Webhooks } from "./Webhooks.js"

const iso = (ms: number) => new Date(ms).toISOString()

const view = (e: Endpoint, withSecret: boolean) => ({
  id: e.id,
  url: e.url,
  events: e.events,
  description: e.description,
  ...(withSecret ? { secret: e.secret } : {}),
  created_at: iso(e.createdAt)
})

const deliveryView = (d: Delivery) => ({
  id: d.id,
  event_id: d.eventId,
  type: d.type,
  status: d.status,
  attempts: d.attempts,
  last_status_code: d.lastStatusCode,
  last_error: d.lastError,
  next_attempt_at: d.status === "pending" ? iso(d.nextAttemptAt) : null,
  created_at: iso(d.createdAt)
})

const maxBody = 16 * 1024

/** `POST /v1/webhooks`. */
export const create = Effect.gen(function*() {
  const principal = yield* authenticate
  const json = yield* readJson(maxBody)
  if (typeof json !== "object" || json === null || Array.isArray(json)) {
    return yield* httpError(400, "the body must be a JSON object", { param: "body" })
  }
  const body = json as Record<string, unknown>
  const known = new Set(["url", "events", "description"])
  const extra = Object.keys(body).find((k) => !known.has(k))
  if (extra !== undefined) return yield* httpError(400, `unknown field ${extra}`, { param: extra })
  if (typeof body.url !== "string" || body.url.length === 0) {
    return yield* httpError(400, "url is required: the https URL that receives the events", { param: "url" })
  }
  let events: ReadonlyArray<string> = taskEvents
  if (body.events !== undefined) {
    if (!Array.isArray(body.events) || body.events.length === 0 || !body.events.every((e) => typeof e === "string")) {
      return yield* httpError(400, `events must be a non-empty array of event types (${taskEvents.join(", ")})`, { param: "events" })
    }
    const unknown = body.events.find((e) => !(taskEvents as ReadonlyArray<string>).includes(e))
    if (unknown !== undefined) {
      return yield* httpError(400, `unknown event type ${JSON.stringify(unknown)}; known: ${taskEvents.join(", ")}`, { param: "events" })
    }
    events = [...new Set(body.events as Array<string>)]
  }
  let description: string | null = null
  if (body.description !== undefined && body.description !== null) {
    if (typeof body.description !== "string" || body.description.length > 500) {
      return yield* httpError(400, "description must be a string of at most 500 characters", { param: "description" })
    }
    description = body.description
  }
  const webhooks = yield* Webhooks
  const checked = yield* Effect.promise(() => checkUrl(body.url as string, webhooks.rules))
  if (typeof checked === "string") return yield* httpError(400, checked, { param: "url" })
  const endpoint = yield* webhooks.create(principal.tenant, { url: body.url, events, description }).pipe(Effect.orDie)
  return HttpServerResponse.unsafeJson(view(endpoint, true), { status: 201 })
})

/** `GET /v1/webhooks`. */
export const list = Effect.gen(function*() {
  const principal = yield* authenticate
  const webhooks = yield* Webhooks
  const all = yield* webhooks.list(principal.tenant).pipe(Effect.orDie)
  return HttpServerResponse.unsafeJson({ data: all.map((e) => view(e, false)) })
})

const owned = Effect.gen(function*() {
  const principal = yield* authenticate
  const params = yield* HttpRouter.params
  const id = params.webhook_id ?? ""
  const webhooks = yield* Webhooks
  const found = /^ep_[0-9a-f]{32}$/.test(id) ? yield* webhooks.find(principal.tenant, id).pipe(Effect.orDie) : Option.none()
  if (Option.isNone(found)) return yield* httpError(404, `no webhook endpoint ${id}`, { param: "webhook_id" })
  return { endpoint: found.value, webhooks, tenant: principal.tenant }
})

/** `DELETE /v1/webhooks/{id}`: 204; its pending deliveries are dropped. */
export const remove = Effect.gen(function*() {
  const { endpoint, tenant, webhooks } = yield* owned
  yield* webhooks.remove(tenant, endpoint.id).pipe(Effect.orDie)
  return HttpServerResponse.empty({ status: 204 })
})

/** `POST /v1/webhooks/{id}/test`: 202 and a `webhook.test` event to that endpoint. */
export const test = Effect.gen(function*() {
  const { endpoint, webhooks } = yield* owned
  const eventId = yield* webhooks.sendTest(endpoint).pipe(Effect.orDie)
  return HttpServerResponse.unsafeJson({ event_id: eventId, type: "webhook.test" }, { status: 202 })
})

/** `GET /v1/webhooks/{id}/deliveries`: newest first. */
export const deliveries = Effect.gen(function*() {
  const { endpoint, webhooks } = yield* owned
  const all = yield* webhooks.deliveries(endpoint.id).pipe(Effect.orDie)
  return HttpServerResponse.unsafeJson({ data: all.map(deliveryView) })
})

/** What the routes need. */
export type Services = Effect.Effect.Context<typeof create> | Effect.Effect.Context<typeof deliveries>

/** Adds the webhook routes to a router. */
export const mount = <R>(router: HttpRouter.HttpRouter<never, R>) =>
  router.pipe(
    HttpRouter.post("/v1/webhooks", handle("task", create)),
    HttpRouter.get("/v1/webhooks", handle("task", list)),
    HttpRouter.del("/v1/webhooks/:webhook_id", handle("task", remove)),
    HttpRouter.post("/v1/webhooks/:webhook_id/test", handle("task", test)),
    HttpRouter.get("/v1/webhooks/:webhook_id/deliveries", handle("task", deliveries))
  )

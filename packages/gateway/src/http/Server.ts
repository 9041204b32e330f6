/**
 * The HTTP application: routes assembled from the registry, one error shape per surface, a
 * request id on every response, and no stack or secret in any answer.
 */
import * as HttpApp from "@effect/platform/HttpApp"
import * as HttpRouter from "@effect/platform/HttpRouter"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { ModelEntry } from "@genway/core"
import { Registry } from "@genway/registry"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import type * as Fiber from "effect/Fiber"
import * as FiberRef from "effect/FiberRef"
import { randomUUID } from "node:crypto"
import * as Admin from "../admin/Http.js"
import * as Usage from "../ledger/Usage.js"
import * as Chat from "../chat/Http.js"
import { Settings } from "../platform/Config.js"
import * as Cors from "./Cors.js"
import * as Fallback from "./Fallback.js"
import * as Front from "./Front.js"
import * as Docs from "./Docs.js"
import { handle } from "./Handle.js"
import { requestUrl } from "./Request.js"
import * as Responses from "../responses/Http.js"
import * as System from "./System.js"
import * as Tasks from "../tasks/Http.js"
import * as Observability from "../observability/Http.js"
import * as TaskRoutes from "../tasks/Routes.js"
import * as Webhooks from "../webhooks/Http.js"

/** Applies a surface's error shape to a handler (re-exported for the surfaces' modules). */
export { handle } from "./Handle.js"

/** What the routes need from the application's layers. */
export type Services =
  | Effect.Effect.Context<ReturnType<typeof Tasks.create>>
  | Effect.Effect.Context<ReturnType<typeof Tasks.retrieve>>
  | Effect.Effect.Context<typeof System.models>
  | Effect.Effect.Context<typeof System.media>
  | Effect.Effect.Context<typeof System.readyz>
  | Effect.Effect.Context<typeof Docs.page>
  | Chat.Services
  | Responses.Services
  | Effect.Effect.Context<typeof Observability.metrics>
  | Admin.Services
  | Effect.Effect.Context<typeof Usage.tenantUsage>
  | Webhooks.Services
  | TaskRoutes.Services

/** The router for a list of entries. */
export const router = (entries: ReadonlyArray<ModelEntry.ModelEntry>) => {
  let r: HttpRouter.HttpRouter<never, Services> = HttpRouter.empty.pipe(
    HttpRouter.get("/healthz", System.healthz),
    HttpRouter.get("/readyz", handle("task", System.readyz)),
    HttpRouter.get("/v1/models", handle("openai", System.models)),
    HttpRouter.get("/v1/models/*", handle("openai", System.model)),
    HttpRouter.get("/openapi.json", handle("task", Docs.openApiJson)),
    HttpRouter.get("/docs", handle("task", Docs.page)),
    HttpRouter.get("/playground", handle("task", Docs.playground)),
    HttpRouter.get("/media/*", handle("task", System.media)),
    HttpRouter.get("/metrics", handle("task", Observability.metrics))
  )
  r = Responses.mount(Chat.mount(r, entries), entries)
  r = Usage.mount(Admin.mount(r))
  r = TaskRoutes.mount(Webhooks.mount(r), entries)
  for (const entry of entries) {
    if (!ModelEntry.isTaskEntry(entry)) continue
    r = r.pipe(
      HttpRouter.post(entry.path as HttpRouter.PathInput, handle("task", Tasks.create(entry))),
      HttpRouter.get(`${entry.path}/:task_id` as HttpRouter.PathInput, handle("task", Tasks.retrieve(entry)))
    )
  }
  return r
}

/** The path of a request URL for messages, tolerating URLs that do not parse. */
const pathOf = (url: string): string => requestUrl(url)?.pathname ?? url.split("?")[0]!.slice(0, 200)

const requestIdPattern = /^[A-Za-z0-9._:-]{1,128}$/

/**
 * The application in two forms: `app`, the registry's routes behind the platform's router, and
 * `answer`, one static route's handler with the same framing (request id, CORS, observation,
 * tracing), for the gateway's own listener (http/Front.ts). `router` is the routes' router.
 */
export const application = Effect.gen(function*() {
  const registry = yield* Registry.Registry
  const base = router(registry.entries)
  const routes = Observability.instrumentRouter(base)
  const observe = Observability.middleware(registry.entries)
  const tracing = yield* Observability.TracingEnabled
  const notFound = Fallback.make(base, registry.entries)
  const cors = Cors.make((yield* Settings).corsOrigins ?? [])
  const framed = <E, R>(
    fiber: Fiber.RuntimeFiber<unknown, unknown>,
    request: HttpServerRequest.HttpServerRequest,
    handler: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>,
    route: string | undefined
  ) => {
    const inbound = request.headers["x-request-id"]
    const requestId = inbound !== undefined && requestIdPattern.test(inbound) ? inbound : randomUUID()
    const preflight = cors?.preflight(request)
    const answered = (response: HttpServerResponse.HttpServerResponse) =>
      HttpServerResponse.setHeader(cors === undefined ? response : cors.decorate(request, response), "x-request-id", requestId)
    if (preflight !== undefined) return Effect.succeed(answered(preflight))
    // The answer decorated in the observation's own step after the handler.
    const routed = observe(request, requestId, handler, route, answered)
    // Without an exported tracer no span is made, not even a no-op one. The observability layer
    // switches the tracer off for the whole process; an app served without it (tests, an
    // embedding program) switches it off here, per request.
    return tracing || !fiber.getFiberRef(FiberRef.currentTracerEnabled) ? routed : Effect.withTracerEnabled(routed, false)
  }
  const app = Effect.withFiberRuntime((fiber) => {
    const request = Context.unsafeGet(fiber.currentContext, HttpServerRequest.HttpServerRequest)
    const handler = Effect.catchTag(routes, "RouteNotFound", () => Effect.succeed(notFound(request.method, pathOf(request.url))))
    return framed(fiber, request, handler, undefined)
  }) satisfies HttpApp.Default<never, any>
  const answer: Front.Answer<never, Services> = (request, route) =>
    Effect.withFiberRuntime((fiber) => framed(fiber, request, Front.handlerOf(route), route.path))
  return { app, answer, router: base }
})

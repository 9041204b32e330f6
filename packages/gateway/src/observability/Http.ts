/**
 * The HTTP side of observability: route templates captured from the router, one metric update and
 * one info log line per request, the E1/E2 overhead histogram, and `GET /metrics`.
 */
import * as HttpRouter from "@effect/platform/HttpRouter"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import type { ModelEntry } from "@genway/core"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import { identity } from "effect/Function"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { timingSafeEqual } from "node:crypto"
import { httpError } from "../http/Errors.js"
import { Settings } from "../platform/Config.js"
import * as Logging from "./Logging.js"
import * as Metrics from "./Metrics.js"
import * as Prometheus from "./Prometheus.js"
import { attach, ofContext, type RequestTelemetry } from "./Request.js"
import * as TaskMetrics from "./TaskMetrics.js"

/** Whether request handlers run with tracing (set when traces are exported; off by default). */
export class TracingEnabled extends Context.Reference<TracingEnabled>()("@genway/gateway/observability/TracingEnabled", {
  defaultValue: () => false
}) {}

/** `:param` segments as `{param}`, the form the OpenAPI description and the metrics use. */
const template = (path: string) => path.replace(/:([A-Za-z0-9_]+)/g, "{$1}")

const noteRoute = Effect.withFiberRuntime<void>((fiber) => {
  const context = fiber.currentContext
  const cell = ofContext(context)
  const route = Context.getOption(context, HttpRouter.RouteContext)
  if (cell !== undefined && route._tag === "Some") cell.route = route.value.route.path
  return Effect.void
})

/**
 * The router with every handler first noting its route template on the request's telemetry
 * (mounts are kept with their options).
 */
export const instrumentRouter = <E, R>(router: HttpRouter.HttpRouter<E, R>): HttpRouter.HttpRouter<E, R> => {
  const routes = HttpRouter.transform(HttpRouter.fromIterable(router.routes), (handler) => Effect.zipRight(noteRoute, handler))
  let out = routes as unknown as HttpRouter.HttpRouter<E, R>
  for (const [path, app, options] of router.mounts) {
    out = HttpRouter.mountApp(out, path as `/${string}`, Effect.zipRight(noteRoute, app), options) as unknown as HttpRouter.HttpRouter<E, R>
  }
  return out
}

/**
 * Observes the application: `observe(request, requestId, app, route?, decorate?)` hangs the
 * request's cell on it (see observability/Request.ts; `route`, when known already, is its route
 * template), runs `app`, answers with its response passed through `decorate` (the framing's
 * headers), and updates the metrics and writes one info line (method, route template, status,
 * duration, tenant hash; the loggers add the request id from the cell). `entries` tells which
 * routes are synchronous (E1/E2: overhead, upstream labels).
 */
export const middleware = (entries: ReadonlyArray<ModelEntry.ModelEntry>) => {
  const sync = new Map<string, { readonly vendor: string; readonly operation: string }>()
  for (const e of entries) if (e.kind !== "task") sync.set(e.path, { vendor: e.vendor, operation: e.kind })
  const requests = Metrics.cached(Metrics.httpRequestsKey, ["route", "method", "status"])
  const durations = Metrics.cached(Metrics.httpDurationKey, ["route", "method"])
  const overheads = Metrics.cached(Metrics.overheadKey, ["route"])
  const labels = new Map<string, string>()
  const routeLabel = (path: string | undefined) => {
    if (path === undefined) return "unmatched"
    let l = labels.get(path)
    if (l === undefined) {
      l = template(path)
      labels.set(path, l)
    }
    return l
  }

  return <E, R>(
    request: HttpServerRequest.HttpServerRequest,
    requestId: string,
    app: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>,
    route?: string,
    decorate: (response: HttpServerResponse.HttpServerResponse) => HttpServerResponse.HttpServerResponse = identity
  ): Effect.Effect<HttpServerResponse.HttpServerResponse, E, R> => {
    const cell = attach<RequestTelemetry>(request, {
      id: requestId,
      route,
      tenant: undefined,
      upstreamMs: 0,
      upstreamCalls: 0,
      extraHeaders: undefined,
      get upstream() {
        return this.route === undefined ? undefined : sync.get(this.route)
      }
    })
    const started = performance.now()
    // One step after `app`: the metrics, the decorated answer, and the log line before it is returned.
    return Effect.flatMap(app, (answer) => {
      const response = decorate(answer)
      const ms = performance.now() - started
      const route = routeLabel(cell.route)
      const method = request.method
      const status = response.status
      requests([route, method, String(status)]).unsafeUpdate(1, [])
      durations([route, method]).unsafeUpdate(ms / 1000, [])
      if (cell.route !== undefined && sync.has(cell.route)) {
        overheads([route]).unsafeUpdate(Math.max(0, ms - cell.upstreamMs) / 1000, [])
      }
      return Effect.zipRight(
        Effect.logInfo(
          `${method} ${route} ${status}`,
          Logging.fields({ method, route, status, duration_ms: Math.round(ms * 1000) / 1000, tenant: cell.tenant })
        ),
        Effect.succeed(response)
      )
    })
  }
}

const bearer = /^Bearer[ ]+(\S+)\s*$/i

const sameSecret = (a: string, b: string) => {
  const x = Buffer.from(a)
  const y = Buffer.from(b)
  return x.length === y.length && timingSafeEqual(x, y)
}

/**
 * `GET /metrics`: Prometheus text. With `GATEWAY_METRICS_TOKEN` set, only that bearer token is
 * accepted (tenant API tokens are refused).
 */
export const metrics = Effect.gen(function*() {
  const settings = yield* Settings
  if (Option.isSome(settings.metricsToken)) {
    const request = yield* HttpServerRequest.HttpServerRequest
    const m = bearer.exec(request.headers["authorization"] ?? "")
    if (m === null || !sameSecret(m[1]!, Redacted.value(settings.metricsToken.value))) {
      return yield* httpError(401, "/metrics requires Authorization: Bearer <GATEWAY_METRICS_TOKEN>", {
        headers: { "www-authenticate": 'Bearer realm="genway-metrics"' }
      })
    }
  }
  yield* TaskMetrics.refresh.pipe(
    Effect.catchAllCause((cause) => Effect.logWarning("could not read task counts for /metrics", cause))
  )
  const text = yield* Effect.promise(Prometheus.render)
  return HttpServerResponse.text(text, { contentType: Prometheus.contentType })
})

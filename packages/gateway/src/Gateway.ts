/**
 * The gateway as layers, so it can be launched by the CLI, embedded in another service, or started
 * inside a test on an ephemeral port.
 */
import * as HttpMiddleware from "@effect/platform/HttpMiddleware"
import * as HttpServer from "@effect/platform/HttpServer"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import * as UpstreamClient from "./platform/UpstreamClient.js"
import type * as HttpClient from "@effect/platform/HttpClient"
import type { VendorAdapter } from "@genway/core"
import { Registry } from "@genway/registry"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type * as NodeHttp from "node:http"
import { createServer } from "node:http"
import * as ApiKeys from "./platform/ApiKeys.js"
import * as ChatService from "./chat/Service.js"
import { Settings } from "./platform/Config.js"
import * as AnswerRows from "./platform/AnswerRows.js"
import * as Database from "./platform/Database.js"
import * as BodyLimits from "./http/Limits.js"
import * as DataDirLock from "./platform/DataDirLock.js"
import * as Drain from "./http/Drain.js"
import * as Front from "./http/Front.js"
import * as Server from "./http/Server.js"
import * as LiveAdapters from "./vendors/LiveAdapters.js"
import * as Limits from "./platform/Limits.js"
import * as MediaStore from "./platform/MediaStore.js"
import * as Models from "./platform/Models.js"
import * as ResponsesService from "./responses/Service.js"
import * as ResponseStore from "./responses/Store.js"
import * as Scheduler from "./tasks/Scheduler.js"
import * as Progress from "./tasks/Progress.js"
import * as Sweeper from "./platform/Sweeper.js"
import * as TaskStore from "./tasks/Store.js"
import * as Ledger from "./ledger/Ledger.js"
import * as Usage from "./ledger/Usage.js"
import * as TransitionHooks from "./tasks/Hooks.js"
import * as Vendors from "./vendors/Vendors.js"
import * as Upstream from "./observability/Upstream.js"
import * as Observability from "./observability/Http.js"
import * as Webhooks from "./webhooks/Webhooks.js"

/** A reason the gateway refuses to start; printed as its message alone. */
export class StartupError extends Data.TaggedError("StartupError")<{ readonly message: string }> {
  constructor(args: { readonly message: string }) {
    super(args)
    // An operator's mistake, not a bug: the message says all, a stack trace would only add noise.
    this.stack = `StartupError: ${args.message}`
  }
}

/** Fails startup when `GATEWAY_REQUIRE_LIVE=1` and an enabled entry's vendor is sandboxed. */
const requireLive = Layer.effectDiscard(Effect.gen(function*() {
  const settings = yield* Settings
  const vendors = yield* Vendors.Vendors
  const registry = yield* Registry.Registry
  const sandboxed = [...new Set(registry.entries.map((e) => e.vendor))].filter((v) => vendors.modeOf(v) === "sandbox")
  if (sandboxed.length > 0) {
    const message = `sandboxed vendors: ${sandboxed.join(", ")} (set their VENDOR_* variables for live use)`
    if (settings.requireLive) return yield* new StartupError({ message: `GATEWAY_REQUIRE_LIVE=1 but ${message}` })
    yield* Effect.logWarning(message)
  }
}))

/**
 * The HTTP client towards vendors. Adapters take it when they are built, so it stays apart from
 * any client the embedding program (or a test) provides for itself.
 */
export const upstreamHttp: Layer.Layer<HttpClient.HttpClient> = Upstream.layer(Vendors.vendorIds).pipe(
  Layer.provide(UpstreamClient.layer),
  Layer.provide(NodeHttpClient.layerUndici)
)

/** The services of a gateway without background fibers: stores, registry, vendors, scheduler. */
export const services = <E, R, E2, R2>(
  liveAdapters: Effect.Effect<ReadonlyMap<string, VendorAdapter.VendorAdapter>, E, R>,
  registry: Layer.Layer<Registry.Registry, E2, R2>
) => {
  const stores = Layer.mergeAll(ApiKeys.layer, TaskStore.layer, ResponseStore.layer, MediaStore.layer, Limits.layer, AnswerRows.layer, Progress.layer).pipe(
    Layer.provideMerge(TransitionHooks.layer),
    Layer.provideMerge(Database.layer)
  )
  const upstream = Layer.mergeAll(Vendors.layer(liveAdapters), ChatService.layer, ResponsesService.layer).pipe(
    Layer.provide(upstreamHttp)
  )
  const base = Layer.mergeAll(registry, upstream).pipe(Layer.provideMerge(stores))
  return Layer.mergeAll(Scheduler.layer, Webhooks.layer, Ledger.layer, Usage.requestWriterLayer).pipe(Layer.provideMerge(base))
}

/** Everything but the HTTP listener: the services plus the worker loop and the retention sweeper. */
export const core = <E, R>(liveAdapters: Effect.Effect<ReadonlyMap<string, VendorAdapter.VendorAdapter>, E, R>) =>
  Layer.mergeAll(Scheduler.layerWorker, ResponsesService.layerWorker, Webhooks.layerWorker, Sweeper.layer, requireLive).pipe(
    Layer.provideMerge(services(liveAdapters, Models.layer)),
    // Taken before the database opens: a second process on one SQLite data directory stops here.
    Layer.provideMerge(DataDirLock.layer)
  )

/**
 * The application served on `server`: by the gateway's own listener for the static routes, the
 * platform's for the rest (http/Front.ts). With traces on (`TracingEnabled`) or `platformOnly`,
 * by the platform's alone: its server makes each request's server span.
 */
export const serve = (server: NodeHttp.Server, options: { readonly platformOnly?: boolean | undefined } = {}) =>
  Layer.unwrapEffect(Effect.gen(function*() {
    const application = yield* Server.application
    if (options.platformOnly === true || (yield* Observability.TracingEnabled)) return HttpServer.serve(application.app)
    return Layer.scopedDiscard(Effect.gen(function*() {
      const platform = yield* NodeHttpServer.makeHandler(application.app)
      const front = yield* Front.make(application.router, application.answer, platform)
      server.on("request", front)
      yield* Effect.addFinalizer(() => Effect.sync(() => server.off("request", front)))
    }))
  }))

/**
 * The HTTP server on the settings' host and port, serving the registry's routes. A port in use is
 * a one-line startup error; at shutdown requests in flight finish first (`Drain`).
 */
export const http = Layer.unwrapEffect(Effect.gen(function*() {
  const settings = yield* Settings
  // Without a trace exporter no server span is made per request (DESIGN.md §11: nothing
  // measurable is spent when tracing is unset); it cost a URL parse and header redaction each time.
  const exporting = Option.isSome(settings.otlpEndpoint)
  const server = createServer(BodyLimits.serverOptions(settings))
  const listener = NodeHttpServer.layer(() => server, { port: settings.port, host: settings.host }).pipe(
    Layer.catchAll((e) => Layer.fail(listenError(e.cause, settings.host, settings.port)))
  )
  const served = serve(server, { platformOnly: exporting }).pipe(HttpMiddleware.withTracerDisabledWhen(() => !exporting))
  return Drain.layer(server).pipe(Layer.provideMerge(served), Layer.provide(listener))
}))

/** Why the listener could not start, in the operator's words. */
const listenError = (cause: unknown, host: string, port: number) => {
  const code = (cause as { readonly code?: unknown } | undefined)?.code
  const message = code === "EADDRINUSE"
    ? `port ${port} is in use (another process listens on ${host}:${port}); stop it or set PORT to another port`
    : code === "EACCES"
    ? `not allowed to listen on ${host}:${port}; use a port above 1023 or run with the needed rights`
    : code === "EADDRNOTAVAIL"
    ? `cannot listen on ${host}:${port}: HOST is not an address of this machine`
    : `cannot listen on ${host}:${port}: ${(cause as Error | undefined)?.message ?? String(cause)}`
  return new StartupError({ message })
}

/** The whole gateway with the live adapters of the environment (settings provided by the caller). */
export const layer = http.pipe(Layer.provideMerge(core(LiveAdapters.fromEnvironment)))

/**
 * What the gateway learns about one HTTP request while answering it: its id, the matched route
 * template, the caller's tenant (hashed), the time spent waiting on vendors and the key's
 * `RateLimit-*` headers. One mutable cell per request, filled by the router, `authenticate`, the
 * limits and the upstream HTTP client, read once the response is ready (metrics, the request's log
 * line, `Server-Timing`, headers) and by the loggers (`request_id` on every line logged while
 * answering it).
 *
 * The cell hangs on the request's underlying message (`HttpServerRequest.source`, the same object
 * for a mounted app's request), so it is found from the request already in context: no service
 * provided, no log annotation, no fiber-local value set per request. Each of those copies the
 * fiber's locals, about 3-4 µs apiece; a request used to pay for six.
 */
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import type * as Tracer from "effect/Tracer"
import { createHash } from "node:crypto"

/** The state of the request being answered. */
export interface RequestTelemetry {
  /** The request id (`x-request-id`, the client's when well-formed). */
  readonly id: string
  /** The matched route template (`/v1/x/:task_id`), or undefined when no route matched. */
  route: string | undefined
  /** First 8 hex digits of SHA-256 of the tenant id, once authenticated. */
  tenant: string | undefined
  /**
   * Milliseconds spent waiting on vendors: until their answers began, and for JSON answers until
   * their bodies had arrived.
   */
  upstreamMs: number
  /** Calls made to vendors. */
  upstreamCalls: number
  /** Headers the answer gains (the key's `RateLimit-*`), unless it has its own. */
  extraHeaders: Readonly<Record<string, string>> | undefined
  /** For routes that call one vendor synchronously (E1/E2): the labels of those calls. */
  readonly upstream: { readonly vendor: string; readonly operation: string } | undefined
}

const cellKey = Symbol.for("@genway/gateway/observability/RequestTelemetry")

/** Hangs `cell` on `request` (see the module's comment). */
export const attach = <C extends RequestTelemetry>(request: HttpServerRequest.HttpServerRequest, cell: C): C => {
  const source = request.source as { [cellKey]?: RequestTelemetry } | null
  if (source !== null && typeof source === "object") source[cellKey] = cell
  return cell
}

/** The cell of the request in `context`, if any. */
export const ofContext = (context: Context.Context<never>): RequestTelemetry | undefined => {
  const request = Context.getOption(context, HttpServerRequest.HttpServerRequest)
  if (request._tag === "None") return undefined
  const source = request.value.source as { [cellKey]?: RequestTelemetry } | null
  return source !== null && typeof source === "object" ? source[cellKey] : undefined
}

/** Runs `f` with the current request's cell (undefined outside a request). */
export const withCurrent = <A, E, R>(f: (cell: RequestTelemetry | undefined) => Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.withFiberRuntime((fiber) => f(ofContext(fiber.currentContext)))

const tenantHashes = new Map<string, string>()

/** The log form of a tenant id: the first 8 hex digits of its SHA-256. */
export const tenantHash = (tenant: string): string => {
  let h = tenantHashes.get(tenant)
  if (h === undefined) {
    h = createHash("sha256").update(tenant).digest("hex").slice(0, 8)
    if (tenantHashes.size > 10_000) tenantHashes.clear()
    tenantHashes.set(tenant, h)
  }
  return h
}

/** Records the authenticated tenant on the request in `context` (no-op outside one). */
export const noteTenantIn = (context: Context.Context<never>, tenant: string): void => {
  const cell = ofContext(context)
  if (cell !== undefined) cell.tenant = tenantHash(tenant)
}

/**
 * `effect` as a span named `name` while the tracer is on (traces exported); with it off, `effect`
 * itself. `Effect.withSpan` under a disabled tracer starts no span but still does a span's
 * bookkeeping (a no-op span made, put in context, ended): measured on E2 (interleaved A/B, 16
 * rounds), the two per request cost about a tenth of the request's CPU.
 */
export const spanned = <A, E, R>(effect: Effect.Effect<A, E, R>, name: string, options?: Tracer.SpanOptions): Effect.Effect<A, E, R> =>
  Effect.withFiberRuntime((fiber) => (fiber.getFiberRef(FiberRef.currentTracerEnabled) ? Effect.withSpan(effect, name, options) : effect))

/** Runs a synchronous step (body validation) as a child span named `name` of the request's span. */
export const traced = <A>(name: string, f: () => A): Effect.Effect<A> =>
  // No stack capture: it cost about 25 microseconds per request whether or not spans are exported.
  spanned(Effect.sync(f), name, { captureStackTrace: false })

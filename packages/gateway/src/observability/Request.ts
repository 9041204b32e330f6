/**
 * What the gateway learns about one HTTP request while answering it: the matched route template,
 * the caller's tenant (hashed), and the time spent waiting on vendors. A mutable cell in the
 * request's context, filled by the router, `authenticate` and the upstream HTTP client, read once
 * the response is ready (metrics and the request's log line).
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import type * as Tracer from "effect/Tracer"
import { createHash } from "node:crypto"

/** The telemetry of the request being answered. */
export interface RequestTelemetry {
  /** The matched route template (`/v1/x/:task_id`), or undefined when no route matched. */
  route: string | undefined
  /** First 8 hex digits of SHA-256 of the tenant id, once authenticated. */
  tenant: string | undefined
  /** Milliseconds spent waiting on vendors (until their responses started). */
  upstreamMs: number
  /** For routes that call one vendor synchronously (E1/E2): the labels of those calls. */
  readonly upstream: { readonly vendor: string; readonly operation: string } | undefined
}

/** The current request's telemetry cell (absent outside the HTTP app). */
export class CurrentRequest extends Context.Tag("@genway/gateway/observability/CurrentRequest")<
  CurrentRequest,
  RequestTelemetry
>() {}

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

/** Records the authenticated tenant on the current request (no-op outside one). */
export const noteTenant = (tenant: string): Effect.Effect<void> =>
  Effect.serviceOption(CurrentRequest).pipe(
    Effect.map((cell) => {
      if (cell._tag === "Some") cell.value.tenant = tenantHash(tenant)
    })
  )

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
  // No stack capture: it cost about 25 µs per request whether or not spans are exported.
  spanned(Effect.sync(f), name, { captureStackTrace: false })

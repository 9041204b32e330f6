/**
 * Vendor calls: every request the gateway sends upstream goes through one instrumented
 * `HttpClient`, which counts it (`genway_upstream_requests_total{vendor,operation,outcome}`),
 * times it until the response starts (`genway_upstream_duration_seconds`), and adds that wait to
 * the current HTTP request's cell (for `genway_overhead_seconds` and `Server-Timing`). The client's own span
 * (`http.client …`) carries the W3C `traceparent` to the vendor when tracing is on.
 *
 * Labels come from the caller: task adapters are wrapped so each operation (submit, reconcile,
 * poll, download) names itself and its vendor; synchronous routes (E1/E2) are labelled by their
 * registry entry through the request's telemetry.
 */
import * as HttpClient from "@effect/platform/HttpClient"
import { CallLimit } from "@genway/core"
import type { VendorAdapter } from "@genway/core"
import * as Config from "effect/Config"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FiberRef from "effect/FiberRef"
import { globalValue } from "effect/GlobalValue"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as MediaType from "../platform/MediaType.js"
import * as Metrics from "./Metrics.js"
import { ofContext, spanned } from "./Request.js"

/** The vendor and operation of the upstream calls made in the current fiber. */
export const currentUpstream = globalValue(
  Symbol.for("@genway/gateway/observability/currentUpstream"),
  () => FiberRef.unsafeMake<{ readonly vendor: string; readonly operation: string } | undefined>(undefined)
)

const counts = Metrics.cached(Metrics.upstreamRequestsKey, ["vendor", "operation", "outcome"])
const durations = Metrics.cached(Metrics.upstreamDurationKey, ["vendor", "operation"])

const outcomeOf = (status: number) =>
  status < 400 ? "ok" : status === 429 ? "429" : status < 500 ? "4xx" : "5xx"

const unknown = { vendor: "unknown", operation: "unknown" } as const


const inHandKey = Symbol.for("@genway/gateway/upstream/bodyInHand")

/**
 * Whether `response`'s whole body is already in its client's hand (a response of the gateway's
 * client says so under this key: platform/UpstreamClient.ts): reading it waits for nothing.
 */
export const inHand = (response: object): boolean => (response as { readonly [inHandKey]?: boolean })[inHandKey] === true

/**
 * The HTTP client with every request measured and counted. `origins` maps a vendor's configured
 * origin to its id, for calls made outside a labelled operation (background pollers).
 *
 * A call made while answering a request also adds its wait to the request's cell (for
 * `genway_overhead_seconds` and `Server-Timing`): until the answer's head, and for a JSON answer
 * until its whole body has arrived (read here once; the client keeps it for the caller).
 */
export const instrument = (client: HttpClient.HttpClient, origins: ReadonlyMap<string, string> = new Map()): HttpClient.HttpClient => {
  const measured: HttpClient.HttpClient = HttpClient.transform(client, (effect, request) =>
    Effect.withFiberRuntime((fiber) => {
      const cell = ofContext(fiber.currentContext)
      const labels = fiber.getFiberRef(currentUpstream) ?? cell?.upstream ?? byOrigin(origins, request.url)
      const started = performance.now()
      let headMs: number | undefined
      // A body the client already holds (UpstreamClient reads JSON answers whole) has arrived: no read.
      const measured = cell === undefined ? effect : Effect.flatMap(effect, (response) => {
        headMs = performance.now() - started
        return inHand(response) || !MediaType.isJson(response.headers["content-type"]) ? Effect.succeed(response) : Effect.as(Effect.ignore(response.text), response)
      })
      return Effect.onExit(measured, (exit) =>
        Effect.sync(() => {
          const ms = performance.now() - started
          if (cell !== undefined) {
            cell.upstreamMs += ms
            cell.upstreamCalls++
          }
          const outcome = Exit.isSuccess(exit) ? outcomeOf(exit.value.status) : Exit.isInterrupted(exit) ? "cancelled" : "error"
          counts([labels.vendor, labels.operation, outcome]).unsafeUpdate(1, [])
          durations([labels.vendor, labels.operation]).unsafeUpdate((headMs ?? ms) / 1000, [])
        }))
    }))
  // Measuring changes no exchange: a client that enforces time limits still does.
  return CallLimit.keepMark(client, measured)
}

const byOrigin = (origins: ReadonlyMap<string, string>, url: string) => {
  if (origins.size === 0) return unknown
  try {
    const vendor = origins.get(new URL(url).origin)
    return vendor === undefined ? unknown : { vendor, operation: "other" }
  } catch {
    return unknown
  }
}

/**
 * The instrumented client over the `HttpClient` in context, knowing each vendor's origin from its
 * `VENDOR_<X>_BASE_URL` (for `vendor-x`).
 */
export const layer = (vendorIds: ReadonlyArray<string>): Layer.Layer<HttpClient.HttpClient, never, HttpClient.HttpClient> =>
  Layer.effect(
    HttpClient.HttpClient,
    Effect.gen(function*() {
      const client = yield* HttpClient.HttpClient
      const origins = new Map<string, string>()
      for (const id of vendorIds) {
        const name = `VENDOR_${id.replace(/^vendor-/, "").toUpperCase()}_BASE_URL`
        const base = yield* Config.option(Config.string(name)).pipe(Effect.orElseSucceed(() => Option.none<string>()))
        if (Option.isNone(base)) continue
        try {
          origins.set(new URL(base.value).origin, id)
        } catch {
          // a malformed URL is reported by the adapter's own configuration
        }
      }
      return instrument(client, origins)
    })
  )

const labelled = <A, E, R>(vendor: string, operation: string, effect: Effect.Effect<A, E, R>) =>
  spanned(Effect.locally(effect, currentUpstream, { vendor, operation }), `upstream.${operation}`, {
    kind: "client",
    captureStackTrace: false,
    attributes: { "genway.vendor": vendor }
  })

/** A task adapter whose calls are labelled (and traced) by vendor and operation. */
export const instrumentAdapter = (adapter: VendorAdapter.VendorAdapter): VendorAdapter.VendorAdapter => {
  const v = adapter.vendor
  const reconcile = adapter.reconcile
  const cancel = adapter.cancel
  return {
    ...adapter,
    submit: (task) => labelled(v, "submit", adapter.submit(task)),
    poll: (task) => labelled(v, "poll", adapter.poll(task)),
    download: (source) => labelled(v, "download", adapter.download(source)),
    ...(reconcile !== undefined ? { reconcile: (task: VendorAdapter.UpstreamTask) => labelled(v, "reconcile", reconcile(task)) } : {}),
    ...(cancel !== undefined
      ? { cancel: (task: VendorAdapter.UpstreamTask & { readonly upstreamRef: string }) => labelled(v, "cancel", cancel(task)) }
      : {})
  }
}

/** Every adapter of a map, instrumented. */
export const instrumentAdapters = (adapters: ReadonlyMap<string, VendorAdapter.VendorAdapter>) =>
  new Map([...adapters].map(([k, a]) => [k, instrumentAdapter(a)] as const))

/**
 * `Server-Timing: gateway;dur=<ms>, upstream;dur=<ms>` on E1/E2 answers (DESIGN.md §11), so the
 * gateway's overhead can be checked in production: `upstream` is the time spent waiting on the
 * vendor (for a stream, until its answer began), `gateway` the rest of the time until the answer's
 * head. An answer that called no vendor (sandboxed, or refused before the vendor) carries `gateway`
 * only.
 *
 * The upstream HTTP client adds its waits to the timing of the request being served (a fiber-local
 * cell set by `withServerTiming`); outside a timed request it adds nothing and costs one lookup.
 */
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import * as GlobalValue from "effect/GlobalValue"
import * as Layer from "effect/Layer"

/** The timing of one request being served. */
export interface Timing {
  /** Milliseconds spent waiting on vendors. */
  upstreamMs: number
  /** Upstream calls made. */
  calls: number
}

/** The timing of the request the current fiber serves, if it is timed. */
export const currentTiming: FiberRef.FiberRef<Timing | undefined> = GlobalValue.globalValue(
  Symbol.for("@genway/gateway/ServerTiming/currentTiming"),
  () => FiberRef.unsafeMake<Timing | undefined>(undefined)
)

const isJson = (contentType: string | undefined) => contentType !== undefined && /\bjson\b/i.test(contentType)

/**
 * The client with its waits counted in the current request's timing: until the answer's head,
 * and for a JSON answer until its whole body has arrived (read here once; the client caches it).
 */
export const timedClient = (client: HttpClient.HttpClient): HttpClient.HttpClient =>
  HttpClient.transform(client, (effect) =>
    Effect.flatMap(FiberRef.get(currentTiming), (timing) => {
      if (timing === undefined) return effect
      const t0 = performance.now()
      const done = () => {
        timing.upstreamMs += performance.now() - t0
        timing.calls++
      }
      return effect.pipe(
        Effect.tap((response) => (isJson(response.headers["content-type"]) ? Effect.ignore(response.text) : Effect.void)),
        Effect.ensuring(Effect.sync(done))
      )
    }))

/** The upstream client layer with timing, over `layer`. */
export const layerTimedClient = <E, R>(layer: Layer.Layer<HttpClient.HttpClient, E, R>): Layer.Layer<HttpClient.HttpClient, E, R> =>
  Layer.effect(HttpClient.HttpClient, Effect.map(HttpClient.HttpClient, timedClient)).pipe(Layer.provide(layer))

const ms = (n: number) => (Math.round(n * 100) / 100).toString()

/** The header's value for a request started at `t0` (a `performance.now()` reading). */
export const headerValue = (t0: number, timing: Timing, now = performance.now()): string => {
  const total = now - t0
  if (timing.calls === 0) return `gateway;dur=${ms(total)}`
  return `gateway;dur=${ms(Math.max(0, total - timing.upstreamMs))}, upstream;dur=${ms(timing.upstreamMs)}`
}

/** Times a handler: its answer carries `Server-Timing` (errors rendered by the handler included). */
export const withServerTiming = <E, R>(
  handler: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>
): Effect.Effect<HttpServerResponse.HttpServerResponse, E, R> =>
  Effect.suspend(() => {
    const t0 = performance.now()
    const timing: Timing = { upstreamMs: 0, calls: 0 }
    return handler.pipe(
      Effect.locally(currentTiming, timing),
      Effect.map((response) => HttpServerResponse.setHeader(response, "server-timing", headerValue(t0, timing)))
    )
  })

/**
 * The limits of a key (DESIGN.md §9) as the request path sees them: its model allow-list (403),
 * its request rate (`rpm`, 429 with `Retry-After` and `RateLimit-*`), and the answer for a create
 * over its `max_in_flight` (counted by the task store, exact across replicas).
 *
 * Request rates are counted by `@effect/experimental`'s RateLimiter: in Redis when
 * `GATEWAY_REDIS_URL` is set (one round trip, a Lua script, so replicas share one counter), in
 * process otherwise (no I/O at all). A Redis that cannot be reached never stops traffic: the
 * request is let through, `genway_rate_limiter_errors_total` counts it, and a warning is logged at
 * most once a minute.
 */
import * as RateLimiter from "@effect/experimental/RateLimiter"
import * as RateLimiterRedis from "@effect/experimental/RateLimiter/Redis"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { Redis } from "ioredis"
import { httpError } from "../http/Errors.js"
import { type RequestTelemetry, withCurrent } from "../observability/Request.js"
import type { Principal } from "./ApiKeys.js"
import { Settings } from "./Config.js"

/** Requests refused by a key's limit, by the limit (`rpm`, `max_in_flight`). */
export const rateLimitedTotal = Metric.counter("genway_rate_limited_total", {
  description: "Requests refused with 429 by a key's limit, by the limit that refused (rpm, max_in_flight)."
})

/** Limit checks that could not reach the shared counter store (the request was let through). */
export const rateLimiterErrorsTotal = Metric.counter("genway_rate_limiter_errors_total", {
  description: "Rate-limit checks that failed open because the counter store (Redis) could not be reached."
})

const refused = (reason: "rpm" | "max_in_flight") => Metric.increment(Metric.tagged(rateLimitedTotal, "reason", reason))

/**
 * `response` with the headers recorded on the request's cell (the `RateLimit-*` of a key with an
 * `rpm`, noted when it was admitted), if any; its own headers of the same names win.
 */
export const withHeadersOf = (
  cell: RequestTelemetry | undefined,
  response: HttpServerResponse.HttpServerResponse
): HttpServerResponse.HttpServerResponse => {
  const headers = cell?.extraHeaders
  if (headers === undefined) return response
  // The answer's own (a 429's) win.
  const missing: Record<string, string> = {}
  for (const [name, value] of Object.entries(headers)) if (response.headers[name] === undefined) missing[name] = value
  return HttpServerResponse.setHeaders(response, missing)
}

/** The request counter: a RateLimiter over the store of the deployment. */
export interface RequestCounter {
  readonly limiter: RateLimiter.RateLimiter
  /** Whether the store is shared (Redis): its failures are expected and fail open. */
  readonly shared: boolean
  /** Until when a failed shared store is left alone, and when its failure was last logged. */
  readonly breaker: { openUntil: number; lastLogged: number }
}

const memoryCounter = (): RequestCounter => ({
  limiter: Effect.runSync(RateLimiter.make.pipe(Effect.provide(RateLimiter.layerStoreMemory))),
  shared: false,
  breaker: { openUntil: 0, lastLogged: -Infinity }
})

/** The request counter in force; in process unless a layer provides the Redis one. */
export class RequestCounterRef extends Context.Reference<RequestCounterRef>()("@genway/gateway/Limits/RequestCounter", {
  defaultValue: memoryCounter
}) {}

// ioredis prints every connection error of a client without an `error` listener to stderr, and the
// RateLimiter's Redis store keeps its client to itself. Clients made for it carry this flag in
// their options, and their error events are dropped here: the failures surface (counted, logged at
// most once a minute) where a limit check fails.
const quietFlag = "genwayQuietErrors"
const installQuietErrors = (() => {
  let done = false
  return () => {
    if (done) return
    done = true
    const proto = Redis.prototype as unknown as { silentEmit?: (this: any, event: string, ...args: Array<unknown>) => unknown }
    const original = proto.silentEmit
    if (typeof original !== "function") return
    proto.silentEmit = function(this: any, event: string, ...args: Array<unknown>) {
      if (event === "error" && this?.options?.[quietFlag] === true && this.listeners("error").length === 0) return false
      return original.call(this, event, ...args)
    }
  }
})()

/** ioredis options for a `redis://` or `rediss://` URL, tuned to fail fast (the limiter fails open). */
export const redisOptions = (url: string) => {
  const u = new URL(url)
  const db = Number(u.pathname.replace(/^\//, "") || "0")
  return {
    host: u.hostname.replace(/^\[|\]$/g, ""),
    port: u.port === "" ? 6379 : Number(u.port),
    ...(u.username !== "" ? { username: decodeURIComponent(u.username) } : {}),
    ...(u.password !== "" ? { password: decodeURIComponent(u.password) } : {}),
    db: Number.isInteger(db) ? db : 0,
    ...(u.protocol === "rediss:" ? { tls: {} } : {}),
    // Commands wait for the connection at startup, but never across a failed attempt nor longer
    // than half a second: a check that cannot be made lets the request through.
    maxRetriesPerRequest: 0,
    connectTimeout: 1_000,
    commandTimeout: 500,
    retryStrategy: (times: number) => Math.min(times * 200, 2_000),
    [quietFlag]: true
  }
}

/** The request counter on Redis (`@effect/experimental`'s RateLimiter with its Redis store). */
export const redisCounter = (url: Redacted.Redacted<string>, prefix = "genway:ratelimit:") =>
  Effect.gen(function*() {
    installQuietErrors()
    const store = yield* RateLimiterRedis.make({ ...redisOptions(Redacted.value(url)), prefix })
    const limiter = yield* RateLimiter.make.pipe(Effect.provideService(RateLimiter.RateLimiterStore, store))
    return { limiter, shared: true, breaker: { openUntil: 0, lastLogged: -Infinity } } satisfies RequestCounter
  })

/**
 * The request counter of the settings: Redis with `GATEWAY_REDIS_URL`, else in process. A Redis
 * that does not answer at startup does not hold startup up: one probe in the background reports it.
 */
export const layer: Layer.Layer<RequestCounterRef, never, Settings> = Layer.scoped(
  RequestCounterRef,
  Effect.flatMap(Settings, (settings) =>
    Option.match(settings.redisUrl, {
      onNone: () => Effect.sync(memoryCounter),
      onSome: (url) =>
        Effect.tap(redisCounter(url), (counter) =>
          counter.limiter.consume({ key: "startup-probe", limit: 1_000_000, window: "1 second" }).pipe(
            // Reported only: requests still try the store (a slow start is no outage).
            Effect.catchAll((error) => (error.reason === "StoreError" ? storeFailed(counter, error.cause ?? error, false) : Effect.void)),
            Effect.forkScoped
          ))
    }))
)

// After a failed check the shared store is left alone this long (requests pass unchecked), so
// an outage costs no time per request; the log line is written at most once per minute.
const breakerMs = 2_000
const logEveryMs = 60_000

const storeFailed = (counter: RequestCounter, error: unknown, open = true) =>
  Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    if (open) counter.breaker.openUntil = now + breakerMs
    yield* Metric.increment(rateLimiterErrorsTotal)
    if (now - counter.breaker.lastLogged >= logEveryMs) {
      counter.breaker.lastLogged = now
      const reason = error instanceof Error ? error.message : String((error as { message?: unknown })?.message ?? error)
      yield* Effect.logWarning(
        open
          ? `rate limiter store unreachable; rpm limits are not enforced until it answers (${reason})`
          : `rate limiter store did not answer at startup (${reason}); rpm checks fail open while it does not answer`
      )
    }
  })

const seconds = (d: Duration.Duration) => Math.max(1, Math.ceil(Duration.toMillis(d) / 1000))

/**
 * Admits a request of an authenticated key: counts it against the key's `rpm` (429 over it) and
 * records the `RateLimit-*` headers for the answer. Keys without an `rpm` cost nothing.
 */
export const admit = (principal: Principal) =>
  principal.rpm === undefined || principal.rpm === null ? Effect.succeed(principal) : counted(principal, principal.rpm)

/** `admit` for a key with an `rpm`. */
const counted = (principal: Principal, rpm: number) =>
  Effect.gen(function*() {
    const counter = yield* RequestCounterRef
    if (counter.shared && (yield* Clock.currentTimeMillis) < counter.breaker.openUntil) {
      yield* Metric.increment(rateLimiterErrorsTotal)
      return principal
    }
    const result = yield* counter.limiter.consume({
      algorithm: "fixed-window",
      onExceeded: "fail",
      window: "1 minute",
      limit: rpm,
      key: `rpm:${principal.keyId}`
    }).pipe(
      Effect.map(Option.some),
      Effect.catchTag("RateLimiterError", (error) => {
        if (error.reason === "Exceeded") {
          const retry = String(seconds(error.retryAfter))
          return Effect.zipRight(
            refused("rpm"),
            httpError(429, `this key is limited to ${rpm} requests per minute; retry after ${retry} s`, {
              openAiCode: "rate_limit_exceeded",
              headers: {
                "retry-after": retry,
                "ratelimit-limit": String(rpm),
                "ratelimit-remaining": "0",
                "ratelimit-reset": retry
              }
            })
          )
        }
        return Effect.as(storeFailed(counter, error.cause ?? error), Option.none())
      })
    )
    if (Option.isSome(result)) {
      const headers = {
        "ratelimit-limit": String(rpm),
        "ratelimit-remaining": String(Math.max(0, result.value.remaining)),
        "ratelimit-reset": String(seconds(result.value.resetAfter))
      }
      yield* withCurrent((cell) => {
        if (cell !== undefined) cell.extraHeaders = headers
        return Effect.void
      })
    }
    return principal
  })

/** A `*` pattern as a regular expression over the whole entry id. */
const patternCache = new Map<string, RegExp>()
const toRegExp = (pattern: string) => {
  let re = patternCache.get(pattern)
  if (re === undefined) {
    re = new RegExp(`^${pattern.split("*").map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join(".*")}$`)
    if (patternCache.size > 1_000) patternCache.clear()
    patternCache.set(pattern, re)
  }
  return re
}

/** Whether the key may use the entry (by the entry id as `/v1/models` lists it). */
export const allows = (principal: Principal, entryId: string): boolean => {
  const models = principal.models
  if (models === undefined || models === null) return true
  return models.some((p) => p === entryId || (p.includes("*") && toRegExp(p).test(entryId)))
}

/** 403 unless the key may use the entry; `param` names the field that chose it (the body's `model`). */
export const requireModel = (principal: Principal, entryId: string, param?: string) =>
  allows(principal, entryId)
    ? Effect.void
    : httpError(403, `this API key is not allowed to use the model ${entryId}`, {
      openAiType: "permission_error",
      openAiCode: "model_not_allowed",
      ...(param !== undefined ? { param } : {})
    })

/** How long a client refused for `max_in_flight` is asked to wait. */
export const inFlightRetrySeconds = 5

/** The 429 of a create over the key's `max_in_flight`. */
export const inFlightExceeded = (limit: number) =>
  Effect.zipRight(
    refused("max_in_flight"),
    httpError(429, `this key may have at most ${limit} tasks pending or processing; retry when one has finished`, {
      openAiCode: "rate_limit_exceeded",
      headers: {
        "retry-after": String(inFlightRetrySeconds),
        "ratelimit-limit": String(limit),
        "ratelimit-remaining": "0",
        "ratelimit-reset": String(inFlightRetrySeconds)
      }
    })
  )

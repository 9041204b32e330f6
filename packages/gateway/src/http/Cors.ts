/**
 * Cross-origin access for browsers (`GATEWAY_CORS_ORIGINS`, off by default): preflights answered
 * with 204, and the allowed origin echoed on every answer to it. Headers are set on the response
 * itself, so they hold however the server runs the application.
 */
import type * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"

/** Headers a browser script may read from Genway's answers. */
const exposed = [
  "x-request-id",
  "x-genway-sandbox",
  "location",
  "retry-after",
  "retry-after-ms",
  "idempotent-replayed",
  "www-authenticate",
  "x-genway-media-retention-ended"
].join(", ")

/** CORS for a list of origins (`*` for any); `undefined` when the list is empty. */
export const make = (origins: ReadonlyArray<string>) => {
  if (origins.length === 0) return undefined
  const any = origins.includes("*")
  const allowed = new Set(origins.map((o) => o.replace(/\/+$/, "").toLowerCase()))
  const allowOrigin = (request: HttpServerRequest.HttpServerRequest): string | undefined => {
    const origin = request.headers["origin"]
    if (origin === undefined) return undefined
    return any || allowed.has(origin.toLowerCase()) ? origin : undefined
  }
  return {
    /** The answer to a preflight (`OPTIONS` with `Access-Control-Request-Method`), else `undefined`. */
    preflight: (request: HttpServerRequest.HttpServerRequest): HttpServerResponse.HttpServerResponse | undefined => {
      if (request.method !== "OPTIONS" || request.headers["access-control-request-method"] === undefined) return undefined
      const origin = allowOrigin(request)
      if (origin === undefined) return HttpServerResponse.empty({ status: 204, headers: { vary: "Origin" } })
      const asked = request.headers["access-control-request-headers"]
      return HttpServerResponse.empty({
        status: 204,
        headers: {
          "access-control-allow-origin": origin,
          "access-control-allow-methods": "GET, POST, DELETE, OPTIONS",
          "access-control-allow-headers": asked ?? "authorization, content-type, idempotency-key, x-request-id",
          "access-control-max-age": "600",
          vary: "Origin, Access-Control-Request-Headers"
        }
      })
    },
    /** The answer with the CORS headers its request's origin gets. */
    decorate: (request: HttpServerRequest.HttpServerRequest, response: HttpServerResponse.HttpServerResponse) => {
      const origin = allowOrigin(request)
      if (origin === undefined) return response
      return HttpServerResponse.setHeaders(response, {
        "access-control-allow-origin": origin,
        "access-control-expose-headers": exposed,
        vary: "Origin"
      })
    }
  }
}

/**
 * Reading requests: bearer authentication and JSON bodies with the limits of the route.
 */
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as Effect from "effect/Effect"
import { ApiKeys, type Principal } from "../platform/ApiKeys.js"
import * as Limits from "../platform/Limits.js"
import { httpError } from "./Errors.js"
import { singleAuthorization } from "./Limits.js"
import { noteTenant } from "../observability/Request.js"

const challenge = { "www-authenticate": 'Bearer realm="genway"' }

/**
 * The caller, from `Authorization: Bearer <token>`; 401 with a challenge otherwise. Not yet
 * counted against the key's `rpm`: `authenticate` does both.
 */
export const identify = Effect.gen(function*() {
  yield* singleAuthorization
  const request = yield* HttpServerRequest.HttpServerRequest
  const header = request.headers["authorization"]
  if (header === undefined || header.length === 0) {
    return yield* httpError(401, "missing bearer token: send Authorization: Bearer <API_TOKEN>", { headers: challenge })
  }
  const m = /^Bearer[ ]+(\S+)\s*$/i.exec(header)
  if (m === null) {
    return yield* httpError(401, "the Authorization header must be \"Bearer <API_TOKEN>\"", { headers: challenge })
  }
  const keys = yield* ApiKeys
  const verdict = yield* keys.resolve(m[1]!)
  if (verdict._tag !== "Ok") {
    return yield* httpError(401, verdict._tag === "Expired" ? "this API token has expired" : "invalid or revoked API token", {
      headers: { "www-authenticate": 'Bearer realm="genway", error="invalid_token"' },
      openAiCode: verdict._tag === "Expired" ? "expired_api_key" : "invalid_api_key"
    })
  }
  yield* noteTenant(verdict.principal.tenant)
  return verdict.principal satisfies Principal
})

/**
 * The caller, counted against its key's request rate (DESIGN.md §9): 401 as `identify`, 429 over
 * the `rpm`, and the `RateLimit-*` headers on the answer.
 */
export const authenticate = Effect.flatMap(identify, Limits.admit)

/** Reads a JSON body with the route's limits (http/Body.ts). */
export { readJson } from "./Body.js"

/**
 * A request's URL, or `undefined` when it does not parse (`//%5B`): such a request is simply not
 * found, never a 500.
 */
export const requestUrl = (url: string): URL | undefined => {
  try {
    const parsed = new URL(url, "http://gateway")
    decodeURIComponent(parsed.pathname)
    return parsed
  } catch {
    return undefined
  }
}

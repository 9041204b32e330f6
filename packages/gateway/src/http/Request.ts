/**
 * Reading requests: bearer authentication and JSON bodies with the limits of the route.
 */
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import { ApiKeys, type Principal, type Verdict } from "../platform/ApiKeys.js"
import { nowOf } from "../platform/FiberTime.js"
import * as Limits from "../platform/Limits.js"
import { type HttpError, httpError } from "./Errors.js"
import { duplicateAuthorization } from "./Limits.js"
import { noteTenantIn } from "../observability/Request.js"

const challenge = { "www-authenticate": 'Bearer realm="genway"' }

const missingToken = httpError(401, "missing bearer token: send Authorization: Bearer <API_TOKEN>", { headers: challenge })
const malformedHeader = httpError(401, "the Authorization header must be \"Bearer <API_TOKEN>\"", { headers: challenge })
const bearer = /^Bearer[ ]+(\S+)\s*$/i

/** The principal of an `Ok` verdict, noted on the request's telemetry; a 401 otherwise. */
const admitted = (context: Context.Context<never>, verdict: Verdict): Effect.Effect<Principal, HttpError> => {
  if (verdict._tag !== "Ok") {
    return Effect.fail(httpError(401, verdict._tag === "Expired" ? "this API token has expired" : "invalid or revoked API token", {
      headers: { "www-authenticate": 'Bearer realm="genway", error="invalid_token"' },
      openAiCode: verdict._tag === "Expired" ? "expired_api_key" : "invalid_api_key"
    }))
  }
  noteTenantIn(context, verdict.principal.tenant)
  return Effect.succeed(verdict.principal)
}

/**
 * The caller, from `Authorization: Bearer <token>`; 401 with a challenge otherwise (400 for more
 * than one such header). Not yet counted against the key's `rpm`: `authenticate` does both.
 *
 * One step of the runtime for a token that needs no database read (a `GATEWAY_API_KEYS` token, or
 * one verified within the key cache's window): the request, the key store and the clock are read
 * from the fiber, and `ApiKeys.known` answers synchronously; otherwise the store reads the key.
 */
export const identify: Effect.Effect<Principal, HttpError, HttpServerRequest.HttpServerRequest | ApiKeys> = Effect.withFiberRuntime(
  (fiber) => {
    const context = fiber.currentContext as Context.Context<HttpServerRequest.HttpServerRequest | ApiKeys>
    const request = Context.get(context, HttpServerRequest.HttpServerRequest)
    const duplicated = duplicateAuthorization(request)
    if (duplicated !== undefined) return Effect.fail(duplicated)
    const header = request.headers["authorization"]
    if (header === undefined || header.length === 0) return Effect.fail(missingToken)
    const m = bearer.exec(header)
    if (m === null) return Effect.fail(malformedHeader)
    const keys = Context.get(context, ApiKeys)
    const token = m[1]!
    const verdict = keys.known(token, nowOf(fiber))
    return verdict !== undefined ? admitted(context, verdict) : Effect.flatMap(keys.resolve(token), (v) => admitted(context, v))
  }
)

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

/**
 * Reading requests: bearer authentication and JSON bodies with the limits of the route.
 */
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as IncomingMessage from "@effect/platform/HttpIncomingMessage"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { ApiKeys, type Principal } from "../platform/ApiKeys.js"
import * as Limits from "../platform/Limits.js"
import { httpError } from "./Errors.js"

const challenge = { "www-authenticate": 'Bearer realm="genway"' }

/**
 * The caller, from `Authorization: Bearer <token>`; 401 with a challenge otherwise. Not yet
 * counted against the key's `rpm`: `authenticate` does both.
 */
export const identify = Effect.gen(function*() {
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
  return verdict.principal satisfies Principal
})

/**
 * The caller, counted against its key's request rate (DESIGN.md §9): 401 as `identify`, 429 over
 * the `rpm`, and the `RateLimit-*` headers on the answer.
 */
export const authenticate = Effect.flatMap(identify, Limits.admit)

/**
 * Reads a JSON body of at most `maxBytes`: 415 unless the content type is JSON, 413 when larger,
 * 400 when it does not parse. Parsed once; never re-serialised here.
 */
export const readJson = (maxBytes: number) =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const type = request.headers["content-type"]
    if (type === undefined || !/^application\/([a-z0-9.+-]*\+)?json\b/i.test(type.trim())) {
      return yield* httpError(415, "the request body must be JSON: send Content-Type: application/json")
    }
    const declared = Number(request.headers["content-length"])
    const tooLarge = () => httpError(413, `the request body exceeds ${maxBytes} bytes`)
    if (Number.isFinite(declared) && declared > maxBytes) return yield* tooLarge()
    const text = yield* request.text.pipe(
      IncomingMessage.withMaxBodySize(Option.some(maxBytes)),
      Effect.mapError((e) =>
        String(e.cause ?? e).includes("max") || String(e).includes("size")
          ? tooLarge()
          : httpError(400, "the request body could not be read"))
    )
    if (text.length === 0) return yield* httpError(400, "the request body is empty; send a JSON object", { param: "body" })
    try {
      return JSON.parse(text) as unknown
    } catch (e) {
      return yield* httpError(400, `malformed JSON: ${(e as Error).message}`, { param: "body" })
    }
  })

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

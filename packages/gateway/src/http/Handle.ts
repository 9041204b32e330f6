/**
 * One error surface applied to a handler: `HttpError` becomes the surface's body, a defect a 500
 * whose details stay in the log (under the request id), never in the answer.
 */
import type * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Limits from "../platform/Limits.js"
import { type HttpError, httpError, render, type Surface } from "./Errors.js"

/** The handler with its surface's error shape. */
export const handle = <R>(surface: Surface, handler: Effect.Effect<HttpServerResponse.HttpServerResponse, HttpError, R>) =>
  handler.pipe(
    Effect.catchTag("HttpError", (e) => Effect.succeed(render(e, surface))),
    Effect.catchAllCause((cause) =>
      Effect.zipRight(
        Effect.logError("request failed", Cause.pretty(cause)),
        Effect.succeed(render(httpError(500, "internal error; the request id identifies it in the gateway's log"), surface))
      )
    ),
    // A key's `RateLimit-*` headers, recorded when the request was admitted.
    Effect.flatMap(Limits.withResponseHeaders)
  )

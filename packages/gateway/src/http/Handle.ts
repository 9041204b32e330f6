/**
 * One error surface applied to a handler: `HttpError` becomes the surface's body, a defect a 500
 * whose details stay in the log (under the request id), never in the answer. The answer, whichever
 * it is, then gains the key's `RateLimit-*` headers recorded when the request was admitted (unless
 * it has its own), and — for E1/E2 creates (`serverTiming`) — `Server-Timing` (DESIGN.md §11).
 *
 * All of it in one step after the handler: the request's cell and the start time are read once,
 * before it, and the failure and success paths each end in a plain function of the response
 * (measured: a catch, a second catch, a `flatMap` for the headers and a `map` for the timing cost
 * an E2 request 12 Effect steps).
 */
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Limits from "../platform/Limits.js"
import { ofContext, type RequestTelemetry } from "../observability/Request.js"
import { type HttpError, httpError, render, type Surface } from "./Errors.js"
import { headerValue, none } from "./ServerTiming.js"

const internal = httpError(500, "internal error; the request id identifies it in the gateway's log")

/** The handler with its surface's error shape (and `Server-Timing` on its answers when `serverTiming`). */
export const handle = <R>(
  surface: Surface,
  handler: Effect.Effect<HttpServerResponse.HttpServerResponse, HttpError, R>,
  options?: { readonly serverTiming?: boolean }
): Effect.Effect<HttpServerResponse.HttpServerResponse, never, R> => {
  const timed = options?.serverTiming === true
  return Effect.withFiberRuntime((fiber) => {
    const cell = ofContext(fiber.currentContext)
    const t0 = timed ? performance.now() : 0
    const answer = (response: HttpServerResponse.HttpServerResponse) => {
      const headed = Limits.withHeadersOf(cell, response)
      return timed ? setTiming(headed, t0, cell) : headed
    }
    return Effect.matchCauseEffect(handler, {
      onFailure: (cause) => {
        const failure = Cause.failureOption(cause)
        if (Option.isSome(failure) && failure.value._tag === "HttpError") return Effect.succeed(answer(render(failure.value, surface)))
        return Effect.as(Effect.logError("request failed", Cause.pretty(cause)), answer(render(internal, surface)))
      },
      onSuccess: (response) => Effect.succeed(answer(response))
    })
  })
}

const setTiming = (response: HttpServerResponse.HttpServerResponse, t0: number, cell: RequestTelemetry | undefined) =>
  HttpServerResponse.setHeader(response, "server-timing", headerValue(t0, cell ?? none))

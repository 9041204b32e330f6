/**
 * Graceful stop of the HTTP listener: on shutdown, stop accepting connections, close idle
 * keep-alive ones, let requests in flight finish for up to a grace period, then cut the rest.
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as http from "node:http"

/** How long requests in flight may run on after shutdown begins. */
export const defaultGraceMs = 5_000

/**
 * A layer whose release drains `server`. Build it after the server's own layers (so it is
 * released before them): requests keep their handler while they finish.
 */
export const layer = (server: http.Server, graceMs: number = defaultGraceMs) =>
  Layer.scopedDiscard(Effect.gen(function*() {
    let inFlight = 0
    const idle = new Set<() => void>()
    server.on("request", (_req, res) => {
      inFlight++
      res.once("close", () => {
        inFlight--
        if (inFlight === 0) for (const f of idle) f()
      })
    })
    yield* Effect.addFinalizer(() =>
      Effect.gen(function*() {
        if (!server.listening) return
        yield* Effect.logInfo(inFlight > 0 ? `stopping: finishing ${inFlight} request(s) in flight` : "stopping")
        // Stops accepting; the callback (all connections gone) is not awaited here.
        server.close(() => {})
        server.closeIdleConnections()
        if (inFlight > 0) {
          const finished = yield* Effect.async<boolean>((resume) => {
            const done = () => resume(Effect.succeed(true))
            idle.add(done)
            const timer = setTimeout(() => resume(Effect.succeed(false)), graceMs)
            return Effect.sync(() => {
              idle.delete(done)
              clearTimeout(timer)
            })
          })
          if (!finished) yield* Effect.logWarning(`${inFlight} request(s) still running after ${graceMs} ms; closing them`)
        }
        server.closeAllConnections()
      })
    )
  }))

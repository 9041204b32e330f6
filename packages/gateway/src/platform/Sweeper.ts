/**
 * The retention sweeper: deletes result media past its entry's retention (2 days for G1 and G2)
 * every minute. Tasks stay readable; their media URLs then answer 410 Gone.
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schedule from "effect/Schedule"
import { MediaStore } from "./MediaStore.js"

/** How often the sweeper looks for expired media. */
export const interval = "1 minute"

/** Runs the sweep every `interval` for the lifetime of the layer. */
export const layer = Layer.scopedDiscard(
  Effect.gen(function*() {
    const media = yield* MediaStore
    const sweep = media.sweep.pipe(
      Effect.tap((n) => (n > 0 ? Effect.logInfo(`retention: deleted ${n} media file(s)`) : Effect.void)),
      Effect.catchAllCause((cause) => Effect.logWarning("retention sweep failed; will retry", cause))
    )
    yield* Effect.forkScoped(Effect.repeat(sweep, Schedule.spaced(interval)))
  })
)

/**
 * Event streams that never answer an empty `200`: the first frame is produced before the response
 * is committed, so a failure before it is an HTTP error; a failure after it (typed error or defect,
 * in the source or while encoding a frame) becomes one final error frame, then the end.
 */
import * as Cause from "effect/Cause"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"

/**
 * The frames of `events`, with the first one already produced. Fails with the cause (error or defect) of a failure
 * before the first frame, or an end without any (the caller answers it as an HTTP error); a later failure is logged and
 * ends the stream with `errorFrame()`.
 */
export const started = <A, E>(
  events: Stream.Stream<A, E>,
  encode: (event: A) => string,
  errorFrame: () => string
): Effect.Effect<Stream.Stream<string>, E> =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    const frames = Stream.mapChunks(events, Chunk.map(encode))
    const pull = yield* Scope.extend(Stream.toPull(frames), scope)
    const close = Scope.close(scope, Exit.void)
    // Pull until the first non-empty chunk (an upstream may send empty chunks first).
    let first: Chunk.Chunk<string> = Chunk.empty()
    let ended = false
    while (Chunk.isEmpty(first) && !ended) {
      const exit = yield* Effect.exit(pull)
      if (Exit.isSuccess(exit)) {
        first = exit.value
        continue
      }
      const failure = Cause.failureOption(exit.cause)
      if (Option.isSome(failure) && Option.isNone(failure.value)) {
        ended = true
        continue
      }
      yield* close
      // A typed error `Option.some(e)` or a defect: reported before anything is sent.
      return yield* Effect.failCause(Cause.flatMap(exit.cause, (e) => Option.isSome(e) ? Cause.fail(e.value) : Cause.empty))
    }
    if (ended) {
      yield* close
      return yield* Effect.failCause(Cause.die(new Error("the event stream ended before its first event")))
    }
    const rest = Stream.repeatEffectChunkOption(pull)
    return Stream.concat(Stream.fromChunk(first), rest).pipe(
      Stream.catchAllCause((cause) =>
        Cause.isInterruptedOnly(cause)
          ? Stream.failCause(cause as Cause.Cause<never>)
          : Stream.fromEffect(Effect.as(Effect.logError("an event stream failed after its first event", Cause.pretty(cause)), errorFrame()))),
      Stream.ensuring(close)
    )
  })

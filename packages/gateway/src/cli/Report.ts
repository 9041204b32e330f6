/**
 * How the `genway` command ends: an operator's mistake (a bad flag, a malformed setting, a port in
 * use, an unknown key) is one line on stderr and exit code 1, never a stack or a JSON dump; help
 * is plain text when the output is not a terminal; Ctrl-C is a clean exit 0.
 */
import * as ValidationError from "@effect/cli/ValidationError"
import * as Cause from "effect/Cause"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"

/** A mistake of the user, printed as its message alone. */
export class UsageError extends Error {
  readonly _tag = "UsageError"
  constructor(message: string) {
    super(message)
    this.name = "UsageError"
  }
}

const ansi = /\x1b\[[0-9;]*m/g

/** Whether output may carry colours: a terminal, and `NO_COLOR` unset. */
export const colours = (stream: { readonly isTTY?: boolean }) =>
  stream.isTTY === true && (process.env["NO_COLOR"] ?? "") === "" && process.env["TERM"] !== "dumb"

const plain = (args: ReadonlyArray<unknown>) => args.map((a) => (typeof a === "string" ? a.replace(ansi, "") : a))

/** The program with a console that drops ANSI escapes where the output is not a terminal. */
export const withPlainConsole = <A, E, R>(program: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.consoleWith((console) => {
    const out = colours(process.stdout)
    const err = colours(process.stderr)
    if (out && err) return program
    return Effect.withConsole(program, {
      ...console,
      log: (...args) => console.log(...(out ? args : plain(args))),
      info: (...args) => console.info(...(out ? args : plain(args))),
      error: (...args) => console.error(...(err ? args : plain(args))),
      warn: (...args) => console.warn(...(err ? args : plain(args)))
    })
  })

/** The one-line message of a failure the operator can act on, if it is one. */
const messageOf = (error: unknown): string => {
  if (typeof error === "object" && error !== null && "message" in error && typeof error.message === "string" && error.message !== "") {
    return error.message
  }
  return String(error)
}

/** Prints a failure once (the CLI has already printed its own validation errors). */
export const report = <A, E, R>(program: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  program.pipe(
    Effect.tapErrorCause((cause) => {
      if (Cause.isInterruptedOnly(cause)) return Effect.void
      const failure = Cause.failureOption(cause)
      if (Option.isSome(failure)) {
        if (ValidationError.isValidationError(failure.value)) return Effect.void
        return Console.error(`genway: ${messageOf(failure.value)}`)
      }
      // A defect: a bug of ours, so the details are worth printing.
      return Console.error(`genway: unexpected failure\n${Cause.pretty(cause)}`)
    })
  )

/**
 * Keeps a second SIGINT/SIGTERM from killing the process mid-shutdown: package runners (pnpm)
 * forward the terminal's Ctrl-C to a process that already got it, and a process killed by that
 * echo would turn a clean stop into a reported failure. Shutdown is bounded instead: if it has not
 * ended `hardStopMs` after the first signal, the process exits with code 1.
 */
export const onRepeatedSignals = (hardStopMs = 15_000) => {
  let first = true
  const onSignal = () => {
    if (!first) return
    first = false
    setTimeout(() => {
      process.stderr.write(`genway: shutdown did not finish within ${hardStopMs / 1000} s; exiting\n`)
      process.exit(1)
    }, hardStopMs).unref()
  }
  process.on("SIGINT", onSignal)
  process.on("SIGTERM", onSignal)
}

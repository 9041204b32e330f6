/**
 * Logs: `LOG_FORMAT=json` writes one JSON object per line on stdout (`time`, `level`, `msg`, then
 * `request_id` while a request is answered (from its cell, observability/Request.ts), the fiber's
 * annotations, then the entry's own fields: `method`, `route`,
 * `status`, `duration_ms`, `tenant` for requests; `task_id`, `model`, `from`, `to` for task changes,
 * see `fields`), and `LOG_LEVEL` sets the minimum
 * level. Nothing logged at info or below carries a token, a secret or prompt text: requests are
 * logged by route template and tenant hash, tasks by id, model and state.
 */
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import * as FiberRefs from "effect/FiberRefs"
import * as HashMap from "effect/HashMap"
import * as HashSet from "effect/HashSet"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import * as Tracer from "effect/Tracer"
import { ofContext } from "./Request.js"

const text = (u: unknown): string => {
  if (typeof u === "string") return u
  if (u instanceof Error) return u.message
  try {
    return JSON.stringify(u) ?? String(u)
  } catch {
    return String(u)
  }
}

/**
 * The fields of one log entry, passed as the last part of its message:
 * `Effect.logInfo("GET /x 200", Logging.fields({ route: "/x", status: 200 }))`. Both loggers write
 * them like annotations (after the fiber's own); unlike `Effect.annotateLogs`, they cost no
 * fiber-ref change and no hash map, which matters on lines written once per request. Undefined
 * values are left out. Another logger (Effect's default, in an embedding service) prints them as JSON.
 */
export class LogFields {
  constructor(readonly fields: Readonly<Record<string, unknown>>) {}
  toJSON() {
    return this.fields
  }
}

/** Fields for the last part of a log message (see `LogFields`). */
export const fields = (values: Readonly<Record<string, unknown>>): LogFields => new LogFields(values)

/** A message's text (its parts joined by spaces) and its fields, if its last part holds them. */
const split = (message: unknown): { readonly msg: string; readonly extra: LogFields | undefined } => {
  if (!Array.isArray(message)) return message instanceof LogFields ? { msg: "", extra: message } : { msg: text(message), extra: undefined }
  const last = message[message.length - 1]
  const extra = last instanceof LogFields ? last : undefined
  const parts = extra === undefined ? message : message.slice(0, -1)
  return { msg: parts.length === 1 ? text(parts[0]) : parts.map(text).join(" "), extra }
}

/**
 * stdout, written in batches: the lines logged within 20 ms leave in one write, at once past 64 Ki
 * characters, and before the process exits or writes an error line to stderr. A write is a system
 * call, synchronous for files and pipes on Linux: written once per turn of the event loop (as
 * before), a busy gateway wrote almost once per request, and that cost about a tenth of an E2
 * request's CPU (interleaved A/B, 14 rounds: 0.84 × with the 20 ms batch). A process killed with
 * SIGKILL can lose its last 20 ms of lines (never a task or a response: those are in the database).
 */
export const flushEveryMs = 20

const pending = { lines: [] as Array<string>, chars: 0, timer: undefined as ReturnType<typeof setTimeout> | undefined }

/** Writes the batched lines now. */
export const flush = (): void => {
  if (pending.timer !== undefined) {
    clearTimeout(pending.timer)
    pending.timer = undefined
  }
  if (pending.lines.length === 0) return
  const text = pending.lines.length === 1 ? pending.lines[0]! : pending.lines.join("")
  pending.lines = []
  pending.chars = 0
  process.stdout.write(text)
}

process.once("exit", flush)

// A stdout whose reader went away (a log pipe closed under the process: EPIPE) raises an `error`
// event on the stream; unhandled, it would end the gateway. The lines it cannot take are lost, as
// they would be anyway; requests and tasks go on.
process.stdout.on("error", () => {})

/**
 * Writes the batched lines and waits (at most `ms`) until stdout has handed everything to the
 * system: a process that exits right after can otherwise drop what a slow pipe reader has not
 * taken yet. The logger layer runs it when it is released, after the last line of a shutdown.
 */
export const flushAndDrain = (ms = 1_000): Effect.Effect<void> =>
  Effect.async<void>((resume) => {
    flush()
    if (process.stdout.writableLength === 0) return resume(Effect.void)
    const done = () => {
      clearTimeout(timer)
      process.stdout.off("drain", done)
      resume(Effect.void)
    }
    const timer = setTimeout(done, ms)
    process.stdout.once("drain", done)
  })

const writeOut = (line: string) => {
  pending.lines.push(line)
  pending.chars += line.length
  if (pending.chars > 65_536) return flush()
  // Unref'd: a pending batch does not keep the process alive (exit flushes it).
  if (pending.timer === undefined) pending.timer = setTimeout(flush, flushEveryMs).unref()
}

const spanOf = (context: FiberRefs.FiberRefs) => {
  const span = Context.getOption(FiberRefs.getOrDefault(context, FiberRef.currentContext), Tracer.ParentSpan)
  return span._tag === "Some" ? span.value : undefined
}

/** The id of the request being answered where the entry was logged, if any. */
const requestIdOf = (context: FiberRefs.FiberRefs) => ofContext(FiberRefs.getOrDefault(context, FiberRef.currentContext))?.id

/**
 * One JSON object per line; `withTrace` adds the `trace_id` and `span_id` of the current span
 * (only meaningful when spans are exported).
 */
export const jsonLogger = (withTrace: boolean) =>
  Logger.make<unknown, void>(({ annotations, cause, context, date, logLevel, message }) => {
    const { extra, msg } = split(message)
    const line: Record<string, unknown> = {
      time: date.toISOString(),
      level: logLevel.label.toLowerCase(),
      msg
    }
    const requestId = requestIdOf(context)
    if (requestId !== undefined) line.request_id = requestId
    if (HashMap.size(annotations) > 0) for (const [k, v] of HashMap.toEntries(annotations)) line[k] = v
    if (extra !== undefined) for (const k in extra.fields) if (extra.fields[k] !== undefined) line[k] = extra.fields[k]
    if (withTrace) {
      const span = spanOf(context)
      if (span !== undefined) {
        line.trace_id = span.traceId
        line.span_id = span.spanId
      }
    }
    if (!Cause.isEmpty(cause)) line.error = Cause.pretty(cause, { renderErrorCause: true })
    writeOut(JSON.stringify(line) + "\n")
  })

const bare = /^[^\s"=]+$/

const plain = (v: unknown) => {
  if (typeof v === "number" || typeof v === "boolean") return String(v)
  const s = typeof v === "string" ? v : text(v)
  return bare.test(s) ? s : JSON.stringify(s)
}

/** One line per entry: time, level, message, then `key=value` annotations (a cause follows). */
export const textLogger = (withTrace: boolean) =>
  Logger.make<unknown, void>(({ annotations, cause, context, date, logLevel, message }) => {
    const { extra, msg } = split(message)
    let line = `${date.toISOString()} ${logLevel.label} ${msg}`
    const requestId = requestIdOf(context)
    if (requestId !== undefined) line += ` request_id=${plain(requestId)}`
    if (HashMap.size(annotations) > 0) for (const [k, v] of HashMap.toEntries(annotations)) line += ` ${k}=${plain(v)}`
    if (extra !== undefined) for (const k in extra.fields) if (extra.fields[k] !== undefined) line += ` ${k}=${plain(extra.fields[k])}`
    if (withTrace) {
      const span = spanOf(context)
      if (span !== undefined) line += ` trace_id=${span.traceId}`
    }
    if (!Cause.isEmpty(cause)) line += `\n${Cause.pretty(cause, { renderErrorCause: true })}`
    if (logLevel._tag === "Error" || logLevel._tag === "Fatal") {
      flush()
      process.stderr.write(line + "\n")
    } else {
      writeOut(line + "\n")
    }
  })

/** `LOG_LEVEL` values (lower case) as Effect levels. */
export const levelOf = (name: string): LogLevel.LogLevel => {
  switch (name) {
    case "all":
    case "trace":
      return LogLevel.Trace
    case "debug":
      return LogLevel.Debug
    case "warn":
    case "warning":
      return LogLevel.Warning
    case "error":
      return LogLevel.Error
    case "fatal":
      return LogLevel.Fatal
    case "none":
      return LogLevel.None
    default:
      return LogLevel.Info
  }
}

/** Our logger in place of every other one (the CLI's pretty logger included). */
export const layer = (format: "json" | "text", withTrace = false): Layer.Layer<never> =>
  Layer.merge(
    Layer.fiberRefLocallyScopedWith(
      FiberRef.currentLoggers,
      () => HashSet.make(format === "json" ? jsonLogger(withTrace) : textLogger(withTrace))
    ),
    Layer.scopedDiscard(Effect.addFinalizer(() => flushAndDrain()))
  )

/** JSON lines in place of every other logger. */
export const layerJson: Layer.Layer<never> = layer("json")

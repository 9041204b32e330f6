/**
 * Logs: `LOG_FORMAT=json` writes one JSON object per line on stdout (`time`, `level`, `msg`, then
 * the log's annotations: `request_id`, `method`, `route`, `status`, `duration_ms`, `tenant` for
 * requests; `task_id`, `model`, `from`, `to` for task changes), and `LOG_LEVEL` sets the minimum
 * level. Nothing logged at info or below carries a token, a secret or prompt text: requests are
 * logged by route template and tenant hash, tasks by id, model and state.
 */
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as FiberRef from "effect/FiberRef"
import * as FiberRefs from "effect/FiberRefs"
import * as HashMap from "effect/HashMap"
import * as HashSet from "effect/HashSet"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import * as Tracer from "effect/Tracer"

const text = (u: unknown): string => {
  if (typeof u === "string") return u
  if (u instanceof Error) return u.message
  try {
    return JSON.stringify(u) ?? String(u)
  } catch {
    return String(u)
  }
}

const spanOf = (context: FiberRefs.FiberRefs) => {
  const span = Context.getOption(FiberRefs.getOrDefault(context, FiberRef.currentContext), Tracer.ParentSpan)
  return span._tag === "Some" ? span.value : undefined
}

/**
 * One JSON object per line; `withTrace` adds the `trace_id` and `span_id` of the current span
 * (only meaningful when spans are exported).
 */
export const jsonLogger = (withTrace: boolean) =>
  Logger.make<unknown, void>(({ annotations, cause, context, date, logLevel, message }) => {
    const parts = Array.isArray(message) ? message : [message]
    const line: Record<string, unknown> = {
      time: date.toISOString(),
      level: logLevel.label.toLowerCase(),
      msg: parts.map(text).join(" ")
    }
    for (const [k, v] of HashMap.toEntries(annotations)) line[k] = v
    if (withTrace) {
      const span = spanOf(context)
      if (span !== undefined) {
        line.trace_id = span.traceId
        line.span_id = span.spanId
      }
    }
    if (!Cause.isEmpty(cause)) line.error = Cause.pretty(cause, { renderErrorCause: true })
    process.stdout.write(JSON.stringify(line) + "\n")
  })

const plain = (v: unknown) => {
  const s = typeof v === "string" ? v : text(v)
  return /^[^\s"=]+$/.test(s) ? s : JSON.stringify(s)
}

/** One line per entry: time, level, message, then `key=value` annotations (a cause follows). */
export const textLogger = (withTrace: boolean) =>
  Logger.make<unknown, void>(({ annotations, cause, context, date, logLevel, message }) => {
    const parts = Array.isArray(message) ? message : [message]
    let line = `${date.toISOString()} ${logLevel.label} ${parts.map(text).join(" ")}`
    for (const [k, v] of HashMap.toEntries(annotations)) line += ` ${k}=${plain(v)}`
    if (withTrace) {
      const span = spanOf(context)
      if (span !== undefined) line += ` trace_id=${span.traceId}`
    }
    if (!Cause.isEmpty(cause)) line += `\n${Cause.pretty(cause, { renderErrorCause: true })}`
    const stream = logLevel._tag === "Error" || logLevel._tag === "Fatal" ? process.stderr : process.stdout
    stream.write(line + "\n")
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
  Layer.fiberRefLocallyScopedWith(
    FiberRef.currentLoggers,
    () => HashSet.make(format === "json" ? jsonLogger(withTrace) : textLogger(withTrace))
  )

/** JSON lines in place of every other logger. */
export const layerJson: Layer.Layer<never> = layer("json")

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

/** One JSON object per line. */
export const jsonLogger = Logger.make<unknown, void>(({ annotations, cause, context, date, logLevel, message }) => {
  const parts = Array.isArray(message) ? message : [message]
  const line: Record<string, unknown> = {
    time: date.toISOString(),
    level: logLevel.label.toLowerCase(),
    msg: parts.map(text).join(" ")
  }
  for (const [k, v] of HashMap.toEntries(annotations)) line[k] = v
  const span = Context.getOption(FiberRefs.getOrDefault(context, FiberRef.currentContext), Tracer.ParentSpan)
  if (span._tag === "Some" && span.value.traceId.length === 32) {
    line.trace_id = span.value.traceId
    line.span_id = span.value.spanId
  }
  if (!Cause.isEmpty(cause)) line.error = Cause.pretty(cause, { renderErrorCause: true })
  process.stdout.write(JSON.stringify(line) + "\n")
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

/** The JSON logger in place of the default one. */
export const layerJson: Layer.Layer<never> = Logger.replace(Logger.defaultLogger, jsonLogger)

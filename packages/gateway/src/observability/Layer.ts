/**
 * Observability for a gateway process, from its settings: the JSON logger (`LOG_FORMAT=json`),
 * the minimum level (`LOG_LEVEL`, unless the CLI's `--log-level` was given) and the OTLP tracer
 * (`OTEL_EXPORTER_OTLP_ENDPOINT`). The logger writes one line per entry in either format; without
 * an OTLP endpoint the whole process (requests and workers) runs without span bookkeeping.
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import type * as LogLevel from "effect/LogLevel"
import * as Option from "effect/Option"
import { Settings } from "../platform/Config.js"
import { TracingEnabled } from "./Http.js"
import * as Logging from "./Logging.js"
import * as Tracing from "./Tracing.js"

/** The layer; `cliLogLevel` says the command line already chose the level. */
export const layer = (options: { readonly cliLogLevel?: boolean } = {}) =>
  Layer.unwrapEffect(Effect.gen(function*() {
    const settings = yield* Settings
    let out: Layer.Layer<never> = Logging.layer(settings.logFormat, Option.isSome(settings.otlpEndpoint))
    if (Option.isSome(settings.logLevel) && options.cliLogLevel !== true) {
      out = Layer.merge(out, Logger.minimumLogLevel(Logging.levelOf(settings.logLevel.value)))
    }
    // Nothing exports spans: the workers' statements and steps make none either (each would cost
    // a span object and its bookkeeping for nothing).
    if (Option.isNone(settings.otlpEndpoint)) return Layer.merge(out, Layer.setTracerEnabled(false))
    return Layer.mergeAll(
      out,
      Tracing.layer(settings.otlpEndpoint.value, settings.otlpProtocol),
      Layer.succeed(TracingEnabled, true)
    )
  }))

/** Whether `argv` sets `--log-level` (it then wins over `LOG_LEVEL`). */
export const cliSetsLogLevel = (argv: ReadonlyArray<string>) =>
  argv.some((a) => a === "--log-level" || a.startsWith("--log-level="))

const levelPattern = /^(all|trace|debug|info|warning|warn|error|fatal|none)$/i

/** `argv` without `--log-level <level>` / `--log-level=<level>`, and that level. */
export const extractLogLevel = (
  argv: ReadonlyArray<string>
): { readonly args: ReadonlyArray<string>; readonly level: LogLevel.LogLevel | "invalid" | undefined } => {
  const args: Array<string> = []
  let raw: string | undefined
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!
    if (a === "--log-level") {
      raw = argv[i + 1] ?? ""
      i++
    } else if (a.startsWith("--log-level=")) {
      raw = a.slice("--log-level=".length)
    } else {
      args.push(a)
    }
  }
  if (raw === undefined) return { args, level: undefined }
  return { args, level: levelPattern.test(raw) ? Logging.levelOf(raw.toLowerCase()) : "invalid" }
}

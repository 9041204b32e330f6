/**
 * Observability for a gateway process, from its settings: the JSON logger (`LOG_FORMAT=json`),
 * the minimum level (`LOG_LEVEL`, unless the CLI's `--log-level` was given) and the OTLP tracer
 * (`OTEL_EXPORTER_OTLP_ENDPOINT`). With none set this layer adds nothing: requests run without
 * span bookkeeping.
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as Option from "effect/Option"
import { Settings } from "../platform/Config.js"
import { TracingEnabled } from "./Http.js"
import * as Logging from "./Logging.js"
import * as Tracing from "./Tracing.js"

/** The layer; `cliLogLevel` says the command line already chose the level. */
export const layer = (options: { readonly cliLogLevel?: boolean } = {}) =>
  Layer.unwrapEffect(Effect.gen(function*() {
    const settings = yield* Settings
    let out: Layer.Layer<never> = Layer.empty
    if (settings.logFormat === "json") out = Layer.merge(out, Logging.layerJson)
    if (Option.isSome(settings.logLevel) && options.cliLogLevel !== true) {
      out = Layer.merge(out, Logger.minimumLogLevel(Logging.levelOf(settings.logLevel.value)))
    }
    if (Option.isNone(settings.otlpEndpoint)) return out
    return Layer.mergeAll(
      out,
      Tracing.layer(settings.otlpEndpoint.value, settings.otlpProtocol),
      Layer.succeed(TracingEnabled, true)
    )
  }))

/** Whether `argv` sets `--log-level` (it then wins over `LOG_LEVEL`). */
export const cliSetsLogLevel = (argv: ReadonlyArray<string>) =>
  argv.some((a) => a === "--log-level" || a.startsWith("--log-level="))

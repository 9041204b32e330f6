/**
 * The `genway` command: `serve` (the default in the quick start) and `keys …` (cli/Keys.ts).
 */
import * as Command from "@effect/cli/Command"
import * as Effect from "effect/Effect"
import * as Logger from "effect/Logger"
import * as Option from "effect/Option"
import * as ApiKeys from "../platform/ApiKeys.js"
import * as Config from "../platform/Config.js"
import * as Gateway from "../Gateway.js"
import * as Observability from "../observability/Layer.js"
import * as Keys from "./Keys.js"
import { Registry } from "@genway/registry"
import { Vendors } from "../vendors/Vendors.js"
import * as Tasks from "./Tasks.js"

const serve = Command.make("serve", {}, () =>
  Effect.gen(function*() {
    const settings = yield* Config.Settings
    const keys = yield* ApiKeys.ApiKeys
    const vendors = yield* Vendors
    const registry = yield* Registry.Registry
    yield* Effect.logInfo(`Genway listening on http://${settings.host}:${settings.port} (public URL ${settings.publicUrl})`)
    yield* Effect.logInfo(`${registry.entries.length} models; sandboxed vendors: ${vendors.sandboxed.join(", ") || "none"}`)
    yield* Effect.logInfo(`data: ${Option.isSome(settings.databaseUrl) ? "PostgreSQL" : settings.dataDir}`)
    if (!(yield* keys.anyConfigured)) {
      yield* Effect.logWarning(
        "no API keys yet: set GATEWAY_API_KEYS=<token> or run `npx -y pnpm@10 genway keys create --name me`"
      )
    }
    return yield* Effect.never
  }).pipe(
    Effect.provide(Gateway.layer),
    Effect.provide(Observability.layer({ cliLogLevel: Observability.cliSetsLogLevel(process.argv) })),
    Effect.provide(Config.layer)
  )).pipe(
  Command.withDescription("Start the gateway (HTTP server, workers, retention sweeper)."))

/** The `genway` command tree. */
export const command = Command.make("genway").pipe(Command.withSubcommands([serve, Keys.command, Tasks.command]))

const runCommand = Command.run(command, { name: "genway", version: "0.1.0" })

/**
 * Runs the CLI on `argv`. `--log-level <level>` (anywhere) sets the minimum log level, over
 * `LOG_LEVEL`; it is handled here because @effect/cli's built-in option re-parses `argv` wrongly.
 */
export const run = (argv: ReadonlyArray<string>) => {
  const { args, level } = Observability.extractLogLevel(argv)
  if (level === "invalid") {
    return Effect.fail(new Error("--log-level must be one of trace, debug, info, warning, error, fatal, none"))
  }
  return level === undefined ? runCommand(args) : runCommand(args).pipe(Logger.withMinimumLogLevel(level))
}

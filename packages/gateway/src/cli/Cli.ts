/**
 * The `genway` command: `serve` (the default in the quick start) and `keys …` (cli/Keys.ts).
 */
import * as Command from "@effect/cli/Command"
import * as Effect from "effect/Effect"
import * as Logger from "effect/Logger"
import * as Option from "effect/Option"
import * as ApiKeys from "../platform/ApiKeys.js"
import * as Config from "../platform/Config.js"
import * as Heap from "../platform/Heap.js"
import * as Report from "./Report.js"
import * as Shared from "./Shared.js"
import * as Gateway from "../Gateway.js"
import * as Observability from "../observability/Layer.js"
import * as Keys from "./Keys.js"
import { Registry } from "@genway/registry"
import { Vendors } from "../vendors/Vendors.js"
import * as Tasks from "./Tasks.js"
import * as Usage from "./Usage.js"

const serve = Command.make("serve", {}, () =>
  Effect.gen(function*() {
    const settings = yield* Config.Settings
    const heap = yield* Heap.apply(settings.heapGrowingPercent ?? Heap.defaultPercent, settings.heapRoomMb ?? Heap.defaultRoomMb)
    const keys = yield* ApiKeys.ApiKeys
    const vendors = yield* Vendors
    const registry = yield* Registry.Registry
    yield* Effect.logInfo(`Genway listening on http://${settings.host}:${settings.port} (public URL ${settings.publicUrl})`)
    yield* Effect.logInfo(`${registry.entries.length} models; sandboxed vendors: ${vendors.sandboxed.join(", ") || "none"}`)
    yield* Effect.logInfo(`database: ${Shared.describeDatabase(settings)}`)
    yield* Effect.logInfo(Heap.describe(heap))
    if (!(yield* keys.anyConfigured)) {
      const dataDir = Option.isSome(settings.databaseUrl) ? "" : `GATEWAY_DATA_DIR=${settings.dataDir} `
      yield* Effect.logWarning(
        `no API keys yet: set GATEWAY_API_KEYS=<token>, or run \`${dataDir}npx -y pnpm@10.34.8 genway keys create --name me\`` +
          " (the CLI must use the server's GATEWAY_DATA_DIR or GATEWAY_DATABASE_URL)"
      )
    }
    return yield* Effect.never
  }).pipe(
    Effect.provide(Gateway.layer),
    // Logged once every layer is released: requests finished, leases released, database closed.
    Effect.onInterrupt(() => Effect.logInfo("stopped")),
    Effect.provide(Observability.layer({ cliLogLevel: Observability.cliSetsLogLevel(process.argv) })),
    Effect.provide(Config.layer)
  )).pipe(
  Command.withDescription("Start the gateway (HTTP server, workers, retention sweeper)."))

/** The `genway` command tree. */
export const command = Command.make("genway").pipe(Command.withSubcommands([serve, Keys.command, Tasks.command, Usage.command]))

const runCommand = Command.run(command, { name: "genway", version: "0.1.0" })

/** A node of @effect/cli's command descriptor tree, as far as it is read here. */
type Node =
  | { readonly _tag: "Standard" | "GetUserInput"; readonly name: string }
  | { readonly _tag: "Map"; readonly command: Node }
  | { readonly _tag: "Subcommands"; readonly parent: Node; readonly children: ReadonlyArray<Node> }

const nameOf = (node: Node): string =>
  node._tag === "Map" ? nameOf(node.command) : node._tag === "Subcommands" ? nameOf(node.parent) : node.name

const childrenOf = (node: Node): ReadonlyArray<Node> =>
  node._tag === "Map" ? childrenOf(node.command) : node._tag === "Subcommands" ? node.children : []

/**
 * An unknown subcommand (`genway keys bogus`), named with its place in the tree and the choices
 * there; `undefined` when the words before any flag all name commands. (The CLI library would
 * blame the top level, or print its error as JSON.)
 */
export const unknownCommand = (args: ReadonlyArray<string>): string | undefined => {
  let node = command.descriptor as unknown as Node
  const at = ["genway"]
  for (const arg of args) {
    const children = childrenOf(node)
    if (arg.startsWith("-") || children.length === 0) return undefined
    const next = children.find((c) => nameOf(c) === arg)
    if (next === undefined) {
      const choices = children.map((c) => `${at.join(" ")} ${nameOf(c)}`).join(", ")
      return `unknown command "${[...at, arg].join(" ")}"; use one of: ${choices} (add --help for details)`
    }
    at.push(arg)
    node = next
  }
  return undefined
}

/**
 * Runs the CLI on `argv`. `--log-level <level>` (anywhere) sets the minimum log level, over
 * `LOG_LEVEL`; it is handled here because @effect/cli's built-in option re-parses `argv` wrongly.
 */
export const run = (argv: ReadonlyArray<string>) => {
  const { args, level } = Observability.extractLogLevel(argv)
  if (level === "invalid") {
    return Effect.fail(new Report.UsageError("--log-level must be one of trace, debug, info, warning, error, fatal, none"))
  }
  const unknown = unknownCommand(args.slice(2))
  if (unknown !== undefined) return Effect.fail(new Report.UsageError(unknown))
  return level === undefined ? runCommand(args) : runCommand(args).pipe(Logger.withMinimumLogLevel(level))
}

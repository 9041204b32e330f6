/**
 * The `genway` command: `serve` (the default in the quick start) and `keys create|list|revoke`.
 */
import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as HelpDoc from "@effect/cli/HelpDoc"
import * as Options from "@effect/cli/Options"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as ApiKeys from "../platform/ApiKeys.js"
import * as Config from "../platform/Config.js"
import * as Database from "../platform/Database.js"
import * as Report from "./Report.js"
import * as Gateway from "../Gateway.js"
import { Registry } from "@genway/registry"
import { Vendors } from "../vendors/Vendors.js"
import * as path from "node:path"

/** Where this process keeps its state, in words (no credentials). */
export const describeDatabase = (settings: Config.GatewaySettings) =>
  Option.isSome(settings.databaseUrl)
    ? `PostgreSQL at ${postgresHost(Redacted.value(settings.databaseUrl.value))} (GATEWAY_DATABASE_URL)`
    : `SQLite ${path.join(settings.dataDir, "genway.db")} (GATEWAY_DATA_DIR=${settings.dataDir})`

const postgresHost = (url: string) => {
  try {
    const u = new URL(url)
    return `${u.hostname}${u.port ? `:${u.port}` : ""}${u.pathname}`
  } catch {
    return "the configured server"
  }
}

/** Says on stderr which database a command uses, so it can be matched with the server's. */
const announceDatabase = Layer.effectDiscard(
  Effect.flatMap(Config.Settings, (s) => Console.error(`database: ${describeDatabase(s)}`))
)

const keysLayer = ApiKeys.layer.pipe(
  Layer.provideMerge(Database.layer),
  Layer.provideMerge(announceDatabase),
  Layer.provideMerge(Config.layer)
)

/** A group's description that lists its subcommands (the CLI library omits them below the top). */
const withSubcommandList = (
  name: string,
  description: string,
  subcommands: ReadonlyArray<Command.Command<any, any, any, any>>
) =>
  HelpDoc.blocks([
    HelpDoc.p(description),
    HelpDoc.p(`Commands: ${subcommands.map((c) => `${name} ${[...Command.getNames(c)][0]}`).join(", ")}.`),
    HelpDoc.p(`Run \`genway ${name} <command> --help\` for a command's options.`)
  ])

const serve = Command.make("serve", {}, () =>
  Effect.gen(function*() {
    const settings = yield* Config.Settings
    const keys = yield* ApiKeys.ApiKeys
    const vendors = yield* Vendors
    const registry = yield* Registry.Registry
    yield* Effect.logInfo(`Genway listening on http://${settings.host}:${settings.port} (public URL ${settings.publicUrl})`)
    yield* Effect.logInfo(`${registry.entries.length} models; sandboxed vendors: ${vendors.sandboxed.join(", ") || "none"}`)
    yield* Effect.logInfo(`database: ${describeDatabase(settings)}`)
    if (!(yield* keys.anyConfigured)) {
      const dataDir = Option.isSome(settings.databaseUrl) ? "" : `GATEWAY_DATA_DIR=${settings.dataDir} `
      yield* Effect.logWarning(
        `no API keys yet: set GATEWAY_API_KEYS=<token>, or run \`${dataDir}npx -y pnpm@10.34.8 genway keys create --name me\`` +
          " (the CLI must use the server's GATEWAY_DATA_DIR or GATEWAY_DATABASE_URL)"
      )
    }
    return yield* Effect.never
  }).pipe(
    Effect.provide(Gateway.layer.pipe(Layer.provideMerge(Config.layer))),
    // Logged once every layer is released: requests finished, leases released, database closed.
    Effect.onInterrupt(() => Effect.logInfo("stopped"))
  )).pipe(
  Command.withDescription("Start the gateway (HTTP server, workers, retention sweeper)."))

const create = Command.make(
  "create",
  {
    name: Options.text("name").pipe(Options.optional, Options.withDescription("a label for the key")),
    tenant: Options.text("tenant").pipe(
      Options.optional,
      Options.withDescription("the tenant the key acts for; keys of one tenant see the same tasks (default: a new tenant)")
    )
  },
  ({ name, tenant }) =>
    Effect.gen(function*() {
      const keys = yield* ApiKeys.ApiKeys
      const made = yield* keys.create({ name: Option.getOrUndefined(name), tenant: Option.getOrUndefined(tenant) })
      yield* Console.log(`id:     ${made.id}\ntenant: ${made.tenant}\ntoken:  ${Redacted.value(made.token)}\n\nThe token is shown only now; store it safely.`)
    }).pipe(Effect.provide(keysLayer))
).pipe(Command.withDescription("Create an API key; prints its token once."))

const list = Command.make("list", {}, () =>
  Effect.gen(function*() {
    const keys = yield* ApiKeys.ApiKeys
    const all = yield* keys.list
    if (all.length === 0) return yield* Console.log("no keys")
    for (const k of all) {
      yield* Console.log(
        `${k.id}  tenant=${k.tenant}  prefix=${k.prefix}…  created=${new Date(k.createdAt).toISOString()}` +
          `${k.name ? `  name=${k.name}` : ""}${k.revokedAt ? `  REVOKED ${new Date(k.revokedAt).toISOString()}` : ""}`
      )
    }
  }).pipe(Effect.provide(keysLayer))).pipe(Command.withDescription("List API keys (never their tokens)."))

const revoke = Command.make("revoke", { id: Args.text({ name: "id" }) }, ({ id }) =>
  Effect.gen(function*() {
    const keys = yield* ApiKeys.ApiKeys
    const done = yield* keys.revoke(id)
    if (!done) return yield* Effect.fail(new Report.UsageError(`no active key ${id}; \`genway keys list\` shows the keys`))
    yield* Console.log(`revoked ${id}`)
  }).pipe(Effect.provide(keysLayer))).pipe(Command.withDescription("Revoke an API key."))

const keys = Command.make("keys").pipe(
  Command.withSubcommands([create, list, revoke]),
  Command.withDescription(withSubcommandList("keys", "Manage API keys.", [create, list, revoke]))
)

/** The `genway` command tree. */
export const command = Command.make("genway").pipe(Command.withSubcommands([serve, keys]))

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

/** Runs the CLI on `argv`. */
export const run = (argv: ReadonlyArray<string>) => {
  const unknown = unknownCommand(argv.slice(2))
  return unknown === undefined ? runCommand(argv) : Effect.fail(new Report.UsageError(unknown))
}

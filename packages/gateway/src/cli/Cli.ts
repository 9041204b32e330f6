/**
 * The `genway` command: `serve` (the default in the quick start) and `keys create|list|revoke`.
 */
import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as ApiKeys from "../platform/ApiKeys.js"
import * as Config from "../platform/Config.js"
import * as Database from "../platform/Database.js"
import * as Gateway from "../Gateway.js"
import { Registry } from "@genway/registry"
import { Vendors } from "../vendors/Vendors.js"
import * as Tasks from "./Tasks.js"

const keysLayer = ApiKeys.layer.pipe(Layer.provideMerge(Database.layer), Layer.provideMerge(Config.layer))

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
  }).pipe(Effect.provide(Gateway.layer.pipe(Layer.provideMerge(Config.layer))))).pipe(
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
    if (!done) return yield* Effect.fail(new Error(`no active key ${id}`))
    yield* Console.log(`revoked ${id}`)
  }).pipe(Effect.provide(keysLayer))).pipe(Command.withDescription("Revoke an API key."))

const keys = Command.make("keys").pipe(
  Command.withSubcommands([create, list, revoke]),
  Command.withDescription("Manage API keys.")
)

/** The `genway` command tree. */
export const command = Command.make("genway").pipe(Command.withSubcommands([serve, keys, Tasks.command]))

/** Runs the CLI on `argv`. */
export const run = Command.run(command, { name: "genway", version: "0.1.0" })

/**
 * What the `genway` subcommands share: which database they use (said on stderr), and group help
 * that lists its subcommands.
 */
import * as Command from "@effect/cli/Command"
import * as HelpDoc from "@effect/cli/HelpDoc"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Config from "../platform/Config.js"
import * as Database from "../platform/Database.js"

/** Where this process keeps its state, in words (no credentials). */
export const describeDatabase = (settings: Config.GatewaySettings) =>
  Option.isSome(settings.databaseUrl)
    ? `PostgreSQL at ${postgresHost(Redacted.value(settings.databaseUrl.value))} (GATEWAY_DATABASE_URL)`
    : `SQLite ${Database.sqliteFile(settings.dataDir)} (GATEWAY_DATA_DIR=${settings.dataDir})`

const postgresHost = (url: string) => {
  try {
    const u = new URL(url)
    return `${u.hostname}${u.port ? `:${u.port}` : ""}${u.pathname}`
  } catch {
    return "the configured server"
  }
}

/** Says on stderr which database a command uses, so it can be matched with the server's. */
export const announceDatabase = Layer.effectDiscard(
  Effect.flatMap(Config.Settings, (s) => Console.error(`database: ${describeDatabase(s)}`))
)


/** A group's description that lists its subcommands (the CLI library omits them below the top). */
export const withSubcommandList = (
  name: string,
  description: string,
  subcommands: ReadonlyArray<Command.Command<any, any, any, any>>
) =>
  HelpDoc.blocks([
    HelpDoc.p(description),
    HelpDoc.p(`Commands: ${subcommands.map((c) => `${name} ${[...Command.getNames(c)][0]}`).join(", ")}.`),
    HelpDoc.p(`Run \`genway ${name} <command> --help\` for a command's options.`)
  ])

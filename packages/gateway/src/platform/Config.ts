/**
 * The operator contract of DESIGN.md §3, read once at startup through Effect `Config`. Every
 * variable is optional; a malformed one stops startup with its name in the message.
 */
import * as Config from "effect/Config"
import * as ConfigError from "effect/ConfigError"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as path from "node:path"

/** Settings of one gateway process. */
export interface GatewaySettings {
  readonly host: string
  readonly port: number
  readonly apiKeys: ReadonlyArray<Redacted.Redacted<string>>
  readonly dataDir: string
  readonly databaseUrl: Option.Option<Redacted.Redacted<string>>
  readonly publicUrl: string
  readonly sandboxDelayMs: number
  readonly pollIntervalMs: Option.Option<number>
  readonly modelsFile: Option.Option<string>
  readonly requireLive: boolean
  /** How long a signed media URL stays valid. */
  readonly mediaUrlTtlMs: number
  /** How many tasks one worker pass claims, and how many it runs at once. */
  readonly workerBatch: number
  readonly workerConcurrency: number
  /** Origins allowed to call from a browser (`GATEWAY_CORS_ORIGINS`, `*` for any); empty: no CORS. */
  readonly corsOrigins?: ReadonlyArray<string>
}

/** The settings in force. */
export class Settings extends Context.Tag("@genway/gateway/Settings")<Settings, GatewaySettings>() {}

/**
 * An optional variable where an empty value counts as unset (`FOO=` in a shell or compose file);
 * `parse` returns the value or the reason it is malformed.
 */
const optional = <A>(name: string, parse: (raw: string) => Either.Either<A, string>): Config.Config<Option.Option<A>> =>
  Config.string(name).pipe(
    Config.option,
    Config.mapOrFail((raw) => {
      if (Option.isNone(raw) || raw.value.trim() === "") return Either.right(Option.none())
      return Either.match(parse(raw.value.trim()), {
        onLeft: (reason) => Either.left(ConfigError.InvalidData([name], `${name} ${reason}`)),
        onRight: (a) => Either.right(Option.some(a))
      })
    })
  )

const httpUrl = (raw: string): Either.Either<string, string> => {
  try {
    const u = new URL(raw)
    if (u.protocol === "http:" || u.protocol === "https:") return Either.right(raw.replace(/\/+$/, ""))
  } catch {
    // reported below
  }
  return Either.left("must be an absolute http(s) URL")
}

const splitKeys = (r: Redacted.Redacted<string>): ReadonlyArray<Redacted.Redacted<string>> =>
  Redacted.value(r).split(",").map((s) => s.trim()).filter((s) => s.length > 0).map((s) => Redacted.make(s))

/** Reads the settings from the environment (or any ConfigProvider). */
export const settings: Config.Config<GatewaySettings> = Config.all({
  host: Config.string("HOST").pipe(Config.withDefault("127.0.0.1")),
  port: Config.port("PORT").pipe(Config.withDefault(8080)),
  apiKeys: optional("GATEWAY_API_KEYS", (raw) => Either.right(Redacted.make(raw))).pipe(
    Config.map(Option.match({ onNone: () => [], onSome: splitKeys }))
  ),
  dataDir: Config.string("GATEWAY_DATA_DIR").pipe(Config.withDefault("./data"), Config.map((d) => path.resolve(d))),
  databaseUrl: optional("GATEWAY_DATABASE_URL", (raw) =>
    /^postgres(ql)?:\/\//.test(raw) ? Either.right(Redacted.make(raw)) : Either.left("must be a postgres:// URL")),
  publicUrl: optional("GATEWAY_PUBLIC_URL", httpUrl),
  sandboxDelayMs: Config.integer("GATEWAY_SANDBOX_DELAY_MS").pipe(
    Config.validate({ message: "GATEWAY_SANDBOX_DELAY_MS must be >= 0", validation: (n) => n >= 0 }),
    Config.withDefault(4000)
  ),
  pollIntervalMs: optional("GATEWAY_POLL_INTERVAL_MS", (raw) =>
    /^\d+$/.test(raw) && Number(raw) >= 10 ? Either.right(Number(raw)) : Either.left("must be an integer number of milliseconds >= 10")),
  modelsFile: optional("GATEWAY_MODELS_FILE", Either.right),
  requireLive: Config.boolean("GATEWAY_REQUIRE_LIVE").pipe(Config.withDefault(false)),
  mediaUrlTtlMs: Config.integer("GATEWAY_MEDIA_URL_TTL_SECONDS").pipe(
    Config.validate({ message: "GATEWAY_MEDIA_URL_TTL_SECONDS must be >= 1", validation: (n) => n >= 1 }),
    Config.withDefault(24 * 3600),
    Config.map((s) => s * 1000)
  ),
  workerBatch: Config.integer("GATEWAY_WORKER_BATCH").pipe(
    Config.validate({ message: "GATEWAY_WORKER_BATCH must be >= 1", validation: (n) => n >= 1 }),
    Config.withDefault(200)
  ),
  workerConcurrency: Config.integer("GATEWAY_WORKER_CONCURRENCY").pipe(
    Config.validate({ message: "GATEWAY_WORKER_CONCURRENCY must be >= 1", validation: (n) => n >= 1 }),
    Config.withDefault(64)
  ),
  corsOrigins: optional("GATEWAY_CORS_ORIGINS", (raw) => {
    const list = raw.split(",").map((s) => s.trim()).filter((s) => s.length > 0)
    const bad = list.find((o) => o !== "*" && !/^https?:\/\/[^/\s]+\/?$/i.test(o))
    return bad === undefined
      ? Either.right(list)
      : Either.left(`must be a comma-separated list of origins such as https://app.example.com (or *); got ${bad}`)
  }).pipe(Config.map(Option.getOrElse((): ReadonlyArray<string> => [])))
}).pipe(
  Config.map(({ publicUrl, ...rest }) => ({
    ...rest,
    publicUrl: Option.getOrElse(publicUrl, () => `http://${rest.host.includes(":") ? `[${rest.host}]` : rest.host}:${rest.port}`)
  }))
)


/** Settings from the environment. */
export const layer = Layer.effect(Settings, settings)

/** Settings for tests and embedding: defaults overridden by `patch`. */
export const layerWith = (patch: Partial<GatewaySettings>) =>
  Layer.effect(Settings, Effect.map(settings, (s) => ({ ...s, ...patch })))

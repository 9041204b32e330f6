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
import * as Heap from "./Heap.js"
import * as Sqlite from "./Sqlite.js"
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
  /** Time to receive a request's headers, and the whole request (http/Limits.ts). */
  readonly headersTimeoutMs?: number
  readonly requestTimeoutMs?: number
  /** Request-body bytes held at once by the process, and by one tenant (http/Limits.ts). */
  readonly bodyBytesInFlight?: number
  readonly tenantBodyBytesInFlight?: number
  /** Observability (DESIGN.md §11): `/metrics` bearer, log format and level, OTLP traces. */
  readonly metricsToken: Option.Option<Redacted.Redacted<string>>
  readonly logFormat: "text" | "json"
  readonly logLevel: Option.Option<string>
  readonly otlpEndpoint: Option.Option<string>
  readonly otlpProtocol: "http/protobuf" | "http/json"
  /** `GATEWAY_ADMIN_TOKEN`: enables the admin API (`/admin/…`); unset, those routes answer 404. */
  readonly adminToken: Option.Option<Redacted.Redacted<string>>
  /** `GATEWAY_REDIS_URL`: rate-limit counters shared by replicas; unset, counted in process. */
  readonly redisUrl: Option.Option<Redacted.Redacted<string>>
  /** Delays between webhook delivery attempts (DESIGN.md §8), milliseconds. */
  readonly webhookRetryMs: ReadonlyArray<number>
  /** Allow `http` webhook URLs, and loopback/private addresses (tests, private networks). */
  readonly webhookAllowInsecure: boolean
  readonly webhookAllowPrivate: boolean
  /** Origins allowed to call from a browser (`GATEWAY_CORS_ORIGINS`, `*` for any); empty: no CORS. */
  readonly corsOrigins?: ReadonlyArray<string>
  /** Where result media and spooled inputs live (DESIGN.md §12); unset: the data directory. */
  readonly mediaStore?: MediaStoreSettings
  /**
   * `GATEWAY_HEAP_GROWING_PERCENT`: how far `genway serve` lets V8's old generation grow past what
   * survived the last full collection before the next one (platform/Heap.ts); 0 leaves V8's own rule.
   */
  readonly heapGrowingPercent?: number
  /**
   * `GATEWAY_HEAP_ROOM_MB`: while full collections come less than 2 s apart, the size the old
   * generation may reach before that growth applies (platform/Heap.ts); 0 applies the percent alone.
   */
  readonly heapRoomMb?: number
  /**
   * `GATEWAY_SQLITE_COMMIT_GAP_MS`: the least time between two group commits of the embedded
   * SQLite database (platform/Sqlite.ts); 0 commits at the end of every event-loop turn.
   */
  readonly sqliteCommitGapMs?: number
  /**
   * `GATEWAY_MEDIA_INLINE_BYTES`: with the data directory and the embedded SQLite database, a
   * result held whole in memory and at most this long is kept in its database row rather than a
   * file (platform/MediaStore.ts); 0 writes every result to a file.
   */
  readonly mediaInlineBytes?: number
}

/** `GATEWAY_MEDIA_STORE` and the S3 variables that go with it. */
export type MediaStoreSettings =
  | { readonly _tag: "local" }
  | {
    readonly _tag: "s3"
    readonly bucket: string
    /** Object-key prefix without a trailing slash ("" for the bucket's root). */
    readonly prefix: string
    /** `GATEWAY_S3_ENDPOINT` (MinIO, R2, …); none: AWS. */
    readonly endpoint: Option.Option<string>
    /** `GATEWAY_S3_FORCE_PATH_STYLE=1`: `endpoint/bucket/key` instead of `bucket.endpoint/key`. */
    readonly forcePathStyle: boolean
    /** `AWS_REGION` (default us-east-1). */
    readonly region: string
    /** `AWS_ACCESS_KEY_ID` + `AWS_SECRET_ACCESS_KEY`; none: the SDK's default credential chain. */
    readonly credentials: Option.Option<{ readonly accessKeyId: string; readonly secretAccessKey: Redacted.Redacted<string> }>
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

/** `GATEWAY_MEDIA_INLINE_BYTES` when unset (platform/MediaStore.ts). */
export const defaultMediaInlineBytes = 64 * 1024

/** Digits only (no sign, exponent or unit), from 0 to `max`. */
const wholeNumberUpTo = (max: number, unit = "") => (raw: string): Either.Either<number, string> =>
  /^\d+$/.test(raw) && Number(raw) <= max ? Either.right(Number(raw)) : Either.left(`must be an integer from 0 to ${max}${unit}`)

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

const s3Url = (raw: string): Either.Either<{ bucket: string; prefix: string }, string> => {
  const m = /^s3:\/\/([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])(?:\/(.*))?$/.exec(raw)
  if (m === null) return Either.left("must be s3://<bucket>/<prefix> (a bucket name of 3-63 lowercase letters, digits, dots and dashes)")
  const prefix = (m[2] ?? "").replace(/^\/+|\/+$/g, "")
  return prefix.split("/").some((part) => part === "." || part === "..")
    ? Either.left("must not contain . or .. in its prefix")
    : Either.right({ bucket: m[1]!, prefix })
}

const mediaStore: Config.Config<MediaStoreSettings> = Config.all({
  url: optional("GATEWAY_MEDIA_STORE", s3Url),
  endpoint: optional("GATEWAY_S3_ENDPOINT", httpUrl),
  forcePathStyle: Config.boolean("GATEWAY_S3_FORCE_PATH_STYLE").pipe(Config.withDefault(false)),
  region: optional("AWS_REGION", Either.right).pipe(Config.map(Option.getOrElse(() => "us-east-1"))),
  accessKeyId: optional("AWS_ACCESS_KEY_ID", Either.right),
  secretAccessKey: optional("AWS_SECRET_ACCESS_KEY", (raw) => Either.right(Redacted.make(raw)))
}).pipe(
  Config.map(({ accessKeyId, secretAccessKey, url, ...s3 }): MediaStoreSettings =>
    Option.match(url, {
      onNone: () => ({ _tag: "local" }),
      onSome: ({ bucket, prefix }) => ({
        _tag: "s3",
        bucket,
        prefix,
        ...s3,
        credentials: Option.all({ accessKeyId, secretAccessKey })
      })
    })
  )
)

/** Reads the settings from the environment (or any ConfigProvider). */
/**
 * A relative path as the operator meant it: from the folder the command was started in. `pnpm start`
 * and `pnpm genway` run the gateway inside its package, and pnpm says where they were invoked
 * (`INIT_CWD`), so `./data` is the repository root's `data/` for the server and the CLI alike.
 */
const fromInvocation = (p: string) => path.resolve(process.env["INIT_CWD"] ?? process.cwd(), p)

export const settings: Config.Config<GatewaySettings> = Config.all({
  host: Config.string("HOST").pipe(Config.withDefault("127.0.0.1")),
  port: Config.port("PORT").pipe(Config.withDefault(8080)),
  apiKeys: optional("GATEWAY_API_KEYS", (raw) => Either.right(Redacted.make(raw))).pipe(
    Config.map(Option.match({ onNone: () => [], onSome: splitKeys }))
  ),
  dataDir: Config.string("GATEWAY_DATA_DIR").pipe(Config.withDefault("./data"), Config.map(fromInvocation)),
  databaseUrl: optional("GATEWAY_DATABASE_URL", (raw) =>
    /^postgres(ql)?:\/\//.test(raw) ? Either.right(Redacted.make(raw)) : Either.left("must be a postgres:// URL")),
  publicUrl: optional("GATEWAY_PUBLIC_URL", httpUrl),
  sandboxDelayMs: Config.integer("GATEWAY_SANDBOX_DELAY_MS").pipe(
    Config.validate({ message: "GATEWAY_SANDBOX_DELAY_MS must be >= 0", validation: (n) => n >= 0 }),
    Config.withDefault(4000)
  ),
  pollIntervalMs: optional("GATEWAY_POLL_INTERVAL_MS", (raw) =>
    /^\d+$/.test(raw) && Number(raw) >= 10 ? Either.right(Number(raw)) : Either.left("must be an integer number of milliseconds >= 10")),
  modelsFile: optional("GATEWAY_MODELS_FILE", (raw) => Either.right(fromInvocation(raw))),
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
  headersTimeoutMs: Config.integer("GATEWAY_HEADERS_TIMEOUT_MS").pipe(
    Config.validate({ message: "GATEWAY_HEADERS_TIMEOUT_MS must be >= 100", validation: (n) => n >= 100 }),
    Config.withDefault(10_000)
  ),
  requestTimeoutMs: Config.integer("GATEWAY_REQUEST_TIMEOUT_MS").pipe(
    Config.validate({ message: "GATEWAY_REQUEST_TIMEOUT_MS must be >= 100", validation: (n) => n >= 100 }),
    Config.withDefault(120_000)
  ),
  bodyBytesInFlight: Config.integer("GATEWAY_BODY_BYTES_IN_FLIGHT").pipe(
    Config.validate({ message: "GATEWAY_BODY_BYTES_IN_FLIGHT must be >= 1", validation: (n) => n >= 1 }),
    Config.withDefault(256 * 1024 * 1024)
  ),
  tenantBodyBytesInFlight: Config.integer("GATEWAY_TENANT_BODY_BYTES_IN_FLIGHT").pipe(
    Config.validate({ message: "GATEWAY_TENANT_BODY_BYTES_IN_FLIGHT must be >= 1", validation: (n) => n >= 1 }),
    Config.withDefault(64 * 1024 * 1024)
  ),
  metricsToken: optional("GATEWAY_METRICS_TOKEN", (raw) => Either.right(Redacted.make(raw))),
  logFormat: optional("LOG_FORMAT", (raw) =>
    raw === "json" || raw === "text" ? Either.right<"json" | "text">(raw) : Either.left("must be json or text")).pipe(
      Config.map(Option.getOrElse((): "json" | "text" => "text"))
    ),
  logLevel: optional("LOG_LEVEL", (raw) =>
    /^(all|trace|debug|info|warning|warn|error|fatal|none)$/i.test(raw)
      ? Either.right(raw.toLowerCase())
      : Either.left("must be one of trace, debug, info, warning, error, fatal, none")),
  otlpEndpoint: optional("OTEL_EXPORTER_OTLP_ENDPOINT", httpUrl),
  otlpProtocol: optional("OTEL_EXPORTER_OTLP_PROTOCOL", (raw) =>
    raw === "http/protobuf" || raw === "http/json" ? Either.right<"http/protobuf" | "http/json">(raw) : Either.left("must be http/protobuf or http/json")).pipe(
      Config.map(Option.getOrElse((): "http/protobuf" | "http/json" => "http/protobuf"))
    ),
  adminToken: optional("GATEWAY_ADMIN_TOKEN", (raw) =>
    raw.length >= 16 ? Either.right(Redacted.make(raw)) : Either.left("must be at least 16 characters")),
  redisUrl: optional("GATEWAY_REDIS_URL", (raw) =>
    /^rediss?:\/\//.test(raw) ? Either.right(Redacted.make(raw)) : Either.left("must be a redis:// or rediss:// URL")),
  webhookRetryMs: optional("GATEWAY_WEBHOOK_RETRY_MS", (raw) => {
    const parts = raw.split(",").map((p) => p.trim())
    return parts.every((p) => /^\d+$/.test(p))
      ? Either.right(parts.map(Number))
      : Either.left("must be comma-separated integer milliseconds")
  }).pipe(Config.map(Option.getOrElse(() => [5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000]))),
  webhookAllowInsecure: Config.boolean("GATEWAY_WEBHOOK_ALLOW_INSECURE").pipe(Config.withDefault(false)),
  webhookAllowPrivate: Config.boolean("GATEWAY_WEBHOOK_ALLOW_PRIVATE").pipe(Config.withDefault(false)),
  corsOrigins: optional("GATEWAY_CORS_ORIGINS", (raw) => {
    const list = raw.split(",").map((s) => s.trim()).filter((s) => s.length > 0)
    const bad = list.find((o) => o !== "*" && !/^https?:\/\/[^/\s]+\/?$/i.test(o))
    return bad === undefined
      ? Either.right(list)
      : Either.left(`must be a comma-separated list of origins such as https://app.example.com (or *); got ${bad}`)
  }).pipe(Config.map(Option.getOrElse((): ReadonlyArray<string> => []))),
  heapGrowingPercent: optional("GATEWAY_HEAP_GROWING_PERCENT", wholeNumberUpTo(1000)).pipe(
    Config.map(Option.getOrElse(() => Heap.defaultPercent))
  ),
  heapRoomMb: optional("GATEWAY_HEAP_ROOM_MB", wholeNumberUpTo(65536, " (megabytes)")).pipe(
    Config.map(Option.getOrElse(() => Heap.defaultRoomMb))
  ),
  sqliteCommitGapMs: optional("GATEWAY_SQLITE_COMMIT_GAP_MS", wholeNumberUpTo(1000, " (milliseconds)")).pipe(
    Config.map(Option.getOrElse(() => Sqlite.defaultCommitGapMs))
  ),
  mediaInlineBytes: optional("GATEWAY_MEDIA_INLINE_BYTES", wholeNumberUpTo(1024 * 1024, " (bytes)")).pipe(
    Config.map(Option.getOrElse(() => defaultMediaInlineBytes))
  ),
  mediaStore
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

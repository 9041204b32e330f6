/**
 * PostgreSQL for tests: `GATEWAY_TEST_DATABASE_URL` (set by .ci/run), a private schema per test
 * file so runs never see each other's tables, and a gateway "replica" on it. Without the variable
 * the suites using this are skipped, and say so.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { PgClient } from "@effect/sql-pg"
import { Registry } from "@genway/registry"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { randomBytes, randomUUID } from "node:crypto"
import * as Config from "../src/platform/Config.js"
import * as Gateway from "../src/Gateway.js"

/** The test database, if any. */
export const url = process.env.GATEWAY_TEST_DATABASE_URL

/** Whether PostgreSQL tests run; warns once per file when they do not. */
export const available = (file: string): boolean => {
  if (url === undefined || url === "") {
    console.warn(`${file}: GATEWAY_TEST_DATABASE_URL is not set; the PostgreSQL tests are SKIPPED`)
    return false
  }
  return true
}

/** A private schema: create it, drop it when the scope closes, and build replicas on it. */
export const privateSchema = Effect.gen(function*() {
  const schema = `genway_test_${randomBytes(4).toString("hex")}`
  const admin = (f: (sql: SqlClient.SqlClient) => Effect.Effect<unknown, unknown>) =>
    Effect.flatMap(SqlClient.SqlClient, f).pipe(Effect.provide(PgClient.layer({ url: Redacted.make(url ?? "") })), Effect.orDie)
  yield* admin((sql) => sql`CREATE SCHEMA IF NOT EXISTS ${sql(schema)}`)
  yield* Effect.addFinalizer(() => admin((sql) => sql`DROP SCHEMA IF EXISTS ${sql(schema)} CASCADE`))
  const scopedUrl = new URL(url!)
  scopedUrl.searchParams.set("options", `-c search_path=${schema}`)
  /** A gateway's services (no background fibers) on this schema, media under `dataDir`. */
  const replica = (dataDir: string, settings: Partial<Config.GatewaySettings> = {}) =>
    Gateway.services(Effect.succeed(new Map()), Registry.layer()).pipe(
      Layer.provideMerge(Config.layerWith({
        dataDir,
        databaseUrl: Option.some(Redacted.make(scopedUrl.toString())),
        apiKeys: [],
        sandboxDelayMs: 1000,
        pollIntervalMs: Option.none(),
        modelsFile: Option.none(),
        ...settings
      })),
      Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map())))
    )
  return { schema, replica }
})

/** A sandbox task of `entry` to insert straight into a store (prompt `p<i>`), for replica tests. */
export const sandboxTask = (
  entry: { readonly id: string; readonly vendor: string; readonly upstream: { readonly model: string } },
  i: number,
  hints: Readonly<Record<string, string>> = {}
) => ({
  id: randomUUID(),
  tenant: "t",
  entryId: entry.id,
  vendor: entry.vendor,
  mode: "sandbox" as const,
  request: JSON.stringify({ prompt: `p${i}` }),
  hints,
  idempotencyKey: null,
  requestHash: null,
  upstreamModel: entry.upstream.model,
  deadlineAt: 10_000_000,
  createdAt: 0
})

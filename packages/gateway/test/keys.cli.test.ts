/**
 * `genway keys create|update|rotate` with the flags of DESIGN.md §9, run in process against a
 * fresh data directory; `--tenant` refuses a tenant that does not exist.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import { assert, describe, it } from "@effect/vitest"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as path from "node:path"
import * as Cli from "../src/cli/Cli.js"
import * as ApiKeys from "../src/platform/ApiKeys.js"
import * as Config from "../src/platform/Config.js"
import * as Database from "../src/platform/Database.js"
import { tempDir } from "./harness.js"

/** Runs `genway …` with the data directory; returns what it printed, or its error. */
const genway = (dataDir: string, ...args: Array<string>) =>
  Effect.gen(function*() {
    const lines: Array<string> = []
    const base = yield* Effect.console
    const console = {
      ...base,
      log: (...xs: ReadonlyArray<unknown>) => Effect.sync(() => void lines.push(xs.join(" "))),
      unsafe: { ...base.unsafe, log: (...xs: ReadonlyArray<unknown>) => void lines.push(xs.join(" ")) }
    } as Console.Console
    const exit = yield* Cli.run(["node", "genway", ...args]).pipe(
      Effect.provide(NodeContext.layer),
      Effect.withConsole(console),
      Effect.withConfigProvider(ConfigProvider.fromMap(new Map([["GATEWAY_DATA_DIR", dataDir]]))),
      Effect.exit
    )
    return { exit, out: lines.join("\n") }
  })

const keysIn = (dataDir: string) =>
  Effect.flatMap(ApiKeys.ApiKeys, (k) => k.list).pipe(
    Effect.provide(ApiKeys.layer.pipe(
      Layer.provideMerge(Database.sqlite(path.join(dataDir, "genway.db"))),
      Layer.provideMerge(Config.layerWith({ dataDir, databaseUrl: Option.none(), apiKeys: [] }))
    ))
  )

describe("genway keys", () => {
  it.live("create with limits, update, rotate; --tenant must exist, --new-tenant makes one", () =>
    Effect.gen(function*() {
      const dataDir = tempDir()
      const created = yield* genway(
        dataDir,
        "keys", "create", "--name", "team-a", "--new-tenant", "team-a", "--models", "vendor-b/*,vendor-d/film-3.1-fast",
        "--rpm", "30", "--max-in-flight", "4", "--expires-at", "2099-01-01T00:00:00Z", "--budget-usd", "50", "--budget-period", "month"
      )
      assert.strictEqual(created.exit._tag, "Success", created.out)
      assert.match(created.out, /token: +gw_/)
      let [key] = yield* keysIn(dataDir)
      assert.strictEqual(key!.tenant, "team-a")
      assert.deepStrictEqual(key!.models, ["vendor-b/*", "vendor-d/film-3.1-fast"])
      assert.strictEqual(key!.rpm, 30)
      assert.strictEqual(key!.maxInFlight, 4)
      assert.strictEqual(key!.expiresAt, Date.parse("2099-01-01T00:00:00Z"))
      assert.strictEqual(key!.budgetUsd, 50)
      assert.strictEqual(key!.budgetPeriod, "month")

      // A typo in --tenant is refused instead of making a new tenant.
      const typo = yield* genway(dataDir, "keys", "create", "--tenant", "team-b")
      assert.strictEqual(typo.exit._tag, "Failure")
      assert.include(String(typo.exit._tag === "Failure" ? typo.exit.cause : ""), "--new-tenant")
      const second = yield* genway(dataDir, "keys", "create", "--tenant", "team-a")
      assert.strictEqual(second.exit._tag, "Success", second.out)
      assert.strictEqual((yield* keysIn(dataDir)).length, 2)

      const updated = yield* genway(dataDir, "keys", "update", key!.id, "--rpm", "none", "--max-in-flight", "9")
      assert.strictEqual(updated.exit._tag, "Success", updated.out)
      ;[key] = (yield* keysIn(dataDir)).filter((k) => k.id === key!.id)
      assert.strictEqual(key!.rpm, null)
      assert.strictEqual(key!.maxInFlight, 9)
      assert.strictEqual(key!.budgetUsd, 50)

      const bad = yield* genway(dataDir, "keys", "update", key!.id, "--expires-at", "2001-01-01T00:00:00Z")
      assert.strictEqual(bad.exit._tag, "Failure")
      assert.include(String(bad.exit._tag === "Failure" ? bad.exit.cause : ""), "--expires-at")

      const prefix = key!.prefix
      const rotated = yield* genway(dataDir, "keys", "rotate", key!.id, "--grace-seconds", "60")
      assert.strictEqual(rotated.exit._tag, "Success", rotated.out)
      assert.match(rotated.out, /the old token works until/)
      ;[key] = (yield* keysIn(dataDir)).filter((k) => k.id === key!.id)
      assert.notStrictEqual(key!.prefix, prefix)
      assert.isNotNull(key!.previousTokenExpiresAt)
    }), 60_000)
})

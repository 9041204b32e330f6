import { assert, describe, it } from "@effect/vitest"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Config from "../src/platform/Config.js"
import * as Gateway from "../src/Gateway.js"
import * as LiveAdapters from "../src/vendors/LiveAdapters.js"
import { tempDir } from "./harness.js"

const read = (env: Record<string, string>) =>
  Config.settings.pipe(Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env)))))

describe("settings", () => {
  it.effect("defaults serve a local trial; empty variables count as unset", () =>
    Effect.gen(function*() {
      const s = yield* read({ GATEWAY_DATABASE_URL: "", GATEWAY_API_KEYS: "" })
      assert.strictEqual(s.port, 8080)
      assert.strictEqual(s.host, "127.0.0.1")
      assert.strictEqual(s.publicUrl, "http://127.0.0.1:8080")
      assert.isTrue(Option.isNone(s.databaseUrl))
      assert.deepStrictEqual(s.apiKeys, [])
      assert.strictEqual(s.heapGrowingPercent, 50)
      assert.strictEqual((yield* read({ GATEWAY_HEAP_GROWING_PERCENT: "" })).heapGrowingPercent, 50)
      assert.strictEqual((yield* read({ GATEWAY_HEAP_GROWING_PERCENT: "0" })).heapGrowingPercent, 0)
      assert.strictEqual((yield* read({ GATEWAY_HEAP_GROWING_PERCENT: "1000" })).heapGrowingPercent, 1000)
      assert.strictEqual(s.heapRoomMb, 64)
      assert.strictEqual((yield* read({ GATEWAY_HEAP_ROOM_MB: "" })).heapRoomMb, 64)
      assert.strictEqual((yield* read({ GATEWAY_HEAP_ROOM_MB: "0" })).heapRoomMb, 0)
      assert.strictEqual((yield* read({ GATEWAY_HEAP_ROOM_MB: "512" })).heapRoomMb, 512)
      assert.strictEqual(s.sqliteCommitGapMs, 5)
      assert.strictEqual((yield* read({ GATEWAY_SQLITE_COMMIT_GAP_MS: "0" })).sqliteCommitGapMs, 0)
      assert.strictEqual((yield* read({ GATEWAY_SQLITE_COMMIT_GAP_MS: "1000" })).sqliteCommitGapMs, 1000)
      assert.strictEqual(s.mediaInlineBytes, 65536)
      assert.strictEqual((yield* read({ GATEWAY_MEDIA_INLINE_BYTES: "0" })).mediaInlineBytes, 0)
      assert.strictEqual((yield* read({ GATEWAY_MEDIA_INLINE_BYTES: "1048576" })).mediaInlineBytes, 1048576)
      const keys = yield* read({ GATEWAY_API_KEYS: "a, b ,,c", GATEWAY_PUBLIC_URL: "https://gw.example.com/" })
      assert.deepStrictEqual(keys.apiKeys.map(Redacted.value), ["a", "b", "c"])
      assert.strictEqual(keys.publicUrl, "https://gw.example.com")
    }))

  it.effect("a malformed variable fails with its name, and never echoes a secret", () =>
    Effect.gen(function*() {
      for (const [name, value] of [
        ["PORT", "eighty"],
        ["GATEWAY_PUBLIC_URL", "ftp://x"],
        ["GATEWAY_DATABASE_URL", "mysql://user:hunter2@db/x"],
        ["GATEWAY_POLL_INTERVAL_MS", "5"],
        ["GATEWAY_HEAP_GROWING_PERCENT", "-1"],
        ["GATEWAY_HEAP_GROWING_PERCENT", "half"],
        ["GATEWAY_HEAP_GROWING_PERCENT", "1001"],
        ["GATEWAY_HEAP_GROWING_PERCENT", "1e3"],
        ["GATEWAY_HEAP_ROOM_MB", "-1"],
        ["GATEWAY_HEAP_ROOM_MB", "90MB"],
        ["GATEWAY_HEAP_ROOM_MB", "65537"],
        ["GATEWAY_SQLITE_COMMIT_GAP_MS", "1001"],
        ["GATEWAY_SQLITE_COMMIT_GAP_MS", "5ms"],
        ["GATEWAY_MEDIA_INLINE_BYTES", "1048577"],
        ["GATEWAY_MEDIA_INLINE_BYTES", "64KB"]
      ] as const) {
        const error = yield* Effect.flip(read({ [name]: value }))
        assert.include(String(error), name)
        assert.notInclude(String(error), "hunter2")
      }
    }))

  it.effect("a vendor with only some of its variables stops startup naming the missing one", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(
        LiveAdapters.fromEnvironment.pipe(
          Effect.provide(Gateway.upstreamHttp),
          Effect.withConfigProvider(ConfigProvider.fromMap(new Map([["VENDOR_C_BASE_URL", "http://127.0.0.1:9"], ["VENDOR_C_ACCESS_KEY", "ak"]])))
        )
      )
      assert.include(String(error), "VENDOR_C_SECRET_KEY")
    }))

  it.scoped("GATEWAY_REQUIRE_LIVE=1 refuses to start while a vendor is sandboxed", () =>
    Effect.gen(function*() {
      const settings = Config.layerWith({
        dataDir: tempDir(),
        databaseUrl: Option.none(),
        requireLive: true,
        modelsFile: Option.none()
      })
      const error = yield* Effect.flip(Layer.build(Gateway.core(Effect.succeed(new Map())).pipe(Layer.provide(settings))))
      assert.include(String(error), "GATEWAY_REQUIRE_LIVE")
      assert.include(String(error), "vendor-b")
    }))
})

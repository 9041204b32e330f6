import { FetchHttpClient } from "@effect/platform"
import { assert, describe, it } from "@effect/vitest"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { Adapter, Config } from "../src/index.js"

const load = (env: Record<string, string>) =>
  Effect.withConfigProvider(Config.config, ConfigProvider.fromMap(new Map(Object.entries(env))))

describe("Config", () => {
  it.effect("is None when no variable is set (sandboxed)", () =>
    Effect.gen(function*() {
      assert.isTrue(Option.isNone(yield* load({})))
      assert.isTrue(Option.isNone(yield* load({ VENDOR_E_BASE_URL: " ", VENDOR_E_API_KEY: "" })))
    }))

  it.effect("reads a complete group; the key stays redacted", () =>
    Effect.gen(function*() {
      const config = Option.getOrThrow(
        yield* load({ VENDOR_E_BASE_URL: "https://vendor-e.example/api/v1/", VENDOR_E_API_KEY: "sk-secret" })
      )
      assert.strictEqual(config.baseUrl, "https://vendor-e.example/api/v1")
      assert.strictEqual(Redacted.value(config.apiKey), "sk-secret")
      assert.notInclude(String(config.apiKey), "sk-secret")
      assert.notInclude(JSON.stringify(config), "sk-secret")
    }))

  it.effect("names the missing variable when only some are set", () =>
    Effect.gen(function*() {
      const noKey = yield* Effect.flip(load({ VENDOR_E_BASE_URL: "https://vendor-e.example/api/v1" }))
      assert.include(String(noKey), "VENDOR_E_API_KEY")
      const noUrl = yield* Effect.flip(load({ VENDOR_E_API_KEY: "sk-secret" }))
      assert.include(String(noUrl), "VENDOR_E_BASE_URL")
      assert.notInclude(String(noUrl), "sk-secret")
    }))

  it.effect("names a malformed base URL", () =>
    Effect.gen(function*() {
      for (const url of ["not a url", "ftp://vendor-e.example", "https://vendor-e.example/api/v1?x=1"]) {
        const error = yield* Effect.flip(load({ VENDOR_E_BASE_URL: url, VENDOR_E_API_KEY: "sk-secret" }))
        assert.include(String(error), "VENDOR_E_BASE_URL")
      }
    }))

  it.effect("fromConfig builds the live adapter only when the variables are set", () =>
    Effect.gen(function*() {
      const fromEnv = (env: Record<string, string>) =>
        Adapter.fromConfig().pipe(
          Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env)))),
          Effect.provide(FetchHttpClient.layer)
        )
      assert.isTrue(Option.isNone(yield* fromEnv({})))
      const adapter = Option.getOrThrow(yield* fromEnv({ VENDOR_E_BASE_URL: "https://vendor-e.example", VENDOR_E_API_KEY: "k" }))
      assert.strictEqual(adapter.vendor, "vendor-e")
      assert.strictEqual(adapter.mode, "live")
    }))

  it.effect("refuses credentials inside the base URL", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(load({ ...{ VENDOR_E_BASE_URL: "https://vendor-e.example", VENDOR_E_API_KEY: "k" }, VENDOR_E_BASE_URL: "https://user:pw@vendor-e.example" }))
      assert.include(String(error), "VENDOR_E_BASE_URL")
      assert.notInclude(String(error), "pw")
    }))
})

import { FetchHttpClient } from "@effect/platform"
import { assert, describe, it } from "@effect/vitest"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { Adapter, Config } from "../src/index.js"

const load = (env: Record<string, string>) =>
  Effect.withConfigProvider(Config.config, ConfigProvider.fromMap(new Map(Object.entries(env))))

const full = {
  VENDOR_C_BASE_URL: "https://vendor-c.example/",
  VENDOR_C_ACCESS_KEY: "ak-visible-nowhere",
  VENDOR_C_SECRET_KEY: "sk-visible-nowhere"
}

describe("Config", () => {
  it.effect("is None when no variable is set (sandboxed)", () =>
    Effect.gen(function*() {
      assert.isTrue(Option.isNone(yield* load({})))
    }))

  it.effect("reads a complete group; both keys stay redacted", () =>
    Effect.gen(function*() {
      const config = Option.getOrThrow(yield* load(full))
      assert.strictEqual(config.baseUrl, "https://vendor-c.example")
      assert.strictEqual(Redacted.value(config.accessKey), "ak-visible-nowhere")
      assert.strictEqual(Redacted.value(config.secretKey), "sk-visible-nowhere")
      assert.notInclude(JSON.stringify(config), "visible-nowhere")
    }))

  it.effect("names each missing variable when only some are set", () =>
    Effect.gen(function*() {
      for (const missing of Object.keys(full)) {
        const env = Object.fromEntries(Object.entries(full).filter(([k]) => k !== missing))
        const error = yield* Effect.flip(load(env))
        assert.include(String(error), missing)
        assert.notInclude(String(error), "visible-nowhere")
      }
    }))

  it.effect("names a malformed base URL", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(load({ ...full, VENDOR_C_BASE_URL: "vendor-c.example" }))
      assert.include(String(error), "VENDOR_C_BASE_URL")
    }))

  it.effect("fromConfig builds the live adapter only when the variables are set", () =>
    Effect.gen(function*() {
      const fromEnv = (env: Record<string, string>) =>
        Adapter.fromConfig().pipe(
          Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env)))),
          Effect.provide(FetchHttpClient.layer)
        )
      assert.isTrue(Option.isNone(yield* fromEnv({})))
      const adapter = Option.getOrThrow(yield* fromEnv(full))
      assert.strictEqual(adapter.vendor, "vendor-c")
      assert.strictEqual(adapter.mode, "live")
    }))

  it.effect("refuses credentials inside the base URL", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(load({ ...full, VENDOR_C_BASE_URL: "https://user:pw@vendor-c.example" }))
      assert.include(String(error), "VENDOR_C_BASE_URL")
      assert.notInclude(String(error), "pw")
    }))
})

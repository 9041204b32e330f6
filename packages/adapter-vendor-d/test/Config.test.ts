import { assert, describe, it } from "@effect/vitest"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { Config } from "../src/index.js"

const read = (env: Record<string, string>) =>
  Config.config.pipe(Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env)))))

describe("Config", () => {
  it.effect("is None when neither variable is set (sandbox)", () =>
    Effect.gen(function*() {
      assert.isTrue(Option.isNone(yield* read({})))
      assert.isTrue(Option.isNone(yield* read({ VENDOR_D_BASE_URL: "", VENDOR_D_API_KEY: " " })))
    }))

  it.effect("reads both variables, keeps the key redacted and drops trailing slashes", () =>
    Effect.gen(function*() {
      const config = yield* read({ VENDOR_D_BASE_URL: "https://api.example.test/v1beta/", VENDOR_D_API_KEY: "sk-secret" })
      assert.isTrue(Option.isSome(config))
      const value = Option.getOrThrow(config)
      assert.strictEqual(value.baseUrl, "https://api.example.test/v1beta")
      assert.isTrue(Redacted.isRedacted(value.apiKey))
      assert.strictEqual(Redacted.value(value.apiKey), "sk-secret")
      assert.notInclude(String(value.apiKey), "sk-secret")
    }))

  it.effect("names the missing key when only the URL is set", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(read({ VENDOR_D_BASE_URL: "https://api.example.test/v1beta" }))
      assert.include(String(error), "VENDOR_D_API_KEY")
    }))

  it.effect("names the missing URL when only the key is set, without echoing the key", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(read({ VENDOR_D_API_KEY: "sk-secret" }))
      assert.include(String(error), "VENDOR_D_BASE_URL")
      assert.notInclude(String(error), "sk-secret")
    }))

  it.effect("names the URL variable when the URL is malformed", () =>
    Effect.gen(function*() {
      for (const url of ["not a url", "ftp://api.example.test", "https://user:pw@api.example.test", "https://x.test/v1?a=1"]) {
        const error = yield* Effect.flip(read({ VENDOR_D_BASE_URL: url, VENDOR_D_API_KEY: "sk-secret" }))
        assert.include(String(error), "VENDOR_D_BASE_URL")
        assert.notInclude(String(error), "sk-secret")
        assert.notInclude(String(error), "pw@")
      }
    }))
})

import { FetchHttpClient } from "@effect/platform"
import { assert, describe, it } from "@effect/vitest"
import { ConfigCases } from "@genway/adapter-kit/testing"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { Adapter, Config } from "../src/index.js"

describe("Config", () => {
  for (
    const c of ConfigCases.configCases({
      config: Config.config,
      baseUrl: "VENDOR_E_BASE_URL",
      complete: { VENDOR_E_BASE_URL: "https://vendor-e.example/api/v1/", VENDOR_E_API_KEY: "sk-secret" },
      expect: (config) => {
        assert.strictEqual(config.baseUrl, "https://vendor-e.example/api/v1")
        assert.strictEqual(Redacted.value(config.apiKey), "sk-secret")
      },
      malformed: ["ftp://vendor-e.example", "https://vendor-e.example/api/v1?x=1", "https://user:pw@vendor-e.example"]
    })
  ) it.effect(c.name, () => c.run)

  it.effect("fromConfig builds the live adapter only when the variables are set", () =>
    Effect.gen(function*() {
      const fromEnv = (env: Record<string, string>) =>
        ConfigCases.read(Adapter.fromConfig(), env).pipe(Effect.provide(FetchHttpClient.layer))
      assert.isTrue(Option.isNone(yield* fromEnv({})))
      const adapter = Option.getOrThrow(yield* fromEnv({ VENDOR_E_BASE_URL: "https://vendor-e.example", VENDOR_E_API_KEY: "k" }))
      assert.strictEqual(adapter.vendor, "vendor-e")
      assert.strictEqual(adapter.mode, "live")
    }))
})

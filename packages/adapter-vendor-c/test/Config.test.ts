import { FetchHttpClient } from "@effect/platform"
import { assert, describe, it } from "@effect/vitest"
import { ConfigCases } from "@genway/adapter-kit/testing"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { Adapter, Config } from "../src/index.js"

const full = {
  VENDOR_C_BASE_URL: "https://vendor-c.example/",
  VENDOR_C_ACCESS_KEY: "ak-visible-nowhere",
  VENDOR_C_SECRET_KEY: "sk-visible-nowhere"
}

describe("Config", () => {
  for (
    const c of ConfigCases.configCases({
      config: Config.config,
      baseUrl: "VENDOR_C_BASE_URL",
      complete: full,
      expect: (config) => {
        assert.strictEqual(config.baseUrl, "https://vendor-c.example")
        assert.strictEqual(Redacted.value(config.accessKey), "ak-visible-nowhere")
        assert.strictEqual(Redacted.value(config.secretKey), "sk-visible-nowhere")
        assert.notInclude(JSON.stringify(config), "visible-nowhere")
      },
      malformed: ["vendor-c.example", "https://user:pw@vendor-c.example"],
      hidden: ["visible-nowhere"]
    })
  ) it.effect(c.name, () => c.run)

  it.effect("fromConfig builds the live adapter only when the variables are set", () =>
    Effect.gen(function*() {
      const fromEnv = (env: Record<string, string>) =>
        ConfigCases.read(Adapter.fromConfig(), env).pipe(Effect.provide(FetchHttpClient.layer))
      assert.isTrue(Option.isNone(yield* fromEnv({})))
      const adapter = Option.getOrThrow(yield* fromEnv(full))
      assert.strictEqual(adapter.vendor, "vendor-c")
      assert.strictEqual(adapter.mode, "live")
    }))
})

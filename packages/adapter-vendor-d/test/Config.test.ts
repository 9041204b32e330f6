import { assert, describe, it } from "@effect/vitest"
import { ConfigCases } from "@genway/adapter-kit/testing"
import * as Redacted from "effect/Redacted"
import { Config } from "../src/index.js"

describe("Config", () => {
  for (
    const c of ConfigCases.configCases({
      config: Config.config,
      baseUrl: Config.BASE_URL,
      complete: { VENDOR_D_BASE_URL: "https://api.example.test/v1beta/", VENDOR_D_API_KEY: "sk-secret" },
      expect: (config) => {
        assert.strictEqual(config.baseUrl, "https://api.example.test/v1beta")
        assert.isTrue(Redacted.isRedacted(config.apiKey))
        assert.strictEqual(Redacted.value(config.apiKey), "sk-secret")
      },
      malformed: ["https://x.test/v1?a=1"]
    })
  ) it.effect(c.name, () => c.run)
})

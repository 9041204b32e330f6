import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { VendorConfig } from "../src/index.js"
import { ConfigCases } from "../src/testing/index.js"

const config = VendorConfig.allOrNone({
  baseUrl: "VENDOR_X_BASE_URL",
  secrets: { accessKey: "VENDOR_X_ACCESS_KEY", secretKey: "VENDOR_X_SECRET_KEY" }
})

const complete = {
  VENDOR_X_BASE_URL: "https://x.example/api/v1//",
  VENDOR_X_ACCESS_KEY: "ak-do-not-show",
  VENDOR_X_SECRET_KEY: "sk-do-not-show"
}

describe("VendorConfig.allOrNone", () => {
  for (
    const c of ConfigCases.configCases({
      config,
      baseUrl: "VENDOR_X_BASE_URL",
      complete,
      expect: (value) => {
        assert.strictEqual(value.baseUrl, "https://x.example/api/v1")
        assert.strictEqual(Redacted.value(value.accessKey), "ak-do-not-show")
        assert.strictEqual(Redacted.value(value.secretKey), "sk-do-not-show")
      },
      hidden: ["do-not-show"]
    })
  ) it.effect(c.name, () => c.run)

  it.effect("names the first missing variable, those given, and the whole group", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(ConfigCases.read(config, { VENDOR_X_SECRET_KEY: "sk" }))
      assert.strictEqual(error._op, "MissingData")
      if (error._op === "MissingData") {
        assert.deepStrictEqual(error.path, ["VENDOR_X_BASE_URL"])
        assert.strictEqual(
          error.message,
          "VENDOR_X_BASE_URL is not set although VENDOR_X_SECRET_KEY is: set all of VENDOR_X_BASE_URL, VENDOR_X_ACCESS_KEY, VENDOR_X_SECRET_KEY to call the vendor, or none to sandbox it"
        )
      }
    }))

  it.effect("a blank secret counts as missing", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(ConfigCases.read(config, { ...complete, VENDOR_X_ACCESS_KEY: "  " }))
      assert.include(String(error), "VENDOR_X_ACCESS_KEY is not set")
    }))

  it.effect("a malformed URL is invalid data at the URL variable", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(ConfigCases.read(config, { ...complete, VENDOR_X_BASE_URL: "ftp://x.example" }))
      assert.strictEqual(error._op, "InvalidData")
      if (error._op === "InvalidData") assert.deepStrictEqual(error.path, ["VENDOR_X_BASE_URL"])
    }))
})

describe("VendorConfig.checkBaseUrl", () => {
  it("keeps the path, drops trailing slashes and surrounding blanks", () => {
    assert.deepStrictEqual(VendorConfig.checkBaseUrl("V", " http://127.0.0.1:8080/v1beta/ "), Either.right("http://127.0.0.1:8080/v1beta"))
    assert.deepStrictEqual(VendorConfig.checkBaseUrl("V", "https://x.example"), Either.right("https://x.example"))
  })

  it("says what is wrong, naming the variable", () => {
    const why = (value: string) => {
      const result = VendorConfig.checkBaseUrl("VENDOR_X_BASE_URL", value)
      return Either.isLeft(result) ? String(result.left) : "accepted"
    }
    assert.include(why("x.example"), "VENDOR_X_BASE_URL must be an absolute http(s) URL")
    assert.include(why("ws://x.example"), "must be an http or https URL")
    assert.include(why("https://u:p@x.example"), "must not carry credentials")
    assert.include(why("https://x.example/?q=1"), "must not carry a query or fragment")
    assert.include(why("https://x.example/#f"), "must not carry a query or fragment")
  })
})

describe("VendorConfig.whenSet", () => {
  it.effect("builds only when the variables are set", () =>
    Effect.gen(function*() {
      const build = VendorConfig.whenSet(config, (value) => Effect.succeed(`live at ${value.baseUrl}`))
      assert.isTrue(Option.isNone(yield* ConfigCases.read(build, {})))
      assert.deepStrictEqual(yield* ConfigCases.read(build, complete), Option.some("live at https://x.example/api/v1"))
      const error = yield* Effect.flip(ConfigCases.read(build, { VENDOR_X_BASE_URL: "https://x.example" }))
      assert.include(String(error), "VENDOR_X_ACCESS_KEY")
    }))
})

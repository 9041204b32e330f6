import { Validation } from "@genway/core"
import { assert, describe, it } from "@effect/vitest"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import * as F from "../src/Fields.js"

const decode = (schema: Schema.Schema<any, any>, input: unknown) => {
  const result = Schema.decodeUnknownEither(schema, { errors: "all", onExcessProperty: "error" })(input)
  return Either.isLeft(result) ? Validation.parseIssues(result.left) : []
}

describe("Fields", () => {
  const body = Schema.Struct({ prompt: F.requiredText(10), refs: Schema.optional(F.arrayOf(F.url, 1, 2)), seed: Schema.optional(F.seed) })

  it("names the field and the bound", () => {
    assert.deepStrictEqual(decode(body, { prompt: "x".repeat(11) }), [
      { param: "prompt", message: "must be at most 10 characters" }
    ])
  })

  it("reports nested element errors with their index", () => {
    const issues = decode(body, { prompt: "a", refs: ["https://ok.example/a.png", "ftp://x"] })
    assert.deepStrictEqual(issues, [{ param: "refs[1]", message: "must be an absolute http(s) URL" }])
  })

  it("reports array bounds and excess properties", () => {
    assert.deepStrictEqual(decode(body, { prompt: "a", refs: [] }), [
      { param: "refs", message: "must have at least 1 element" }
    ])
    assert.strictEqual(decode(body, { prompt: "a", sed: 1 })[0]?.param, "sed")
  })

  it("checks integer ranges", () => {
    assert.deepStrictEqual(decode(body, { prompt: "a", seed: 2147483648 }), [
      { param: "seed", message: "must be between 0 and 2147483647" }
    ])
    assert.deepStrictEqual(decode(body, { prompt: "a", seed: 1.5 }), [{ param: "seed", message: "must be an integer" }])
  })
})

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

describe("Fields helpers", () => {
  it("tells clients to send enum values with the right JSON type", () => {
    const body = Schema.Struct({ seconds: F.oneOf("4", "8"), duration: F.intOneOf(5, 10) })
    assert.deepStrictEqual(decode(body, { seconds: 8, duration: "5" }), [
      { param: "seconds", message: `must be one of "4", "8", sent as a string` },
      { param: "duration", message: "must be one of 5, 10, sent as a number" }
    ])
    assert.deepStrictEqual(decode(body, { seconds: "16", duration: 7 }), [
      { param: "seconds", message: `must be one of "4", "8"` },
      { param: "duration", message: "must be one of 5, 10" }
    ])
  })

  it("bounds integers from below and arrays without an upper bound", () => {
    const body = Schema.Struct({ n: F.intAtLeast(1), list: F.arrayOf(F.string, 1) })
    assert.deepStrictEqual(decode(body, { n: 0, list: [] }), [
      { param: "n", message: "must be at least 1" },
      { param: "list", message: "must have at least 1 element" }
    ])
    assert.deepStrictEqual(decode(body, { n: 1, list: Array.from({ length: 100 }, () => "x") }), [])
  })

  it("reports string maps on the map, never naming a key", () => {
    const body = Schema.Struct({ m: F.stringMap(2, 3, 4) })
    assert.deepStrictEqual(decode(body, { m: { a: "1", b: "2", c: "3" } }), [{ param: "m", message: "must have at most 2 key-value pairs" }])
    assert.deepStrictEqual(decode(body, { m: { abcd: "1" } }), [{ param: "m", message: "keys must be at most 3 characters" }])
    assert.deepStrictEqual(decode(body, { m: { a: "12345" } }), [{ param: "m", message: "values must be strings of at most 4 characters" }])
    assert.deepStrictEqual(decode(body, { m: { a: "1234" } }), [])
  })

  it("gives unions one message, except for errors inside an array member", () => {
    const body = Schema.Struct({
      choice: F.eitherOf("must be a mode or an object", F.oneOf("auto"), F.openObject),
      content: F.stringOrArray("must be text or parts", F.arrayOf(Schema.Struct({ text: F.string }), 0))
    })
    assert.deepStrictEqual(decode(body, { choice: 1, content: 2 }), [
      { param: "choice", message: "must be a mode or an object" },
      { param: "content", message: "must be text or parts" }
    ])
    assert.deepStrictEqual(decode(body, { choice: {}, content: "x" }), [])
    const issues = decode(body, { choice: "auto", content: [{ text: 1 }] })
    assert.deepStrictEqual(issues.find((i) => i.param === "content[0].text"), { param: "content[0].text", message: "must be a string" })
  })
})

/**
 * Row column schemas (platform/Rows.ts): what SQLite and PostgreSQL drivers hand back for the
 * number and nullable text columns decodes, and anything else is refused (a broken database).
 */
import { assert, describe, it } from "@effect/vitest"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import * as Rows from "../src/platform/Rows.js"

const Row = Schema.Struct({ n: Rows.Num, m: Rows.NumOrNull, t: Rows.TextOrNull })
const decode = Schema.decodeUnknownEither(Row)

describe("row column schemas", () => {
  it("numbers come as numbers (SQLite) or decimal text (PostgreSQL BIGINT)", () => {
    assert.deepStrictEqual(decode({ n: 3, m: 1_700_000_000_000, t: "x" }), Either.right({ n: 3, m: 1_700_000_000_000, t: "x" }))
    assert.deepStrictEqual(decode({ n: "42", m: "-7", t: "" }), Either.right({ n: 42, m: -7, t: "" }))
  })

  it("NULL, or a column a driver leaves out, is null", () => {
    assert.deepStrictEqual(decode({ n: 0, m: null, t: null }), Either.right({ n: 0, m: null, t: null }))
    assert.deepStrictEqual(decode({ n: 0 }), Either.right({ n: 0, m: null, t: null }))
  })

  it("anything else is refused, naming the column", () => {
    const cases: ReadonlyArray<[string, Record<string, unknown>]> = [
      ["n", { n: null }],
      ["n", { n: "" }],
      ["n", { n: "4x" }],
      ["m", { n: 1, m: "soon" }],
      ["m", { n: 1, m: true }],
      ["t", { n: 1, t: 5 }],
      ["t", { n: 1, t: {} }]
    ]
    for (const [column, bad] of cases) {
      const result = decode(bad)
      assert.isTrue(Either.isLeft(result), JSON.stringify(bad))
      if (Either.isLeft(result)) assert.include(String(result.left), `["${column}"]`)
    }
  })
})

/**
 * Row column schemas (platform/Rows.ts): what SQLite and PostgreSQL drivers hand back for the
 * number and nullable text columns decodes, and anything else is refused (a broken database); the
 * row decoders built on them give what the schemas give.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
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

  it("JSON text columns: parsed and checked; NULL only where nullable; bad JSON or the wrong shape refused, naming the column", () => {
    const isStrings = (u: unknown): u is Record<string, string> =>
      u !== null && typeof u === "object" && !Array.isArray(u) && Object.values(u).every((v) => typeof v === "string")
    const J = Schema.Struct({
      h: Rows.JsonText("Strings", "JSON text of an object of strings", isStrings),
      r: Rows.JsonTextOrNull("Strings", "JSON text of an object of strings, or NULL", isStrings)
    })
    const decodeJ = Schema.decodeUnknownEither(J)
    assert.deepStrictEqual(decodeJ({ h: '{"a":"b"}', r: null }), Either.right({ h: { a: "b" }, r: null }))
    assert.deepStrictEqual(decodeJ({ h: "{}", r: '{"x":"y"}' }), Either.right({ h: {}, r: { x: "y" } }))
    assert.deepStrictEqual(decodeJ({ h: "{}" }), Either.right({ h: {}, r: null }))
    const refused: ReadonlyArray<[string, Record<string, unknown>]> = [
      ["h", { h: null, r: null }],
      ["h", { h: "{not json", r: null }],
      ["h", { h: '{"a":1}', r: null }],
      ["h", { h: "[]", r: null }],
      ["h", { h: { a: "b" }, r: null }],
      ["r", { h: "{}", r: '"text"' }]
    ]
    for (const [column, bad] of refused) {
      const result = decodeJ(bad)
      assert.isTrue(Either.isLeft(result), `${JSON.stringify(bad)} was accepted`)
      if (Either.isLeft(result)) assert.include(String(result.left), `["${column}"]`)
    }
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

describe("row decoders (Rows.decoder)", () => {
  const Task = Schema.Struct({
    id: Schema.String,
    mode: Schema.Literal("live", "sandbox"),
    status: Schema.Literal("pending"),
    hints: Schema.parseJson(Schema.Record({ key: Schema.String, value: Schema.String })),
    result: Schema.NullOr(Schema.parseJson(Schema.Array(Schema.Struct({ url: Schema.String })))),
    attempts: Rows.Num,
    lease_until: Rows.NumOrNull,
    note: Rows.TextOrNull
  })
  const rows: ReadonlyArray<Record<string, unknown>> = [
    { id: "a", mode: "live", status: "pending", hints: "{}", result: null, attempts: 0, lease_until: null, note: null },
    { id: "b", mode: "sandbox", status: "pending", hints: "{\"k\":\"v\"}", result: "[{\"url\":\"u\"}]", attempts: "3", lease_until: "17", note: "x", extra: 1 },
    { id: "c", mode: "live", status: "pending", hints: "{}", result: null, attempts: 1 }
  ]
  const { all, one } = Rows.decoder(Task, (row) => row)
  const run = <A>(effect: Effect.Effect<A>) => Effect.runSync(Effect.exit(effect))

  it("gives what the schema's own decoder gives: declared columns only, a column left out read as the schema reads it", () => {
    const expected = Effect.runSync(Schema.decodeUnknown(Schema.Array(Task))(rows))
    assert.deepStrictEqual(run(all(Effect.succeed(rows))), Exit.succeed(expected))
    assert.deepStrictEqual(expected[1], { id: "b", mode: "sandbox", status: "pending", hints: { k: "v" }, result: [{ url: "u" }], attempts: 3, lease_until: 17, note: "x" })
    assert.deepStrictEqual(expected[2]!.note, null)
    assert.deepStrictEqual(run(one(Effect.succeed(rows.slice(1)))), Exit.succeed(Option.some(expected[1]!)))
    assert.deepStrictEqual(run(one(Effect.succeed([]))), Exit.succeed(Option.none()))
  })

  it("a row that does not decode, among rows that do, is a defect with the schema's error naming the column", () => {
    const bad: ReadonlyArray<[string, Record<string, unknown>]> = [
      ["mode", { ...rows[0], mode: "other" }],
      ["status", { ...rows[0], status: "completed" }],
      ["id", { ...rows[0], id: 7 }],
      ["hints", { ...rows[0], hints: "{not json" }],
      ["result", { ...rows[0], result: "[{\"media\":1}]" }],
      ["attempts", { ...rows[0], attempts: "soon" }],
      ["note", { ...rows[0], note: 5 }]
    ]
    for (const [column, row] of bad) {
      const exits: ReadonlyArray<Exit.Exit<unknown>> = [run(all(Effect.succeed([rows[0], row, rows[1]]))), run(one(Effect.succeed([row])))]
      for (const exit of exits) {
        assert.isTrue(Exit.isFailure(exit), JSON.stringify(row))
        if (Exit.isFailure(exit)) {
          const defect = Cause.squash(exit.cause)
          assert.isTrue(Cause.isDie(exit.cause), JSON.stringify(row))
          assert.include(String(defect), `["${column}"]`, JSON.stringify(row))
        }
      }
    }
    assert.isTrue(Exit.isFailure(run(all(Effect.succeed([null])))))
  })

  it("a row schema of another shape (optional fields, parse options) is decoded by the schema itself", () => {
    const Other = Schema.Struct({ id: Schema.String, label: Schema.optionalWith(Schema.String, { default: () => "none" }) })
    const other = Rows.decoder(Other, (row) => row)
    assert.deepStrictEqual(run(other.all(Effect.succeed([{ id: "a" }, { id: "b", label: "x" }]))), Exit.succeed([{ id: "a", label: "none" }, { id: "b", label: "x" }]))
    assert.isTrue(Exit.isFailure(run(other.one(Effect.succeed([{ id: 1 }])))))
    // An optional field: a missing key stays missing, as the schema decodes it.
    const Optional = Schema.Struct({ id: Schema.String, label: Schema.optional(Schema.String) })
    const optional = Rows.decoder(Optional, (row) => row)
    assert.deepStrictEqual(run(optional.all(Effect.succeed([{ id: "a" }, { id: "b", label: "x" }]))), Exit.succeed([{ id: "a" }, { id: "b", label: "x" }]))
    // Parse options of the schema's own apply: an excess column refused.
    const Exact = Schema.Struct({ id: Schema.String }).annotations({ parseOptions: { onExcessProperty: "error" } })
    const exact = Rows.decoder(Exact, (row) => row)
    assert.isTrue(Exit.isFailure(run(exact.all(Effect.succeed([{ id: "a", extra: 1 }])))))
    assert.deepStrictEqual(run(exact.one(Effect.succeed([{ id: "a" }]))), Exit.succeed(Option.some({ id: "a" })))
  })
})

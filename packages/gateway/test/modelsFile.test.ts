/**
 * `GATEWAY_MODELS_FILE`: JSON or YAML; a file that does not fit is one line naming the entry, the
 * field and what is expected — never a schema dump.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { readOverrides } from "../src/platform/Models.js"
import { tempDir } from "./harness.js"

const write = (name: string, text: string) => {
  const file = path.join(tempDir(), name)
  fs.writeFileSync(file, text)
  return file
}

const failure = (file: string) => Effect.map(Effect.flip(readOverrides(file)), (e) => e.message)

const e4 = "vendor-b/vid2.5-t2v-preview"

describe("GATEWAY_MODELS_FILE", () => {
  it.effect("reads JSON and YAML alike", () =>
    Effect.gen(function*() {
      const json = yield* readOverrides(write("m.json", JSON.stringify({ [e4]: { poll: { every: ["1 second", "2 seconds"] }, mirror: false } })))
      const yaml = yield* readOverrides(write("m.yaml", `"${e4}":\n  poll:\n    every: ["1 second", "2 seconds"]\n  mirror: false\n`))
      assert.deepStrictEqual(yaml, json)
      assert.deepStrictEqual(json[e4]?.poll?.every, ["1 second", "2 seconds"])
    }))

  it.effect("a wrong field is one line naming the entry, the field, the expectation and the value", () =>
    Effect.gen(function*() {
      const every = yield* failure(write("m.json", JSON.stringify({ [e4]: { poll: { every: ["1 second"] } } })))
      assert.notInclude(every, "\n")
      assert.include(every, `entry "${e4}", field poll.every must be a list of two durations`)
      assert.include(every, `got ["1 second"]`)
      const duration = yield* failure(write("m.yml", `"${e4}":\n  retention: soon\n`))
      assert.include(duration, `entry "${e4}", field retention must be a duration`)
      const flag = yield* failure(write("m.json", JSON.stringify({ [e4]: { enabled: "yes" } })))
      assert.include(flag, `field enabled must be true or false; got "yes"`)
      const unknown = yield* failure(write("m.json", JSON.stringify({ [e4]: { pol: {} } })))
      assert.include(unknown, `field pol is not a known field`)
      const notObject = yield* failure(write("m.json", "[1]"))
      assert.include(notObject, "must be an object keyed by entry id")
      for (const m of [every, duration, flag, unknown, notObject]) assert.notInclude(m, "\n")
    }))

  it.effect("syntax errors say which format failed, in one line", () =>
    Effect.gen(function*() {
      const json = yield* failure(write("m.json", "{ nope"))
      assert.match(json, /is not valid JSON: /)
      const yaml = yield* failure(write("m.yaml", "a: [1, 2\nb: c: d"))
      assert.match(yaml, /is not valid YAML: /)
      assert.notInclude(yaml, "\n")
    }))
})

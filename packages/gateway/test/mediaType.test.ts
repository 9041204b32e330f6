/**
 * What counts as JSON (platform/MediaType.ts): request bodies (415 otherwise) and vendors' answers
 * (read whole by the upstream client) are judged by the same rule.
 */
import { assert, describe, it } from "@effect/vitest"
import * as MediaType from "../src/platform/MediaType.js"

describe("media types", () => {
  it("JSON: application/json and application/…+json, with parameters, any case, spaces around", () => {
    for (const t of ["application/json", "application/json; charset=utf-8", " Application/JSON ", "application/problem+json", "application/vnd.api+json;v=1"]) {
      assert.isTrue(MediaType.isJson(t), t)
    }
  })

  it("not JSON: other types, JSON-like streams, near spellings, none", () => {
    for (const t of [undefined, "", "text/json", "text/plain", "application/json-seq", "application/x-ndjson", "application/jsonx", "text/event-stream", "application/x-www-form-urlencoded"]) {
      assert.isFalse(MediaType.isJson(t), String(t))
    }
  })
})

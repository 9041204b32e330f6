import { describe, expect, it } from "vitest"
import * as Either from "effect/Either"
import * as Api from "../src/Api.js"
import * as Registry from "../src/Registry.js"
import * as Validate from "../src/Validate.js"

const doc = Api.openApiSpec(Registry.entries) as any

const requestSchemaOf = (path: string) => doc.paths[path].post.requestBody.content["application/json"].schema

/** Every property of an object schema, nested objects and array items included, with its path. */
const properties = (schema: any, prefix: string): Array<[string, any]> => {
  const out: Array<[string, any]> = []
  for (const [name, property] of Object.entries<any>(schema.properties ?? {})) {
    const path = prefix === "" ? name : `${prefix}.${name}`
    out.push([path, property])
    const visit = (s: any, p: string) => {
      if (s === undefined) return
      if (s.type === "object" && s.properties !== undefined) out.push(...properties(s, p))
      if (s.type === "array") visit(s.items, `${p}[]`)
      for (const member of s.anyOf ?? []) visit(member, p)
    }
    visit(property, path)
  }
  return out
}

describe("request schemas carry what each field means", () => {
  for (const entry of Registry.entries) {
    it(`${entry.id}: every field is described`, () => {
      const schema = requestSchemaOf(entry.path)
      const undescribed = properties(schema, "")
        .filter(([path, s]) => !path.endsWith(".type") && (typeof s.description !== "string" || s.description.length < 10 || s.description.startsWith("a string")))
        .map(([path]) => path)
      expect(undescribed).toEqual([])
    })

    it(`${entry.id}: the example body is valid`, () => {
      const schema = requestSchemaOf(entry.path)
      expect(schema.examples).toHaveLength(1)
      const result = Validate.validate(entry, schema.examples[0])
      expect(Either.isRight(result) ? [] : result.left).toEqual([])
    })
  }

  it("E4 explains prompt_extend and E8/G3 explain their own fields", () => {
    expect(requestSchemaOf("/vendors/vendor-b/v1/vid2.5-t2v-preview/generation").properties.prompt_extend.description).toMatch(/rewrite/)
    expect(requestSchemaOf("/vendors/vendor-e/v1/vid2.5-t2v-spark/generation").properties.shot_type.description).toMatch(/multi/)
    // Bounds are still in the document next to the meanings.
    expect(requestSchemaOf("/vendors/vendor-b/v1/vid2.5-t2v-preview/generation").properties.prompt.maxLength).toBe(2000)
  })
})

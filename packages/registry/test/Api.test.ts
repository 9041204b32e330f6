import * as HttpApiClient from "@effect/platform/HttpApiClient"
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientResponse from "@effect/platform/HttpClientResponse"
import { ModelEntry } from "@genway/core"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Api from "../src/Api.js"
import * as Registry from "../src/Registry.js"
import { entry } from "./fixtures.js"

type Json = Record<string, any>

const spec = Api.openApiSpec(Registry.entries) as unknown as Json

/** The request body schema of a create path, with `$ref`s left as they are. */
const requestSchema = (path: string): Json => spec.paths[path].post.requestBody.content["application/json"].schema

/** A property schema, looking through `anyOf` with null (optional nullable fields). */
const property = (schema: Json, name: string): Json => {
  const p = schema.properties[name]
  return p.anyOf !== undefined ? p.anyOf.find((s: Json) => s.type !== "null") : p
}

describe("OpenAPI document", () => {
  it("is OpenAPI 3.1 with bearer security", () => {
    assert.strictEqual(spec.openapi, "3.1.0")
    assert.deepStrictEqual(spec.components.securitySchemes, { bearer: { type: "http", scheme: "bearer" } })
    assert.strictEqual(spec.info.title, "Genway")
  })

  it("has a path for every entry, and a retrieval path for every task entry", () => {
    for (const e of Registry.entries) {
      assert.isDefined(spec.paths[e.path]?.post, e.id)
      assert.deepStrictEqual(spec.paths[e.path].post.security, [{ bearer: [] }], e.id)
      if (ModelEntry.isTaskEntry(e)) {
        const get = spec.paths[`${e.path}/{task_id}`]?.get
        assert.isDefined(get, e.id)
        assert.deepStrictEqual(get.parameters.map((p: Json) => [p.name, p.in, p.required]), [["task_id", "path", true]])
        assert.isDefined(spec.paths[e.path].post.responses["202"], e.id)
        const result = get.responses["200"].content["application/json"].schema.$ref
        assert.strictEqual(result, e.result === "videos" ? "#/components/schemas/VideoTaskResult" : "#/components/schemas/ImageTaskResult")
      } else {
        assert.isDefined(spec.paths[e.path].post.responses["200"], e.id)
      }
    }
  })

  it("declares the error envelopes by status", () => {
    const create = spec.paths[entry("E4").path].post.responses
    for (const status of ["400", "401", "404"]) assert.isDefined(create[status], status)
    assert.strictEqual(create["404"].content["application/json"].schema.$ref, "#/components/schemas/TaskNotFound")
    const taskNotFound = spec.components.schemas.TaskNotFound
    assert.deepStrictEqual(Object.keys(taskNotFound.properties), ["error"])
    const chat = spec.paths["/v1/chat/completions"].post.responses
    assert.strictEqual(chat["401"].content["application/json"].schema.$ref, "#/components/schemas/OpenAiUnauthorized")
    assert.isDefined(spec.components.schemas.OpenAiUnauthorized.properties.error.properties.type)
  })

  it("carries the bounds of the request schemas", () => {
    const e4 = requestSchema(entry("E4").path)
    assert.strictEqual(property(e4, "prompt").maxLength, 2000)
    assert.strictEqual(property(e4, "prompt").minLength, 1)
    assert.strictEqual(property(e4, "seed").maximum, 2147483647)
    assert.strictEqual(property(e4, "seed").minimum, 0)
    assert.strictEqual(property(e4, "seed").type, "integer")
    assert.deepStrictEqual(property(e4, "duration").enum, [5, 10])
    assert.strictEqual(property(e4, "audio_url").format, "uri")
    assert.deepStrictEqual(e4.required, ["prompt"])
    assert.strictEqual(e4.additionalProperties, false)

    assert.deepStrictEqual(property(requestSchema(entry("E7").path), "seconds").enum, ["4", "8", "12"])
    const e8 = requestSchema(entry("E8").path)
    assert.strictEqual(property(e8, "voice_list").maxItems, 2)
    assert.strictEqual(property(e8, "dynamic_masks").maxItems, 6)
    const e3 = requestSchema(entry("E3").path)
    assert.strictEqual(property(e3, "ref_images_url").minItems, 1)
    assert.strictEqual(property(e3, "strength").maximum, 1)
    assert.strictEqual(property(e3, "top_scale").minimum, 1)
    const e2 = requestSchema(entry("E2").path)
    assert.strictEqual(property(e2, "metadata").maxProperties, 16)
    assert.deepStrictEqual(property(e2, "metadata").propertyNames, { maxLength: 64 })
    assert.strictEqual(property(e2, "metadata").additionalProperties.maxLength, 512)
    assert.strictEqual(property(e2, "top_logprobs").maximum, 20)
    assert.strictEqual(property(e2, "max_output_tokens").minimum, 1)
  })

  it("documents an added entry without code changes", () => {
    const added: ModelEntry.ModelEntry = {
      ...entry("E4"),
      id: "vendor-b/vid9-t2v",
      model: "vid9-t2v",
      endpoints: [],
      path: "/vendors/vendor-b/v1/vid9-t2v/generation"
    }
    const doc = Api.openApiSpec([...Registry.entries, added]) as unknown as Json
    assert.isDefined(doc.paths["/vendors/vendor-b/v1/vid9-t2v/generation"].post)
    assert.isDefined(doc.paths["/vendors/vendor-b/v1/vid9-t2v/generation/{task_id}"].get)
  })

  it("routes a shared path once", () => {
    const second: ModelEntry.ModelEntry = { ...entry("E1"), id: "vendor-d/other-image-model", model: "other-image-model" }
    const api = Api.makeApi([...Registry.entries, second])
    // One group per entry, plus `tasks` (listing and webhooks).
    assert.strictEqual(Object.keys(api.groups).length, Registry.entries.length + 1)
  })
})

describe("derived client", () => {
  it.effect("creates and retrieves a task, decoding errors by status", () =>
    Effect.gen(function*() {
      const requests: Array<{ method: string; url: string; body: unknown }> = []
      const taskInfo = {
        id: "0b6f5a8e-6f0c-4a43-9a70-6c1d2f7a9e11",
        created_at: "2025-01-01T00:00:00Z",
        updated_at: "2025-01-01T00:00:00Z"
      }
      const http = HttpClient.make((request, url) => {
        const body = request.body._tag === "Uint8Array" ? JSON.parse(new TextDecoder().decode(request.body.body)) : undefined
        requests.push({ method: request.method, url: url.pathname, body })
        const json = (status: number, value: unknown) =>
          Effect.succeed(
            HttpClientResponse.fromWeb(
              request,
              new Response(JSON.stringify(value), { status, headers: { "content-type": "application/json" } })
            )
          )
        if (request.method === "POST") return json(202, { task_info: taskInfo })
        if (url.pathname.endsWith(taskInfo.id)) {
          return json(200, { task_info: { ...taskInfo, status: "completed" }, videos: ["https://media.example.com/v.mp4"] })
        }
        return json(404, { error: { code: 404, title: "Not Found", detail: "no such task" } })
      })
      const client = yield* HttpApiClient.make(Api.makeApi(Registry.entries), { baseUrl: "http://genway.test" }).pipe(
        Effect.provideService(HttpClient.HttpClient, http)
      )
      // Group names are entry ids (strings), so a group is the union of task and OpenAI-style
      // groups; a task group is picked by the path parameter of its `retrieve` endpoint.
      const group = client["vendor-b/vid2.5-t2v-preview"]
      const e4 = group as Extract<typeof group, { readonly retrieve: (request: { readonly path: { readonly task_id: string } }) => unknown }>

      const created = yield* e4.create({ payload: { prompt: "a cat", duration: 5 } })
      assert.deepStrictEqual(created, { task_info: taskInfo })
      assert.deepStrictEqual(requests[0], {
        method: "POST",
        url: "/vendors/vendor-b/v1/vid2.5-t2v-preview/generation",
        body: { prompt: "a cat", duration: 5 }
      })

      const done = yield* e4.retrieve({ path: { task_id: taskInfo.id } })
      assert.deepStrictEqual(done, { task_info: { ...taskInfo, status: "completed" }, videos: ["https://media.example.com/v.mp4"] })
      assert.strictEqual(requests[1]!.url, `/vendors/vendor-b/v1/vid2.5-t2v-preview/generation/${taskInfo.id}`)

      const missing = yield* Effect.flip(e4.retrieve({ path: { task_id: "5d0e2f1c-3b4a-4c5d-8e9f-0a1b2c3d4e5f" } }))
      assert.instanceOf(missing, Api.TaskNotFound)
      assert.strictEqual((missing as Api.TaskNotFound).error.detail, "no such task")
    }))
})

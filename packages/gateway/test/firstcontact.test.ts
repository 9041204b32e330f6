/**
 * What a new user meets first, over real HTTP and through the official `openai` client: model ids
 * as `/v1/models` lists them, `GET /v1/models/{id}`, OpenAI-shaped errors under the OpenAI surface,
 * `n`, 405 with `Allow`, CORS, and `Retry-After` on unfinished tasks.
 */
import { assert, describe, layer } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { SampleMedia } from "@genway/core"
import OpenAI from "openai"
import * as Chat from "./chatHarness.js"
import * as Harness from "./harness.js"

const listed = "vendor-d/image-model-2.5-flash-image-preview"
const e4 = "/vendors/vendor-b/v1/vid2.5-t2v-preview/generation"

const failure = <A>(call: () => Promise<A>) => Effect.flip(Effect.tryPromise({ try: call, catch: (e) => e })) as Effect.Effect<any>

const fetchRaw = (path: string, init: RequestInit = {}) =>
  Effect.flatMap(Chat.baseUrl, (url) =>
    Effect.promise(async () => {
      const response = await fetch(`${url}${path}`, init)
      const text = await response.text()
      return { status: response.status, headers: response.headers, json: text.startsWith("{") ? JSON.parse(text) : undefined }
    }))

const auth = { authorization: `Bearer ${Harness.tokenA}` }

describe("OpenAI compatibility", () => {
  layer(Chat.sandboxLayer())((it) => {
    it.effect("models: listed with a real `created`, retrievable by id (and bare name) with the client", () =>
      Effect.gen(function*() {
        const client = yield* Chat.openai()
        const page = yield* Effect.promise(() => client.models.list())
        assert.isTrue(page.data.length > 0)
        for (const m of page.data) assert.isAbove(m.created, 1_600_000_000)
        const one = yield* Effect.promise(() => client.models.retrieve(listed))
        assert.strictEqual(one.id, listed)
        assert.strictEqual(one.object, "model")
        const bare = yield* fetchRaw("/v1/models/image-model-2.5-flash-image-preview", { headers: auth })
        assert.strictEqual(bare.json.id, listed)
        const missing = yield* failure(() => client.models.retrieve("vendor-z/nothing"))
        assert.instanceOf(missing, OpenAI.NotFoundError)
        assert.match(missing.message, /vendor-z\/nothing/)
      }))

    it.effect("E1 takes the listed id as `model`, answers with system_fingerprint, refuses n > 1 naming `n`", () =>
      Effect.gen(function*() {
        const client = yield* Chat.openai()
        const done = yield* Effect.promise(() => client.chat.completions.create({ model: listed, messages: Chat.ask("a fox") }))
        assert.strictEqual(done.object, "chat.completion")
        assert.isString(done.system_fingerprint)
        assert.isNumber(done.created)
        const many = yield* failure(() => client.chat.completions.create({ model: listed, n: 2, messages: Chat.ask("a fox") }))
        assert.instanceOf(many, OpenAI.BadRequestError)
        assert.strictEqual(many.param, "n")
        const one = yield* Effect.promise(() => client.chat.completions.create({ model: listed, n: 1, messages: Chat.ask("a fox") }))
        assert.strictEqual(one.choices.length, 1)
      }))

    it.effect("unknown routes under the OpenAI surface answer in the OpenAI shape; elsewhere in the task shape", () =>
      Effect.gen(function*() {
        const openAi = yield* fetchRaw("/v1/chat/completions/abc/cancel", { headers: auth })
        assert.strictEqual(openAi.status, 404)
        assert.isString(openAi.json.error.message)
        assert.strictEqual(openAi.json.error.type, "not_found_error")
        const responses = yield* fetchRaw("/vendors/vendor-a/v1/responses/resp_1/nothing", { method: "POST", headers: auth })
        assert.strictEqual(responses.status, 404)
        assert.strictEqual(responses.json.error.type, "not_found_error")
        const task = yield* fetchRaw("/vendors/vendor-z/v1/nothing", { headers: auth })
        assert.strictEqual(task.status, 404)
        assert.strictEqual(task.json.error.code, 404)
      }))

    it.effect("a wrong method on a known path is a 405 with Allow", () =>
      Effect.gen(function*() {
        const r = yield* fetchRaw(e4, { method: "GET", headers: auth })
        assert.strictEqual(r.status, 405)
        assert.strictEqual(r.headers.get("allow"), "POST")
        assert.strictEqual(r.json.error.code, 405)
        const chat = yield* fetchRaw("/v1/chat/completions", { method: "GET", headers: auth })
        assert.strictEqual(chat.status, 405)
        assert.strictEqual(chat.headers.get("allow"), "POST")
        assert.strictEqual(chat.json.error.type, "invalid_request_error")
        const task = yield* fetchRaw(`${e4}/00000000-0000-4000-8000-000000000000`, { method: "DELETE", headers: auth })
        assert.strictEqual(task.status, 405)
        assert.strictEqual(task.headers.get("allow"), "GET")
      }))

    it.effect("no CORS headers unless GATEWAY_CORS_ORIGINS is set", () =>
      Effect.gen(function*() {
        const r = yield* fetchRaw("/healthz", { headers: { origin: "https://app.example.com" } })
        assert.isNull(r.headers.get("access-control-allow-origin"))
      }))

    it.effect("inline images as a data URL or raw Base64 everywhere; E3 no longer requires `model` in the body", () =>
      Effect.gen(function*() {
        const png = (w: number, h: number) => Buffer.from(SampleMedia.png(w, h, 3)).toString("base64")
        const e8 = "/vendors/vendor-c/v1/clip-v2.6/image-to-video/generation"
        for (const image of [png(400, 400), `data:image/png;base64,${png(400, 400)}`]) {
          const r = yield* Harness.send(Harness.post(e8, { image, prompt: "waves", duration: 5 }))
          assert.strictEqual(r.status, 202, JSON.stringify(r.json))
        }
        const e3 = "/vendors/vendor-b/v1/vid2.1-vace-plus/generation"
        const body = { function: "image_reference", prompt: "a dancer", ref_images_url: [png(400, 400)] }
        const r3 = yield* Harness.send(Harness.post(e3, body))
        assert.strictEqual(r3.status, 202, JSON.stringify(r3.json))
        const wrong = yield* Harness.send(Harness.post(e3, { ...body, model: "vid2.5-t2v-preview" }))
        assert.strictEqual(wrong.status, 400)
        assert.strictEqual(wrong.json.error.param, "model")
        const client = yield* Chat.openai()
        const raw = yield* Effect.promise(() =>
          client.chat.completions.create({
            model: listed,
            messages: [{ role: "user", content: [{ type: "text", text: "edit" }, { type: "image_url", image_url: { url: png(64, 64) } }] }]
          })
        )
        assert.strictEqual(raw.choices.length, 1)
      }))

    it.effect("a pending task's retrieve carries Retry-After from its cadence", () =>
      Effect.gen(function*() {
        const created = yield* Harness.send(Harness.post(e4, { prompt: "a cat" }))
        assert.strictEqual(created.status, 202)
        const id = created.json.task_info.id
        const r = yield* Harness.send(Harness.get(`${e4}/${id}`))
        assert.strictEqual(r.json.task_info.status, "pending")
        const seconds = Number(r.headers["retry-after"])
        assert.isTrue(Number.isInteger(seconds) && seconds >= 1 && seconds <= 15, `retry-after ${seconds}`)
      }))
  })
})

describe("CORS", () => {
  layer(Chat.sandboxLayer({ settings: { corsOrigins: ["https://app.example.com"] } }))((it) => {
    it.effect("preflights and answers carry the allowed origin; other origins get nothing", () =>
      Effect.gen(function*() {
        const pre = yield* fetchRaw("/v1/models", {
          method: "OPTIONS",
          headers: { origin: "https://app.example.com", "access-control-request-method": "GET", "access-control-request-headers": "authorization" }
        })
        assert.strictEqual(pre.status, 204)
        assert.strictEqual(pre.headers.get("access-control-allow-origin"), "https://app.example.com")
        assert.match(pre.headers.get("access-control-allow-headers") ?? "", /authorization/)
        const r = yield* fetchRaw("/v1/models", { headers: { ...auth, origin: "https://app.example.com" } })
        assert.strictEqual(r.status, 200)
        assert.strictEqual(r.headers.get("access-control-allow-origin"), "https://app.example.com")
        assert.match(r.headers.get("access-control-expose-headers") ?? "", /x-request-id/)
        const other = yield* fetchRaw("/v1/models", { headers: { ...auth, origin: "https://evil.example.com" } })
        assert.isNull(other.headers.get("access-control-allow-origin"))
      }))
  })
})

import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { Emulator } from "../src/testing/index.js"

const form = (fields: Record<string, string>) => {
  const data = new FormData()
  for (const [k, v] of Object.entries(fields)) data.append(k, v)
  return data
}

describe("vendor-a emulator", () => {
  it.scoped("insists on the key, multipart and the protocol's fields", () =>
    Effect.gen(function*() {
      const emulator = yield* Emulator.make()
      const client = yield* HttpClient.HttpClient
      const post = (auth: boolean, body: (r: HttpClientRequest.HttpClientRequest) => HttpClientRequest.HttpClientRequest) =>
        client.execute(
          HttpClientRequest.post(`${emulator.baseUrl}/videos`).pipe(
            auth ? HttpClientRequest.bearerToken(emulator.apiKey) : (r) => r,
            body
          )
        )
      assert.strictEqual((yield* post(false, HttpClientRequest.bodyFormData(form({ prompt: "p" })))).status, 401)
      assert.strictEqual((yield* post(true, HttpClientRequest.bodyUnsafeJson({ prompt: "p" }))).status, 400)
      const unknown = yield* post(true, HttpClientRequest.bodyFormData(form({ prompt: "p", duration: "8" })))
      assert.strictEqual(unknown.status, 400)
      assert.deepStrictEqual(((yield* unknown.json) as { error: { param: string } }).error.param, "duration")
      const badSeconds = yield* post(true, HttpClientRequest.bodyFormData(form({ prompt: "p", seconds: "5" })))
      assert.strictEqual(badSeconds.status, 400)
      const ok = yield* post(true, HttpClientRequest.bodyFormData(form({ prompt: "p", model: "m" })))
      assert.strictEqual(ok.status, 200)
      assert.strictEqual(((yield* ok.json) as { status: string }).status, "queued")
      assert.strictEqual(yield* emulator.acceptedSubmits, 1)
      assert.lengthOf(yield* emulator.requests, 5)
    }).pipe(Effect.provide(FetchHttpClient.layer)))

  it.scoped("applies a fault to exactly the next N requests of its kind", () =>
    Effect.gen(function*() {
      const emulator = yield* Emulator.make()
      const client = yield* HttpClient.HttpClient
      yield* emulator.inject("poll", { _tag: "Unavailable" }, 2)
      const poll = () =>
        client.execute(
          HttpClientRequest.get(`${emulator.baseUrl}/videos/video_missing`).pipe(HttpClientRequest.bearerToken(emulator.apiKey))
        ).pipe(Effect.map((r) => r.status))
      assert.deepStrictEqual([yield* poll(), yield* poll(), yield* poll()], [503, 503, 404])
    }).pipe(Effect.provide(FetchHttpClient.layer)))
})

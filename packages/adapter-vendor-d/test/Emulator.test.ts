import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { Emulator } from "../src/testing/index.js"

describe("vendor-d emulator", () => {
  it.scoped("insists on the key header and the protocol's body shape", () =>
    Effect.gen(function*() {
      const emulator = yield* Emulator.make()
      const client = yield* HttpClient.HttpClient
      const create = (key: string | undefined, body: unknown) =>
        client.execute(
          HttpClientRequest.post(`${emulator.baseUrl}/models/m:predictLongRunning`).pipe(
            key === undefined ? (r) => r : HttpClientRequest.setHeader("x-goog-api-key", key),
            HttpClientRequest.bodyUnsafeJson(body)
          )
        ).pipe(Effect.flatMap((r) => Effect.map(r.json, (json) => ({ status: r.status, json: json as any }))))
      const valid = { instances: [{ prompt: "p" }], parameters: { durationSeconds: 8, sampleCount: 1 } }

      assert.strictEqual((yield* create(undefined, valid)).status, 403)
      const wrong = yield* create("wrong", valid)
      assert.strictEqual(wrong.status, 400)
      assert.strictEqual(wrong.json.error.details[0].reason, "API_KEY_INVALID")
      const stringDuration = yield* create(emulator.apiKey, { ...valid, parameters: { durationSeconds: "8" } })
      assert.strictEqual(stringDuration.status, 400)
      assert.strictEqual(stringDuration.json.error.status, "INVALID_ARGUMENT")
      const unknown = yield* create(emulator.apiKey, { ...valid, parameters: { duration: 8 } })
      assert.include(unknown.json.error.message, "\"duration\"")
      const upperResolution = yield* create(emulator.apiKey, { ...valid, parameters: { resolution: "720P" } })
      assert.strictEqual(upperResolution.status, 400)
      const ok = yield* create(emulator.apiKey, valid)
      assert.strictEqual(ok.status, 200)
      assert.match(ok.json.name, /^models\/m\/operations\//)
      assert.strictEqual(yield* emulator.acceptedSubmits, 1)
    }).pipe(Effect.provide(FetchHttpClient.layer)))

  it.scoped("answers a video URI with a redirect to the storage host only with the key", () =>
    Effect.gen(function*() {
      const emulator = yield* Emulator.make({ completeOnPoll: 1 })
      const client = yield* HttpClient.HttpClient
      const keyed = HttpClientRequest.setHeader("x-goog-api-key", emulator.apiKey)
      const created = yield* client.execute(
        HttpClientRequest.post(`${emulator.baseUrl}/models/m:predictLongRunning`).pipe(
          keyed,
          HttpClientRequest.bodyUnsafeJson({ instances: [{ prompt: "p" }] })
        )
      ).pipe(Effect.flatMap((r) => r.json))
      const done = yield* client.execute(HttpClientRequest.get(`${emulator.baseUrl}/${(created as any).name}`).pipe(keyed)).pipe(
        Effect.flatMap((r) => r.json)
      )
      const uri: string = (done as any).response.generateVideoResponse.generatedSamples[0].video.uri
      const manual = (r: HttpClientRequest.HttpClientRequest) =>
        client.execute(r).pipe(Effect.provideService(FetchHttpClient.RequestInit, { redirect: "manual" }))
      assert.strictEqual((yield* manual(HttpClientRequest.get(uri))).status, 403)
      const redirect = yield* manual(HttpClientRequest.get(uri).pipe(keyed))
      assert.strictEqual(redirect.status, 302)
      assert.isTrue(redirect.headers["location"]!.startsWith(`${emulator.storageOrigin}/blobs/`))
      const blob = yield* client.get(redirect.headers["location"]!)
      assert.strictEqual(blob.status, 200)
      assert.strictEqual(blob.headers["content-type"], "video/mp4")
    }).pipe(Effect.provide(FetchHttpClient.layer)))
})

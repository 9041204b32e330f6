import { FetchHttpClient } from "@effect/platform"
import { assert, describe, it } from "@effect/vitest"
import { SampleMedia, type VendorAdapter } from "@genway/core"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Redacted from "effect/Redacted"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/TestClock"
import { Adapter } from "../src/index.js"
import { Emulator } from "../src/testing/index.js"
import { spark, sparkImage, task } from "./fixtures.js"

const setup = (options: Emulator.EmulatorOptions = {}, apiKey?: string) =>
  Effect.gen(function*() {
    const emulator = yield* Emulator.make(options)
    const adapter = yield* Adapter.make({ baseUrl: emulator.baseUrl, apiKey: Redacted.make(apiKey ?? emulator.apiKey) })
    return { emulator, adapter }
  })

const polled = (t: VendorAdapter.UpstreamTask, ref: string) => ({ ...t, upstreamRef: ref })

const live = <A, E>(effect: Effect.Effect<A, E, any>) => Effect.provide(effect, FetchHttpClient.layer) as Effect.Effect<A, E, never>

describe("upstreamPath", () => {
  it("keeps the entry's path, swapping the model segment for a configured upstream model", () => {
    assert.strictEqual(Adapter.upstreamPath(spark, "vid2.5-t2v-spark"), "/vendors/vendor-e/v1/vid2.5-t2v-spark/generation")
    assert.strictEqual(Adapter.upstreamPath(spark, "spark-pro"), "/vendors/vendor-e/v1/spark-pro/generation")
  })
})

describe("vendor-e adapter against the emulator", () => {
  it.scoped("posts the flat body to the entry's path with the bearer key and polls the task path", () =>
    live(Effect.gen(function*() {
      const { adapter, emulator } = yield* setup()
      const t = task(spark, { prompt: "a lake", duration: 5, size: "1920*1080", audio_url: null, shot_type: "multi" }, "vid2.6-t2v-spark")
      const submitted = yield* adapter.submit(t)
      assert.strictEqual(submitted.status, "pending")
      const id = (yield* emulator.tasks)[0]!.id
      assert.strictEqual(submitted.ref, `/vendors/vendor-e/v1/vid2.6-t2v-spark/generation/${id}`)
      yield* adapter.poll(polled(t, submitted.ref))
      const [create, query] = yield* emulator.requests
      assert.strictEqual(create!.method, "POST")
      assert.strictEqual(create!.path, "/vendors/vendor-e/v1/vid2.6-t2v-spark/generation")
      assert.strictEqual(create!.headers["authorization"], `Bearer ${emulator.apiKey}`)
      assert.deepStrictEqual(create!.body, { prompt: "a lake", duration: 5, size: "1920*1080", shot_type: "multi" })
      assert.strictEqual(query!.method, "GET")
      assert.strictEqual(query!.path, `/vendors/vendor-e/v1/vid2.6-t2v-spark/generation/${id}`)
      assert.strictEqual(query!.headers["authorization"], `Bearer ${emulator.apiKey}`)
      assert.isUndefined(adapter.reconcile)
    })))

  it.scoped("maps pending, processing and completed; downloads the MP4 through a redirect", () =>
    live(Effect.gen(function*() {
      const { adapter } = yield* setup({ completeAfterPolls: 3, redirectMedia: true })
      const t = task(spark, { prompt: "a lake" })
      const { ref } = yield* adapter.submit(t)
      assert.deepStrictEqual(yield* adapter.poll(polled(t, ref)), { _tag: "Running", status: "pending" })
      assert.deepStrictEqual(yield* adapter.poll(polled(t, ref)), { _tag: "Running", status: "processing" })
      const done = yield* adapter.poll(polled(t, ref))
      assert(done._tag === "Completed")
      const media = yield* adapter.download(done.media[0]!)
      assert.strictEqual(media.contentType, "video/mp4")
      const bytes = Buffer.concat(Chunk.toArray(yield* Stream.runCollect(media.body)))
      assert.deepStrictEqual(new Uint8Array(bytes), SampleMedia.mp4())
    })))

  it.scoped("reads images for image entries", () =>
    live(Effect.gen(function*() {
      const { adapter } = yield* setup({ completeAfterPolls: 1, models: { "img-spark": "images" } })
      const t = task(sparkImage, { prompt: "a fox" })
      const done = yield* adapter.poll(polled(t, (yield* adapter.submit(t)).ref))
      assert(done._tag === "Completed")
      const media = yield* adapter.download(done.media[0]!)
      assert.strictEqual(media.contentType, "image/png")
    })))

  it.scoped("passes task errors through: 400 and 3001 as the upstream wrote them", () =>
    live(Effect.gen(function*() {
      const { adapter, emulator } = yield* setup({ completeAfterPolls: 1 })
      yield* emulator.inject("submit", { _tag: "FailTask", code: 400, title: "Invalid request", detail: "Prohibited prompt content." })
      const a = task(spark, { prompt: "p" })
      assert.deepStrictEqual(yield* adapter.poll(polled(a, (yield* adapter.submit(a)).ref)), {
        _tag: "Failed",
        error: { code: 400, title: "Invalid request", detail: "Prohibited prompt content." }
      } as never)
      yield* emulator.inject("submit", { _tag: "FailTask" })
      const b = task(spark, { prompt: "p" })
      const failed = yield* adapter.poll(polled(b, (yield* adapter.submit(b)).ref))
      assert(failed._tag === "Failed")
      assert.strictEqual(failed.error.code, 3001)
      assert.strictEqual(failed.error.detail, "Generation failed.")
    })))

  it.scoped("a 400 on submit is Rejected 400 naming the field; 402 and unknown models are 3001", () =>
    live(Effect.gen(function*() {
      const { adapter, emulator } = yield* setup({ models: { "vid2.5-t2v-spark": "videos" } })
      const bad = yield* Effect.flip(adapter.submit(task(spark, { prompt: "p", duration: 7 })))
      assert(bad._tag === "Rejected")
      assert.deepStrictEqual(bad.error, { code: 400, title: "Invalid request", detail: "duration must be 5, 10 or 15." } as never)
      yield* emulator.inject("submit", { _tag: "HttpError", status: 402, detail: "Balance exhausted." })
      const broke = yield* Effect.flip(adapter.submit(task(spark, { prompt: "p" })))
      assert(broke._tag === "Rejected")
      assert.strictEqual(broke.error.code, 3001)
      const unknown = yield* Effect.flip(adapter.submit(task(spark, { prompt: "p" }, "no-such-model")))
      assert(unknown._tag === "Rejected")
      assert.strictEqual(unknown.error.code, 3001)
      assert.strictEqual(yield* emulator.acceptedSubmits, 0)
    })))

  // A 429 on submit, 503 and malformed answers on poll, unknown states and leaks: adapter-kit's ContractCases (Contract.test.ts).
  it.scoped("malformed JSON, dropped polls, slow polls and unknown states", () =>
    live(Effect.gen(function*() {
      const { adapter, emulator } = yield* setup()
      yield* emulator.inject("submit", { _tag: "MalformedJson" })
      assert.strictEqual((yield* Effect.flip(adapter.submit(task(spark, { prompt: "p" }))))._tag, "OutcomeUnknown")
      const t = task(spark, { prompt: "p" })
      const { ref } = yield* adapter.submit(t)
      yield* emulator.inject("poll", { _tag: "MalformedJson" })
      assert.strictEqual((yield* Effect.flip(adapter.poll(polled(t, ref))))._tag, "Retryable")
      yield* emulator.inject("poll", { _tag: "Drop" })
      assert.strictEqual((yield* Effect.flip(adapter.poll(polled(t, ref))))._tag, "Retryable")
      yield* emulator.inject("poll", { _tag: "ReportStatus", status: "queued" })
      assert.deepStrictEqual(yield* adapter.poll(polled(t, ref)), { _tag: "Running", status: "processing" })
      yield* emulator.inject("poll", { _tag: "Slow", delay: "1 minute" })
      const fiber = yield* Effect.fork(Effect.flip(adapter.poll(polled(t, ref))))
      yield* emulator.awaitRequests(6)
      yield* TestClock.adjust("31 seconds")
      assert.strictEqual((yield* Fiber.join(fiber))._tag, "Retryable")
    })))

  it.scoped("a refused key is Rejected 3001 without leaking the key or the upstream URL", () =>
    live(Effect.gen(function*() {
      const { adapter, emulator } = yield* setup({}, "sk-wrong-secret")
      const error = yield* Effect.flip(adapter.submit(task(spark, { prompt: "p" })))
      assert(error._tag === "Rejected")
      assert.strictEqual(error.error.code, 3001)
      for (const text of [JSON.stringify(error), String(error)]) {
        for (const secret of ["sk-wrong-secret", emulator.baseUrl, "127.0.0.1"]) assert.notInclude(text, secret)
      }
    })))
})

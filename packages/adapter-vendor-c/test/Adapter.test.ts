import { FetchHttpClient } from "@effect/platform"
import { assert, describe, it } from "@effect/vitest"
import { SampleMedia, type VendorAdapter } from "@genway/core"
import * as Chunk from "effect/Chunk"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Redacted from "effect/Redacted"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/TestClock"
import { Adapter } from "../src/index.js"
import { Emulator } from "../src/testing/index.js"
import { i2v, t2v, task } from "./fixtures.js"

const setup = (options: Emulator.EmulatorOptions = {}, secretKey?: string) =>
  Effect.gen(function*() {
    const emulator = yield* Emulator.make(options)
    const adapter = yield* Adapter.make({
      baseUrl: emulator.baseUrl,
      accessKey: Redacted.make(emulator.accessKey),
      secretKey: Redacted.make(secretKey ?? emulator.secretKey)
    })
    return { emulator, adapter }
  })

const polled = (t: VendorAdapter.UpstreamTask, ref: string) => ({ ...t, upstreamRef: ref })

const live = <A, E>(effect: Effect.Effect<A, E, any>) => Effect.provide(effect, FetchHttpClient.layer) as Effect.Effect<A, E, never>

const claims = (authorization: string | undefined) => {
  const [head, payload] = (authorization ?? "").replace(/^Bearer /, "").split(".")
  return {
    head: JSON.parse(Buffer.from(head!, "base64url").toString()),
    payload: JSON.parse(Buffer.from(payload!, "base64url").toString())
  }
}

const pngBase64 = Buffer.from(SampleMedia.png(320, 320)).toString("base64")

describe("toUpstreamBody", () => {
  it("sends model_name, a string duration, raw Base64 images and the gateway id as external_task_id", () => {
    const body = Adapter.toUpstreamBody(
      i2v,
      {
        image: `data:image/png;base64,${pngBase64}`,
        image_tail: null,
        prompt: "wave <<<voice_1>>>",
        voice_list: [{ voice_id: "v1" }],
        sound: "on",
        duration: 10,
        dynamic_masks: [{ mask: `data:image/png;base64,${pngBase64}`, trajectories: [{ x: 1, y: 2 }] }]
      },
      "real-model",
      "gateway-task-id"
    )
    assert.deepStrictEqual(body, {
      model_name: "real-model",
      image: pngBase64,
      prompt: "wave <<<voice_1>>>",
      voice_list: [{ voice_id: "v1" }],
      sound: "on",
      duration: "10",
      dynamic_masks: [{ mask: pngBase64, trajectories: [{ x: 1, y: 2 }] }],
      external_task_id: "gateway-task-id"
    })
  })
})

describe("vendor-c adapter against the emulator", () => {
  it.scoped("creates with a valid HS256 token, model_name, string duration and external_task_id", () =>
    live(Effect.gen(function*() {
      const { adapter, emulator } = yield* setup()
      const t = task(i2v, { image: pngBase64, prompt: "p", duration: 5, mode: "pro" })
      const submitted = yield* adapter.submit(t)
      assert.strictEqual(submitted.status, "pending")
      const [create] = yield* emulator.requests
      assert.strictEqual(create!.method, "POST")
      assert.strictEqual(create!.path, "/v1/videos/image2video")
      const { head, payload } = claims(create!.headers["authorization"])
      assert.deepStrictEqual(head, { alg: "HS256", typ: "JWT" })
      assert.strictEqual(payload.iss, emulator.accessKey)
      assert.strictEqual(payload.exp - payload.nbf, 1805)
      assert.deepStrictEqual(create!.body, {
        model_name: "upstream-clip-v2.6",
        image: pngBase64,
        prompt: "p",
        duration: "5",
        mode: "pro",
        external_task_id: t.taskId
      })
      assert.isTrue(submitted.ref.startsWith("image2video:"))
      assert.strictEqual(yield* emulator.acceptedSubmits, 1)
    })))

  it.scoped("maps submitted, processing and succeed, keeping the kind in the ref; downloads the MP4", () =>
    live(Effect.gen(function*() {
      const { adapter, emulator } = yield* setup({ completeAfterPolls: 3, redirectMedia: true })
      const t = task(t2v, { prompt: "a boat", duration: 5, aspect_ratio: "16:9" })
      const { ref } = yield* adapter.submit(t)
      assert.isTrue(ref.startsWith("text2video:"))
      assert.deepStrictEqual(yield* adapter.poll(polled(t, ref)), { _tag: "Running", status: "pending" })
      assert.deepStrictEqual(yield* adapter.poll(polled(t, ref)), { _tag: "Running", status: "processing" })
      const done = yield* adapter.poll(polled(t, ref))
      assert(done._tag === "Completed")
      assert.strictEqual(done.reportedSeconds, 5)
      const paths = (yield* emulator.requests).map((r) => `${r.method} ${r.path}`)
      assert.deepStrictEqual(paths.slice(1), Array(3).fill(`GET /v1/videos/text2video/${ref.slice("text2video:".length)}`))
      const media = yield* adapter.download(done.media[0]!)
      assert.strictEqual(media.contentType, "video/mp4")
      const bytes = Buffer.concat(Chunk.toArray(yield* Stream.runCollect(media.body)))
      assert.deepStrictEqual(new Uint8Array(bytes), SampleMedia.mp4())
    })))

  it.scoped("the duration the finished video reports is passed on, not the request's", () =>
    live(Effect.gen(function*() {
      const { adapter } = yield* setup({ completeAfterPolls: 1, reportedDuration: "5.1" })
      const t = task(t2v, { prompt: "a boat", duration: 5 })
      const { ref } = yield* adapter.submit(t)
      const done = yield* adapter.poll(polled(t, ref))
      assert(done._tag === "Completed")
      assert.strictEqual(done.reportedSeconds, 5.1)
    })))

  it.scoped("a failed task is 3001 with task_status_msg; an unknown state stays running", () =>
    live(Effect.gen(function*() {
      const { adapter, emulator } = yield* setup({ completeAfterPolls: 1 })
      yield* emulator.inject("submit", { _tag: "FailTask", message: "Failure to pass the risk control system" })
      const t = task(i2v, { image: pngBase64 })
      const failed = yield* adapter.poll(polled(t, (yield* adapter.submit(t)).ref))
      assert.deepStrictEqual(failed, {
        _tag: "Failed",
        error: { code: 3001, title: "Execution error", detail: "Failure to pass the risk control system" }
      } as never)
      const u = task(i2v, { image: pngBase64 })
      const { ref } = yield* adapter.submit(u)
      yield* emulator.inject("poll", { _tag: "ReportStatus", status: "queued_for_review" })
      assert.deepStrictEqual(yield* adapter.poll(polled(u, ref)), { _tag: "Running", status: "processing" })
    })))

  it.scoped("parameter and content-safety refusals are Rejected 400; an unknown model is 3001", () =>
    live(Effect.gen(function*() {
      const { adapter, emulator } = yield* setup({ models: ["upstream-clip-v2.6"] })
      yield* emulator.inject("submit", { _tag: "HttpError", status: 400, code: 1301, message: "prompt triggered content safety" })
      const unsafe = yield* Effect.flip(adapter.submit(task(i2v, { image: pngBase64 })))
      assert(unsafe._tag === "Rejected")
      assert.strictEqual(unsafe.error.code, 400)
      assert.include(unsafe.error.detail, "prompt triggered content safety")
      const badImage = yield* Effect.flip(adapter.submit(task(i2v, { prompt: "no image" })))
      assert(badImage._tag === "Rejected")
      assert.strictEqual(badImage.error.code, 400)
      const unknownModel = yield* Effect.flip(adapter.submit(task(i2v, { image: pngBase64 }, "no-such-model")))
      assert(unknownModel._tag === "Rejected")
      assert.strictEqual(unknownModel.error.code, 3001)
      assert.strictEqual(yield* emulator.acceptedSubmits, 0)
    })))

  it.scoped("rate and concurrency limits are Retryable with an exponential hint of at least 1 s, reset by success", () =>
    live(Effect.gen(function*() {
      const { adapter, emulator } = yield* setup()
      yield* emulator.inject("submit", { _tag: "RateLimited", code: 1302 })
      yield* emulator.inject("submit", { _tag: "RateLimited", code: 1303 })
      yield* emulator.inject("submit", { _tag: "RateLimited", code: 1302 })
      const hints: Array<number> = []
      for (let i = 0; i < 3; i++) {
        const error = yield* Effect.flip(adapter.submit(task(i2v, { image: pngBase64 })))
        assert(error._tag === "Retryable")
        hints.push(Duration.toMillis(error.retryAfter!))
      }
      assert.deepStrictEqual(hints, [1000, 2000, 4000])
      const t = task(i2v, { image: pngBase64 })
      const { ref } = yield* adapter.submit(t)
      yield* emulator.inject("poll", { _tag: "RateLimited", code: 1302, retryAfterSeconds: 9 })
      const again = yield* Effect.flip(adapter.poll(polled(t, ref)))
      assert(again._tag === "Retryable")
      assert.strictEqual(Duration.toMillis(again.retryAfter!), 9000)
      yield* emulator.inject("poll", { _tag: "Unavailable" })
      assert.strictEqual((yield* Effect.flip(adapter.poll(polled(t, ref))))._tag, "Retryable")
      assert.strictEqual(yield* emulator.acceptedSubmits, 1)
    })))

  it.scoped("a connection dropped after acceptance is OutcomeUnknown, and reconcile finds the task by external_task_id", () =>
    live(Effect.gen(function*() {
      const { adapter, emulator } = yield* setup({ completeAfterPolls: 1 })
      yield* emulator.inject("submit", { _tag: "Drop", afterAccept: true })
      const t = task(i2v, { image: pngBase64 })
      assert.strictEqual((yield* Effect.flip(adapter.submit(t)))._tag, "OutcomeUnknown")
      const found = yield* adapter.reconcile!(t)
      assert(found !== undefined)
      assert.strictEqual(found.ref, `image2video:${(yield* emulator.tasks)[0]!.taskId}`)
      const reconcile = (yield* emulator.requests)[1]!
      assert.strictEqual(reconcile.path, `/v1/videos/image2video/${t.taskId}`)
      assert.strictEqual((yield* adapter.poll(polled(t, found.ref)))._tag, "Completed")
      assert.strictEqual(yield* emulator.acceptedSubmits, 1)
    })))

  it.scoped("reconcile says undefined when the vendor never saw the task", () =>
    live(Effect.gen(function*() {
      const { adapter, emulator } = yield* setup()
      yield* emulator.inject("submit", { _tag: "Drop" })
      const t = task(i2v, { image: pngBase64 })
      assert.strictEqual((yield* Effect.flip(adapter.submit(t)))._tag, "OutcomeUnknown")
      assert.isUndefined(yield* adapter.reconcile!(t))
      assert.strictEqual(yield* emulator.acceptedSubmits, 0)
    })))

  it.scoped("an expired token (1004) is renewed once and the request resent", () =>
    live(Effect.gen(function*() {
      const { adapter, emulator } = yield* setup()
      yield* emulator.inject("submit", { _tag: "ExpiredToken" })
      const t = task(i2v, { image: pngBase64 })
      const { ref } = yield* adapter.submit(t)
      const requests = yield* emulator.requests
      assert.strictEqual(requests.length, 2)
      assert.strictEqual(yield* emulator.acceptedSubmits, 1)
      yield* emulator.inject("poll", { _tag: "ExpiredToken" }, 2)
      const stillExpired = yield* Effect.flip(adapter.poll(polled(t, ref)))
      assert(stillExpired._tag === "Retryable")
      assert.isTrue(Duration.toMillis(stillExpired.retryAfter!) >= 1000)
      assert.strictEqual((yield* emulator.requests).length, 4)
    })))

  it.scoped("the token is cached, then renewed before it expires", () =>
    live(Effect.gen(function*() {
      const { adapter, emulator } = yield* setup({ completeAfterPolls: 99 })
      const t = task(i2v, { image: pngBase64 })
      const { ref } = yield* adapter.submit(t)
      yield* TestClock.adjust("10 minutes")
      yield* adapter.poll(polled(t, ref))
      yield* TestClock.adjust("16 minutes")
      assert.strictEqual((yield* adapter.poll(polled(t, ref)))._tag, "Running")
      const [first, second, third] = (yield* emulator.requests).map((r) => r.headers["authorization"])
      assert.strictEqual(second, first)
      assert.notStrictEqual(third, first)
      assert.strictEqual(claims(third).payload.exp, 26 * 60 + 1800)
    })))

  it.scoped("a wrong secret is Rejected 3001 without leaking keys or URLs", () =>
    live(Effect.gen(function*() {
      const { adapter, emulator } = yield* setup({}, "sk-wrong-secret")
      const error = yield* Effect.flip(adapter.submit(task(i2v, { image: pngBase64 })))
      assert(error._tag === "Rejected")
      assert.strictEqual(error.error.code, 3001)
      for (const text of [JSON.stringify(error), String(error)]) {
        for (const secret of ["sk-wrong-secret", emulator.accessKey, emulator.baseUrl, "127.0.0.1"]) assert.notInclude(text, secret)
      }
    })))

  it.scoped("malformed JSON is OutcomeUnknown on submit and Retryable on poll; a slow poll times out as Retryable", () =>
    live(Effect.gen(function*() {
      const { adapter, emulator } = yield* setup()
      yield* emulator.inject("submit", { _tag: "MalformedJson" })
      const t = task(i2v, { image: pngBase64 })
      assert.strictEqual((yield* Effect.flip(adapter.submit(t)))._tag, "OutcomeUnknown")
      const found = yield* adapter.reconcile!(t)
      assert(found !== undefined)
      yield* emulator.inject("poll", { _tag: "MalformedJson" })
      assert.strictEqual((yield* Effect.flip(adapter.poll(polled(t, found.ref))))._tag, "Retryable")
      yield* emulator.inject("poll", { _tag: "Slow", delay: "1 minute" })
      const fiber = yield* Effect.fork(Effect.flip(adapter.poll(polled(t, found.ref))))
      yield* emulator.awaitRequests(4)
      yield* TestClock.adjust("31 seconds")
      assert.strictEqual((yield* Fiber.join(fiber))._tag, "Retryable")
    })))
})

import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import { ModelEntry } from "@genway/core"
import { Registry } from "@genway/registry"
import { assert, describe, it, layer } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as TestClock from "effect/TestClock"
import * as Harness from "./harness.js"
import { validBodies } from "./bodies.js"

/** A UUID of version 7 (time-ordered), as task ids are. */
const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

const taskEntries = Registry.entries.filter(ModelEntry.isTaskEntry)

/** Fetches a media URL (no bearer) and returns status, type and bytes. */
const fetchMedia = (url: string) =>
  Effect.gen(function*() {
    const client = yield* HttpClient.HttpClient
    const path = new URL(url).pathname + new URL(url).search
    const response = yield* client.execute(HttpClientRequest.get(path))
    const bytes = new Uint8Array(yield* response.arrayBuffer)
    return { status: response.status, type: response.headers["content-type"], bytes }
  }).pipe(Effect.scoped)

const isMp4 = (b: Uint8Array) => Buffer.from(b.subarray(4, 8)).toString("ascii") === "ftyp"

describe("task endpoints in sandbox", () => {
  it("covers every task endpoint of SPEC.md", () => {
    const ids = taskEntries.flatMap((e) => e.endpoints).sort()
    assert.deepStrictEqual(ids, ["E3", "E4", "E5", "E6", "E7", "E8", "G1", "G2", "G3", "G4", "G5", "G6", "G7", "G8"])
  })

  layer(Harness.layer())((it) => {
    for (const entry of taskEntries) {
      const id = entry.endpoints[0]!
      it.effect(`${id} ${entry.path}: 202, pending → processing → completed with ${entry.result}`, () =>
        Effect.gen(function*() {
          const created = yield* Harness.send(Harness.post(entry.path, validBodies[id]))
          assert.strictEqual(created.status, 202, created.text)
          assert.match(created.json.task_info.id, uuid)
          assert.strictEqual(created.headers["x-genway-sandbox"], "true")
          assert.strictEqual(created.json.task_info.status, entry.createIncludesStatus ? "pending" : undefined)
          assert.deepStrictEqual(Object.keys(created.json), ["task_info"])
          const url = `${entry.path}/${created.json.task_info.id}`

          const first = yield* Harness.send(Harness.get(url))
          assert.strictEqual(first.status, 200)
          assert.strictEqual(first.json.task_info.status, "pending")

          yield* Harness.work // submit
          yield* TestClock.adjust("200 millis")
          yield* Harness.work // poll: processing
          const running = yield* Harness.send(Harness.get(url))
          assert.strictEqual(running.json.task_info.status, "processing")
          assert.strictEqual(running.json[entry.result], undefined)

          yield* TestClock.adjust("1 second")
          yield* Harness.work // poll: completed
          const done = yield* Harness.send(Harness.get(url))
          assert.strictEqual(done.json.task_info.status, "completed", done.text)
          assert.isUndefined(done.json.task_info.error)
          const other = entry.result === "videos" ? "images" : "videos"
          assert.isUndefined(done.json[other])
          const urls: Array<string> = done.json[entry.result]
          assert.isAbove(urls.length, 0)
          for (const u of urls) {
            const media = yield* fetchMedia(u)
            assert.strictEqual(media.status, 200)
            if (entry.result === "videos") {
              assert.strictEqual(media.type, "video/mp4")
              assert.isTrue(isMp4(media.bytes))
            } else {
              assert.strictEqual(media.type, "image/png")
              assert.deepStrictEqual([...media.bytes.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])
            }
          }
        }))

      it.effect(`${id}: x-sandbox-outcome failed:3001 ends failed with an integer code and no result`, () =>
        Effect.gen(function*() {
          const created = yield* Harness.send(
            Harness.post(entry.path, validBodies[id], Harness.tokenA, { "x-sandbox-outcome": "failed:3001" })
          )
          assert.strictEqual(created.status, 202)
          const url = `${entry.path}/${created.json.task_info.id}`
          yield* Harness.work
          yield* TestClock.adjust("2 seconds")
          yield* Harness.work
          const done = yield* Harness.send(Harness.get(url))
          assert.strictEqual(done.json.task_info.status, "failed")
          assert.strictEqual(done.json.task_info.error.code, 3001)
          assert.isString(done.json.task_info.error.title)
          assert.isString(done.json.task_info.error.detail)
          assert.isUndefined(done.json[entry.result])
        }))
    }

    it.effect("G6 returns as many images as n asks for", () =>
      Effect.gen(function*() {
        const entry = taskEntries.find((e) => e.endpoints.includes("G6"))!
        const created = yield* Harness.send(Harness.post(entry.path, { prompt: "castles", n: 3 }))
        yield* Harness.work
        yield* TestClock.adjust("2 seconds")
        yield* Harness.work
        const done = yield* Harness.send(Harness.get(`${entry.path}/${created.json.task_info.id}`))
        assert.strictEqual(done.json.images.length, 3)
      }))

    it.effect("Idempotency-Key: a repeat returns the first task; another body is a 409", () =>
      Effect.gen(function*() {
        const path = "/vendors/vendor-b/v1/vid2.5-t2v-preview/generation"
        const headers = { "idempotency-key": "order-42" }
        const a = yield* Harness.send(Harness.post(path, { prompt: "one" }, Harness.tokenA, headers))
        const b = yield* Harness.send(Harness.post(path, { prompt: "one" }, Harness.tokenA, headers))
        assert.strictEqual(a.status, 202)
        assert.strictEqual(b.status, 202)
        assert.strictEqual(b.json.task_info.id, a.json.task_info.id)
        assert.strictEqual(b.headers["idempotent-replayed"], "true")
        const c = yield* Harness.send(Harness.post(path, { prompt: "two" }, Harness.tokenA, headers))
        assert.strictEqual(c.status, 409)
        assert.strictEqual(c.json.error.param, "Idempotency-Key")
        // Racing repeats of one key: one task, every answer names it.
        const racing = yield* Effect.forEach(
          Array.from({ length: 20 }, () => Harness.post(path, { prompt: "race" }, Harness.tokenA, { "idempotency-key": "race-1" })),
          Harness.send,
          { concurrency: 20 }
        )
        assert.isTrue(racing.every((r) => r.status === 202))
        assert.strictEqual(new Set(racing.map((r) => r.json.task_info.id)).size, 1)
        // The key is per tenant: another tenant gets its own task.
        const d = yield* Harness.send(Harness.post(path, { prompt: "one" }, Harness.tokenB, headers))
        assert.notStrictEqual(d.json.task_info.id, a.json.task_info.id)
      }))

    it.effect("200 concurrent creates all answer 202 with distinct ids", () =>
      Effect.gen(function*() {
        const path = "/vendors/vendor-b/v1/vid2.5-t2v-preview/generation"
        const results = yield* Effect.forEach(
          Array.from({ length: 200 }, (_, i) => i),
          (i) => Harness.send(Harness.post(path, { prompt: `prompt ${i}` })),
          { concurrency: 200 }
        )
        assert.isTrue(results.every((r) => r.status === 202))
        assert.strictEqual(new Set(results.map((r) => r.json.task_info.id)).size, 200)
      }), 60_000)

    it.effect("task ids are time-ordered: each create's id sorts after the one before", () =>
      Effect.gen(function*() {
        const path = "/vendors/vendor-b/v1/vid2.5-t2v-preview/generation"
        const ids: Array<string> = []
        for (let i = 0; i < 20; i++) {
          const created = yield* Harness.send(Harness.post(path, { prompt: `prompt ${i}` }))
          assert.strictEqual(created.status, 202, created.text)
          ids.push(created.json.task_info.id)
        }
        for (const id of ids) assert.match(id, uuid)
        assert.deepStrictEqual([...ids].sort(), ids)
        assert.strictEqual(new Set(ids).size, ids.length)
      }))
  })
})

/**
 * The task routes of DESIGN.md §8 over real HTTP: the event stream (with Last-Event-ID), cancel
 * (409 on a finished task, and a poll in flight that must not complete it), and the listing.
 */
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import type { VendorAdapter } from "@genway/core"
import { Registry } from "@genway/registry"
import { assert, describe, it } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as SqlClient from "@effect/sql/SqlClient"
import * as TestClock from "effect/TestClock"
import * as Sandbox from "../src/tasks/Sandbox.js"
import * as Harness from "./harness.js"

const e4 = Registry.entries.find((e) => e.endpoints.includes("E4"))!

const create = (token = Harness.tokenA, headers: Record<string, string> = {}) =>
  Effect.map(Harness.send(Harness.post(e4.path, { prompt: "a lighthouse" }, token, headers)), (r) => {
    assert.strictEqual(r.status, 202, r.text)
    return r.json.task_info.id as string
  })

/** Reads an SSE stream to its end and parses its frames. */
const readStream = (path: string, headers: Record<string, string> = {}) =>
  Effect.gen(function*() {
    const client = yield* HttpClient.HttpClient
    const response = yield* client.execute(
      HttpClientRequest.get(path).pipe(HttpClientRequest.setHeaders({ authorization: `Bearer ${Harness.tokenA}`, ...headers }))
    )
    const text = yield* response.text
    const frames = text.split("\n\n").filter((f) => f.trim() !== "" && !f.startsWith(":")).map((f) => {
      const fields = Object.fromEntries(f.split("\n").map((l) => [l.slice(0, l.indexOf(":")), l.slice(l.indexOf(":") + 1).trim()]))
      return { id: fields.id!, event: fields.event!, data: JSON.parse(fields.data!) }
    })
    return { status: response.status, type: response.headers["content-type"], frames }
  }).pipe(Effect.scoped)

describe("task events, cancel and listing", () => {
  it.scoped("the event stream: current state first, a frame per change, ends after the terminal one; Last-Event-ID resumes", () =>
    Effect.gen(function*() {
      const id = yield* create()
      const path = `${e4.path}/${id}/events`
      const reader = yield* Effect.fork(readStream(path))
      yield* Harness.work
      yield* TestClock.adjust("300 millis")
      yield* Harness.work
      yield* TestClock.adjust("1 second")
      yield* Harness.work
      // The stream polls every 250 ms of its clock.
      for (let i = 0; i < 8; i++) yield* TestClock.adjust("250 millis")
      const stream = yield* Fiber.join(reader)
      assert.strictEqual(stream.status, 200)
      assert.match(stream.type ?? "", /text\/event-stream/)
      assert.deepStrictEqual(stream.frames.map((f) => f.event), ["task.pending", "task.processing", "task.completed"])
      const done = stream.frames[2]!.data
      assert.strictEqual(done.task_info.status, "completed")
      assert.strictEqual(done.model, e4.id)
      assert.isString(done.videos[0])
      assert.isTrue(Number(stream.frames[1]!.id) > Number(stream.frames[0]!.id))

      // Resume after the processing frame: only the terminal one follows.
      const resumed = yield* readStream(path, { "last-event-id": stream.frames[1]!.id })
      assert.deepStrictEqual(resumed.frames.map((f) => f.event), ["task.completed"])
      // After the terminal one: nothing.
      const after = yield* readStream(path, { "last-event-id": stream.frames[2]!.id })
      assert.deepStrictEqual(after.frames, [])
      // A finished task without Last-Event-ID: its state, then the end.
      const now = yield* readStream(path)
      assert.deepStrictEqual(now.frames.map((f) => f.event), ["task.completed"])
      // Another tenant: 404.
      const other = yield* Harness.send(Harness.get(path, Harness.tokenB))
      assert.strictEqual(other.status, 404)
    }).pipe(Effect.provide(Harness.layer())))

  it.scoped("cancel: 200 failed 499 Canceled; 409 when finished; 404 for another tenant", () =>
    Effect.gen(function*() {
      const id = yield* create()
      const other = yield* Harness.send(Harness.post(`${e4.path}/${id}/cancel`, {}, Harness.tokenB))
      assert.strictEqual(other.status, 404)
      yield* Harness.work
      const canceled = yield* Harness.send(Harness.post(`${e4.path}/${id}/cancel`, {}))
      assert.strictEqual(canceled.status, 200, canceled.text)
      assert.strictEqual(canceled.json.task_info.status, "failed")
      assert.strictEqual(canceled.json.task_info.error.code, 499)
      assert.strictEqual(canceled.json.task_info.error.title, "Canceled")
      assert.match(canceled.json.task_info.error.detail, /vendor's job was canceled/)
      const again = yield* Harness.send(Harness.post(`${e4.path}/${id}/cancel`, {}))
      assert.strictEqual(again.status, 409)
      // Nothing more happens to it.
      yield* TestClock.adjust("5 seconds")
      yield* Harness.work
      const read = yield* Harness.send(Harness.get(`${e4.path}/${id}`))
      assert.strictEqual(read.json.task_info.status, "failed")
      assert.strictEqual(read.json.task_info.error.code, 499)
    }).pipe(Effect.provide(Harness.layer())))

  it.scoped("a poll in flight when the cancel lands never completes the task, and nothing is mirrored", () =>
    Effect.gen(function*() {
      const polling = yield* Deferred.make<void>()
      const answer = yield* Deferred.make<void>()
      const base = Sandbox.make(e4.vendor, 0)
      const { cancel: _, ...withoutCancel } = base
      const live: VendorAdapter.VendorAdapter = {
        ...withoutCancel,
        mode: "live",
        poll: () =>
          Effect.zipRight(
            Effect.zipRight(Deferred.succeed(polling, undefined), Deferred.await(answer)),
            Effect.succeed<VendorAdapter.PollOutcome>({
              _tag: "Completed",
              media: [{ _tag: "Bytes", contentType: "video/mp4", bytes: new Uint8Array([0, 0, 0, 24]) }]
            })
          )
      }
      return yield* Effect.gen(function*() {
        const id = yield* create()
        yield* Harness.work // submit
        yield* TestClock.adjust("10 seconds")
        const worker = yield* Effect.fork(Harness.work)
        yield* Deferred.await(polling)
        const canceled = yield* Harness.send(Harness.post(`${e4.path}/${id}/cancel`, {}))
        assert.strictEqual(canceled.status, 200, canceled.text)
        assert.match(canceled.json.task_info.error.detail, /may still finish and bill/)
        yield* Deferred.succeed(answer, undefined)
        yield* Fiber.join(worker)
        const read = yield* Harness.send(Harness.get(`${e4.path}/${id}`))
        assert.strictEqual(read.json.task_info.status, "failed")
        assert.strictEqual(read.json.task_info.error.code, 499)
        const sql = yield* SqlClient.SqlClient
        const media = yield* sql`SELECT key FROM media WHERE task_id = ${id}`
        assert.strictEqual(media.length, 0)
      }).pipe(Effect.provide(Harness.layer({ live: Effect.succeed(new Map([[e4.vendor, live]])) })))
    }))

  it.scoped("progress: the vendor's own figure while running, absent once finished", () =>
    Effect.gen(function*() {
      const id = yield* create()
      yield* Harness.work
      yield* TestClock.adjust("300 millis")
      yield* Harness.work
      const running = yield* Harness.send(Harness.get("/v1/tasks"))
      assert.strictEqual(running.json.data[0].task_info.id, id)
      assert.strictEqual(running.json.data[0].task_info.status, "processing")
      assert.deepStrictEqual(running.json.data[0].progress, { percent: 30, source: "vendor" })
      assert.isUndefined(running.json.data[0].task_info.progress)
      yield* TestClock.adjust("1 second")
      yield* Harness.work
      const done = yield* Harness.send(Harness.get("/v1/tasks"))
      assert.strictEqual(done.json.data[0].task_info.status, "completed")
      assert.isUndefined(done.json.data[0].progress)
    }).pipe(Effect.provide(Harness.layer())))

  it.scoped("listing: tenant's tasks newest first, filters, cursor, 400 naming the parameter", () =>
    Effect.gen(function*() {
      const ids: Array<string> = []
      for (let i = 0; i < 5; i++) {
        ids.push(yield* create())
        yield* TestClock.adjust("1 millis")
      }
      yield* create(Harness.tokenB)
      const first = yield* Harness.send(Harness.get("/v1/tasks?limit=2"))
      assert.strictEqual(first.status, 200, first.text)
      assert.deepStrictEqual(first.json.data.map((t: any) => t.task_info.id), [ids[4], ids[3]])
      assert.strictEqual(first.json.data[0].model, e4.id)
      assert.isTrue(first.json.data[0].url.endsWith(`${e4.path}/${ids[4]}`))
      const second = yield* Harness.send(Harness.get(`/v1/tasks?limit=2&after=${first.json.next}`))
      assert.deepStrictEqual(second.json.data.map((t: any) => t.task_info.id), [ids[2], ids[1]])
      const third = yield* Harness.send(Harness.get(`/v1/tasks?limit=2&after=${second.json.next}`))
      assert.deepStrictEqual(third.json.data.map((t: any) => t.task_info.id), [ids[0]])
      assert.isNull(third.json.next)

      yield* Harness.send(Harness.post(`${e4.path}/${ids[0]}/cancel`, {}))
      const failed = yield* Harness.send(Harness.get(`/v1/tasks?status=failed&model=${encodeURIComponent(e4.id)}`))
      assert.deepStrictEqual(failed.json.data.map((t: any) => t.task_info.id), [ids[0]])
      const other = yield* Harness.send(Harness.get("/v1/tasks", Harness.tokenB))
      assert.strictEqual(other.json.data.length, 1)

      for (
        const [query, param] of [["limit=0", "limit"], ["limit=101", "limit"], ["limit=x", "limit"], ["status=done", "status"], [
          "model=vendor-z/nope",
          "model"
        ], ["after=zzz", "after"], ["sort=asc", "sort"]]
      ) {
        const r = yield* Harness.send(Harness.get(`/v1/tasks?${query}`))
        assert.strictEqual(r.status, 400, query)
        assert.strictEqual(r.json.error.param, param, query)
      }
      assert.strictEqual((yield* Harness.send(HttpClientRequest.get("/v1/tasks"))).status, 401)
    }).pipe(Effect.provide(Harness.layer())))
})

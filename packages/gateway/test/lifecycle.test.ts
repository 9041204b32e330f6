import * as HttpClient from "@effect/platform/HttpClient"
import * as VendorB from "@genway/adapter-vendor-b"
import * as EmuB from "@genway/adapter-vendor-b/testing"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import type { ModelEntry } from "@genway/core"
import { Registry } from "@genway/registry"
import { assert, describe, layer } from "@effect/vitest"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as TestClock from "effect/TestClock"
import { Scheduler } from "../src/tasks/Scheduler.js"
import * as Sweeper from "../src/platform/Sweeper.js"
import { TaskStore } from "../src/tasks/Store.js"
import * as Harness from "./harness.js"
import * as SqlClient from "@effect/sql/SqlClient"
import * as fs from "node:fs"
import * as path from "node:path"
import { Settings } from "../src/platform/Config.js"

const status = (path: string) =>
  Effect.gen(function*() {
    const client = yield* HttpClient.HttpClient
    const r = yield* client.execute(HttpClientRequest.get(path))
    return { status: r.status, json: yield* Effect.orElseSucceed(r.json, () => undefined) as Effect.Effect<any> }
  }).pipe(Effect.scoped)

const complete = (path: string, body: unknown) =>
  Effect.gen(function*() {
    const created = yield* Harness.send(Harness.post(path, body))
    assert.strictEqual(created.status, 202, created.text)
    yield* Harness.work
    yield* TestClock.adjust("2 seconds")
    yield* Harness.work
    const done = yield* Harness.send(Harness.get(`${path}/${created.json.task_info.id}`))
    assert.strictEqual(done.json.task_info.status, "completed")
    return done.json
  })

// The sandbox's results are small: kept in their database rows by default, files with `mediaInlineBytes: 0`.
describe.each([["kept in its row", {}, true], ["a file", { mediaInlineBytes: 0 }, false]] as const)("retention (%s)", (_, stored, inline) => {
  layer(Harness.layer({ settings: stored }))((it) => {
    it.scoped("the sweeper deletes G1 media after 2 days: the task stays readable, its URLs answer 410", () =>
      Effect.gen(function*() {
        const g1 = Registry.entries.find((e) => e.endpoints.includes("G1"))!
        const e4 = Registry.entries.find((e) => e.endpoints.includes("E4"))!
        const kept = yield* complete(e4.path, { prompt: "kept" })
        const done = yield* complete(g1.path, { prompt: "a timelapse" })
        const url = new URL(done.videos[0])
        assert.strictEqual((yield* status(url.pathname + url.search)).status, 200)
        const sql = yield* SqlClient.SqlClient
        const key = decodeURIComponent(url.pathname.replace(/^\/media\//, ""))
        const dataDir = (yield* Settings).dataDir
        const file = path.join(dataDir, "media", ...key.split("/"))
        const held = (yield* sql`SELECT body IS NOT NULL AS held FROM media WHERE key = ${key}`)[0]!
        assert.strictEqual(Boolean(held.held), inline)
        assert.strictEqual(fs.existsSync(file), !inline)

        yield* TestClock.adjust("47 hours")
        // Started here rather than at the top so the clock does not step through 2,800 idle sweeps.
        yield* Layer.build(Sweeper.layer)
        const fresh = yield* Harness.send(Harness.get(`${g1.path}/${done.task_info.id}`))
        const freshUrl = new URL(fresh.json.videos[0])
        assert.strictEqual((yield* status(freshUrl.pathname + freshUrl.search)).status, 200)

        yield* TestClock.adjust("62 minutes")
        const later = yield* Harness.send(Harness.get(`${g1.path}/${done.task_info.id}`))
        assert.strictEqual(later.status, 200)
        assert.strictEqual(later.json.task_info.status, "completed")
        const gone = new URL(later.json.videos[0])
        const r = yield* status(gone.pathname + gone.search)
        assert.strictEqual(r.status, 410)
        assert.match(r.json.error.detail, /retention/)
        // The bytes are gone: the row's, or the file.
        const after = (yield* sql`SELECT body IS NOT NULL AS held, deleted_at FROM media WHERE key = ${key}`)[0]!
        assert.isFalse(Boolean(after.held))
        assert.isNotNull(after.deleted_at)
        assert.isFalse(fs.existsSync(file))
        // Entries without a retention keep their media.
        const keptAgain = yield* Harness.send(Harness.get(`${e4.path}/${kept.task_info.id}`))
        const keptUrl = new URL(keptAgain.json.videos[0])
        assert.strictEqual((yield* status(keptUrl.pathname + keptUrl.search)).status, 200)
      }))
  })
})

const base = Registry.entries.find((e) => e.endpoints.includes("E4"))!

/** A model the registry does not ship, declared here as data only. */
const newEntry: ModelEntry.ModelEntry = {
  ...base,
  id: "vendor-b/vid9-t2v-test",
  model: "vid9-t2v-test",
  endpoints: [],
  summary: "A model added by one registry entry",
  path: "/vendors/vendor-b/v1/vid9-t2v-test/generation",
  upstream: { ...base.upstream, model: "vid9-t2v-test" },
  stage: "preview"
}

describe("a new model is one registry entry", () => {
  layer(Harness.layer({ entries: [...Registry.entries, newEntry] }))((it) => {
    it.effect("its create and retrieve routes work with no other change", () =>
      Effect.gen(function*() {
        const done = yield* complete(newEntry.path, { prompt: "a new model" })
        assert.strictEqual(done.videos.length, 1)
        const bad = yield* Harness.send(Harness.post(newEntry.path, { prompt: "" }))
        assert.strictEqual(bad.status, 400)
        assert.strictEqual(bad.json.error.param, "prompt")
        const models = yield* Harness.send(Harness.get("/v1/models"))
        assert.isTrue(models.json.data.some((m: any) => m.id === newEntry.id))
      }))
  })
})

/** The vendor's emulator behind the new model (a live run, not the sandbox). */
class EmulatorB extends Context.Tag("test/lifecycle/EmulatorB")<EmulatorB, EmuB.Emulator.Emulator>() {}

const liveNewModel = Layer.unwrapScoped(Effect.map(EmuB.Emulator.make({ completeAfterPolls: 2 }), (emulator) =>
  Layer.merge(
    Layer.succeed(EmulatorB, emulator),
    Harness.layer({
      entries: [...Registry.entries, newEntry],
      live: Effect.map(
        VendorB.Adapter.make({ baseUrl: emulator.baseUrl, apiKey: Redacted.make(emulator.apiKey) }),
        (adapter) => new Map([[adapter.vendor, adapter] as const])
      ),
      settings: { pollIntervalMs: Option.some(1000) }
    })
  )))

describe("a new model is one registry entry, against the vendor's emulator", () => {
  layer(liveNewModel)((it) => {
    it.effect("the vendor is asked for the new upstream model and the task completes with its video", () =>
      Effect.gen(function*() {
        const created = yield* Harness.send(Harness.post(newEntry.path, { prompt: "a new model, live" }))
        assert.strictEqual(created.status, 202, created.text)
        assert.isUndefined(created.headers["x-genway-sandbox"])
        const id = created.json.task_info.id
        let done: any
        for (let i = 0; i < 8; i++) {
          yield* Harness.work
          done = (yield* Harness.send(Harness.get(`${newEntry.path}/${id}`))).json
          if (done.task_info.status === "completed") break
          yield* TestClock.adjust("2 seconds")
        }
        assert.strictEqual(done.task_info.status, "completed", JSON.stringify(done))
        assert.strictEqual(done.videos.length, 1)
        const tasks = yield* Effect.flatMap(EmulatorB, (e) => e.tasks)
        assert.strictEqual(tasks.length, 1)
        assert.strictEqual((tasks[0]!.body as { model?: unknown }).model, "vid9-t2v-test")
      }))
  })
})

describe("deadlines and crash recovery", () => {
  layer(Harness.layer({ settings: { sandboxDelayMs: 3_600_000 } }))((it) => {
    it.effect("a task that outlives its entry's deadline fails with 3001", () =>
      Effect.gen(function*() {
        const created = yield* Harness.send(Harness.post(base.path, { prompt: "slow" }))
        yield* Harness.work
        yield* TestClock.adjust("31 minutes")
        yield* Harness.work
        const done = yield* Harness.send(Harness.get(`${base.path}/${created.json.task_info.id}`))
        assert.strictEqual(done.json.task_info.status, "failed")
        assert.strictEqual(done.json.task_info.error.code, 3001)
        assert.match(done.json.task_info.error.detail, /deadline/)
      }))

    it.effect("a submit interrupted by a crash is reconciled, not sent twice; the event log shows one submit", () =>
      Effect.gen(function*() {
        const created = yield* Harness.send(Harness.post(base.path, { prompt: "crash" }))
        const id = created.json.task_info.id
        const store = yield* TaskStore
        // Simulate a worker that marked the submit and died before recording the answer.
        const now = yield* Clock.currentTimeMillis
        const claimed = yield* store.claimDue("dead-worker", now, 30_000, 1000)
        const task = claimed.find((t) => t.id === id)!
        yield* store.update(task, { submitState: "submitting" }, 0)
        const after = Option.getOrThrow(yield* store.findById(id))
        assert.strictEqual(after.submitState, "submitting")
        // The lease of the dead worker runs out; a live one takes over.
        yield* TestClock.adjust("31 seconds")
        yield* Harness.work
        const resumed = Option.getOrThrow(yield* store.findById(id))
        assert.strictEqual(resumed.submitState, "submitted")
        const events = yield* store.events(id)
        assert.strictEqual(events.filter((e) => e.note === "submitted").length, 1)
        const scheduler = yield* Scheduler
        assert.notStrictEqual(resumed.leaseOwner, "dead-worker")
        assert.isString(scheduler.owner)
      }))
  })
})

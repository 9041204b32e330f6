/**
 * Adding a vendor is a manifest in the vendor list and its model entries in the registry: here a
 * sixth vendor with a tiny fake protocol (defined below, no network) serves a task end to end.
 */
import type * as HttpClient from "@effect/platform/HttpClient"
import { assert, describe, layer } from "@effect/vitest"
import { type ModelEntry, SampleMedia, TaskInfo, type VendorAdapter, type VendorManifest } from "@genway/core"
import { Registry } from "@genway/registry"
import * as Config from "effect/Config"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/TestClock"
import * as List from "../src/vendors/List.js"
import * as LiveAdapters from "../src/vendors/LiveAdapters.js"
import * as Harness from "./harness.js"

/** The fake protocol: a job is done on its second poll; prompts starting with "fail" fail. */
const fakeProtocol = (): VendorAdapter.VendorAdapter => {
  const polls = new Map<string, number>()
  return {
    vendor: "vendor-f",
    mode: "live",
    submit: (task) =>
      Effect.sync(() => {
        const ref = `job-${task.taskId}`
        polls.set(ref, 0)
        return { ref, status: "pending" as const }
      }),
    poll: (task) =>
      Effect.sync((): VendorAdapter.PollOutcome => {
        const n = (polls.get(task.upstreamRef) ?? 0) + 1
        polls.set(task.upstreamRef, n)
        if (n < 2) return { _tag: "Running", status: "processing" }
        if (String(task.body["prompt"]).startsWith("fail")) {
          return { _tag: "Failed", error: new TaskInfo.TaskError({ code: 3001, title: "Execution error", detail: "the fake vendor failed" }) }
        }
        return { _tag: "Completed", media: [{ _tag: "Bytes", bytes: SampleMedia.png(8, 8, n), contentType: "image/png" }] }
      }),
    download: (source) =>
      source._tag === "Bytes"
        ? Effect.succeed({ contentType: source.contentType, body: Stream.succeed(source.bytes) })
        : Effect.die("the fake vendor returns bytes only")
  }
}

/** The sixth vendor's manifest: live when `VENDOR_F_API_KEY` is set. */
const vendorF: VendorManifest.VendorManifest<HttpClient.HttpClient> = {
  id: "vendor-f",
  tasks: Effect.map(Config.option(Config.string("VENDOR_F_API_KEY")), Option.map(fakeProtocol))
}

/** Its one model, as registry data. */
const entry: ModelEntry.ModelEntry = {
  id: "vendor-f/pixel-1",
  vendor: "vendor-f",
  kind: "task",
  model: "pixel-1",
  endpoints: [],
  summary: "A sixth vendor's image task",
  path: "/vendors/vendor-f/v1/pixel-1/generation",
  request: Schema.Struct({ prompt: Schema.String }),
  rules: [],
  images: [],
  result: "images",
  upstream: { protocol: "fake", operation: "generate", model: "pixel-1" },
  poll: { initial: "1 second", every: ["1 second", "1 second"], deadline: "10 minutes" },
  retention: null,
  mirror: true,
  stage: "preview",
  createIncludesStatus: true,
  maxBodyBytes: 10_000
}

const live = LiveAdapters.fromManifests([...List.manifests, vendorF]).pipe(
  Effect.withConfigProvider(ConfigProvider.fromMap(new Map([["VENDOR_F_API_KEY", "f-key"]]))),
  Effect.orDie
)

describe("a sixth vendor", () => {
  layer(Harness.layer({ entries: [...Registry.entries, entry], live }))((it) => {
    it.scoped("is one list entry plus one registry entry, and runs a task end to end", () =>
      Effect.gen(function*() {
        const created = yield* Harness.send(Harness.post(entry.path, { prompt: "a pixel" }))
        assert.strictEqual(created.status, 202, created.text)
        assert.isUndefined(created.headers["x-genway-sandbox"])
        const id = created.json.task_info.id
        for (let i = 0; i < 4; i++) {
          yield* Harness.work
          yield* TestClock.adjust("2 seconds")
        }
        const done = yield* Harness.send(Harness.get(`${entry.path}/${id}`))
        assert.strictEqual(done.status, 200, done.text)
        assert.strictEqual(done.json.task_info.status, "completed")
        const url = new URL(done.json.images[0])
        const media = yield* Harness.send(Harness.get(url.pathname + url.search, undefined))
        assert.strictEqual(media.status, 200)
        assert.strictEqual(media.headers["content-type"], "image/png")
      }))

    it.scoped("its failures reach the client as task errors", () =>
      Effect.gen(function*() {
        const created = yield* Harness.send(Harness.post(entry.path, { prompt: "fail please" }))
        assert.strictEqual(created.status, 202, created.text)
        for (let i = 0; i < 4; i++) {
          yield* Harness.work
          yield* TestClock.adjust("2 seconds")
        }
        const done = yield* Harness.send(Harness.get(`${entry.path}/${created.json.task_info.id}`))
        assert.strictEqual(done.json.task_info.status, "failed")
        assert.strictEqual(done.json.task_info.error.detail, "the fake vendor failed")
      }))
  })
})

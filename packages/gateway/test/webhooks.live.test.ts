/**
 * Webhooks for live tasks: a vendor-b task run against its emulator (over real HTTP) delivers
 * `task.processing` and `task.completed` with media served from the gateway's store, and a task the
 * vendor fails delivers `task.failed` with the vendor's reason — each verified with `standardwebhooks`.
 */
import * as VendorB from "@genway/adapter-vendor-b"
import * as EmuB from "@genway/adapter-vendor-b/testing"
import { Registry } from "@genway/registry"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { Webhooks } from "../src/webhooks/Webhooks.js"
import * as Harness from "./harness.js"
import { receiver } from "./receiver.js"

const e4 = Registry.entries.find((e) => e.endpoints.includes("E4"))!

const settle = Harness.settle

const payloads = (received: ReadonlyArray<{ readonly verified: unknown }>) =>
  received.map((r) => {
    const v = r.verified as { readonly ok: boolean; readonly payload?: any }
    assert.isTrue(v.ok, JSON.stringify(v))
    return v.payload
  })

describe("webhooks for live tasks", () => {
  it.scoped("a vendor-b task delivers task.processing and task.completed (media downloads); a vendor failure delivers task.failed", () =>
    Effect.gen(function*() {
      const emu = yield* EmuB.Emulator.make({ completeAfterPolls: 3 })
      const live = Effect.map(
        VendorB.Adapter.make({ baseUrl: emu.baseUrl, apiKey: Redacted.make(emu.apiKey) }),
        (adapter) => new Map([[adapter.vendor, adapter] as const])
      )
      const ctx = yield* Layer.build(Harness.layer({
        live,
        settings: { webhookAllowInsecure: true, webhookAllowPrivate: true, pollIntervalMs: Option.some(1000) }
      }))
      yield* Effect.gen(function*() {
        const hook = yield* receiver()
        const made = yield* Harness.send(Harness.post("/v1/webhooks", { url: hook.url }))
        assert.strictEqual(made.status, 201, made.text)
        hook.secret = made.json.secret

        const created = yield* Harness.send(Harness.post(e4.path, { prompt: "a lighthouse at dusk" }))
        assert.strictEqual(created.status, 202, created.text)
        assert.isUndefined(created.headers["x-genway-sandbox"])
        const id = created.json.task_info.id as string
        const done = yield* settle(`${e4.path}/${id}`)
        assert.strictEqual(done.task_info.status, "completed", JSON.stringify(done))

        yield* Effect.flatMap(Webhooks, (w) => w.deliverDue)
        const types = payloads(hook.received).map((p) => p.type)
        assert.deepStrictEqual(types, ["task.processing", "task.completed"], JSON.stringify(types))
        const [processing, completed] = payloads(hook.received)
        assert.strictEqual(processing.type, "task.processing")
        assert.strictEqual(processing.data.task_info.id, id)
        assert.strictEqual(completed.type, "task.completed")
        assert.strictEqual(completed.data.model, e4.id)
        const video = new URL(completed.data.videos[0])
        assert.isTrue(video.pathname.startsWith("/media/"), "served from the gateway's store")
        const download = yield* Harness.send(Harness.get(video.pathname + video.search, undefined))
        assert.strictEqual(download.status, 200)

        // The vendor fails the next task on its first poll.
        yield* emu.inject("poll", { _tag: "FailTask", code: "InternalError.Algo", message: "Algorithm process error." })
        const second = yield* Harness.send(Harness.post(e4.path, { prompt: "a storm at sea" }))
        const failed = yield* settle(`${e4.path}/${second.json.task_info.id}`)
        assert.strictEqual(failed.task_info.status, "failed", JSON.stringify(failed))
        yield* Effect.flatMap(Webhooks, (w) => w.deliverDue)
        const last = payloads(hook.received).at(-1)
        assert.strictEqual(last.type, "task.failed")
        assert.strictEqual(last.data.task_info.id, second.json.task_info.id)
        assert.deepStrictEqual(last.data.task_info.error, failed.task_info.error)
        assert.strictEqual(yield* emu.acceptedSubmits, 2)
      }).pipe(Effect.provide(ctx))
    }), 60_000)
})

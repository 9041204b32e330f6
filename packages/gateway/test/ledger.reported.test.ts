/**
 * Video seconds settled on the vendor's own figure (DESIGN.md §10): live adapters against
 * emulators whose finished videos report a length other than the request's. vendor-a reports the
 * video's `seconds` and vendor-c each video's `duration`, so their tasks settle on those; vendor-b's
 * protocol reports none, so its task settles on the request's `duration`. The reservation at
 * create is always the request's.
 */
import * as VendorA from "@genway/adapter-vendor-a"
import * as EmuA from "@genway/adapter-vendor-a/testing"
import * as VendorB from "@genway/adapter-vendor-b"
import * as EmuB from "@genway/adapter-vendor-b/testing"
import * as VendorC from "@genway/adapter-vendor-c"
import * as EmuC from "@genway/adapter-vendor-c/testing"
import type { ModelEntry, VendorAdapter } from "@genway/core"
import { Registry } from "@genway/registry"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Harness from "./harness.js"

const perSecond = 0.1
const entryOf = (endpoint: string) => Registry.entries.find((e) => e.endpoints.includes(endpoint))!
const videosA = entryOf("E7")
const videosB = entryOf("E4")
const videosC = entryOf("G7")
const priced: ReadonlyArray<ModelEntry.ModelEntry> = Registry.entries.map((e) =>
  [videosA.id, videosB.id, videosC.id].includes(e.id) ? { ...e, price: { per_second: perSecond } } : e
)

const key = (s: string) => Redacted.make(s)

const settle = Harness.settle

const usage = Effect.map(Harness.send(Harness.get("/v1/usage?group_by=model")), (r) => {
  assert.strictEqual(r.status, 200, r.text)
  return r.json
})

describe("video seconds reported by the vendor", () => {
  it.scoped("settle the task: vendor-a's seconds and vendor-c's duration over the request's; vendor-b, which reports none, on the request", () =>
    Effect.gen(function*() {
      const a = yield* EmuA.Emulator.make({ completeOnPoll: 2, reportedSeconds: "12" })
      const b = yield* EmuB.Emulator.make({ completeAfterPolls: 2 })
      const c = yield* EmuC.Emulator.make({ completeAfterPolls: 2, reportedDuration: "5.1" })
      const live = Effect.gen(function*() {
        const list: ReadonlyArray<VendorAdapter.VendorAdapter> = [
          yield* VendorA.Adapter.make({ baseUrl: a.baseUrl, apiKey: key(a.apiKey) }),
          yield* VendorB.Adapter.make({ baseUrl: b.baseUrl, apiKey: key(b.apiKey) }),
          yield* VendorC.Adapter.make({ baseUrl: c.baseUrl, accessKey: key(c.accessKey), secretKey: key(c.secretKey) })
        ]
        return new Map(list.map((adapter) => [adapter.vendor, adapter] as const))
      })
      const gateway = yield* Layer.build(Harness.layer({ entries: priced, live, settings: { pollIntervalMs: Option.some(1000) } }))
      yield* Effect.gen(function*() {
        const requests = [
          { entry: videosA, body: { prompt: "a paper boat", seconds: "4" } },
          { entry: videosB, body: { prompt: "a cat surfing", duration: 10 } },
          { entry: videosC, body: { prompt: "waves on a beach", duration: 10 } }
        ]
        const ids: Array<string> = []
        for (const { body, entry } of requests) {
          const created = yield* Harness.send(Harness.post(entry.path, body))
          assert.strictEqual(created.status, 202, `${entry.id}: ${created.text}`)
          ids.push(`${entry.path}/${created.json.task_info.id}`)
        }
        // Reserved from the requests: 4 s + 10 s + 10 s.
        assert.closeTo((yield* usage).total.reserved_usd, 24 * perSecond, 1e-9)
        for (const url of ids) assert.strictEqual((yield* settle(url)).task_info.status, "completed", url)

        const done = yield* usage
        const seconds = Object.fromEntries(done.groups.map((g: any) => [g.key, g.units.seconds]))
        assert.deepStrictEqual(seconds, { [videosA.id]: 12, [videosB.id]: 10, [videosC.id]: 5.1 })
        const costs = Object.fromEntries(done.groups.map((g: any) => [g.key, g.cost_usd]))
        assert.closeTo(costs[videosA.id], 1.2, 1e-9)
        assert.closeTo(costs[videosB.id], 1, 1e-9)
        assert.closeTo(costs[videosC.id], 0.51, 1e-9)
        assert.closeTo(done.total.units.seconds, 27.1, 1e-9)
        assert.strictEqual(done.total.reserved_usd, 0)
        assert.strictEqual(done.total.counts.completed, 3)
      }).pipe(Effect.provide(gateway))
      // The requests reached the vendors as sent: the figures differ at the vendor, not in the gateway.
      const [sent] = yield* c.tasks
      assert.strictEqual((sent!.body as { readonly duration?: unknown }).duration, "10")
    }), 60_000)
})

/**
 * Every vendor live, against its emulator over real HTTP: each create endpoint of E3–E8 and
 * G1–G8 completes with media served from the gateway's store, the emulators see each vendor's
 * exact protocol, and faults (429 bursts, 503 while polling, dropped connections, a restart
 * between submit and completion) never lead to a lost task or a second job.
 */
import * as HttpServer from "@effect/platform/HttpServer"
import * as VendorA from "@genway/adapter-vendor-a"
import * as EmuA from "@genway/adapter-vendor-a/testing"
import * as VendorB from "@genway/adapter-vendor-b"
import * as EmuB from "@genway/adapter-vendor-b/testing"
import * as VendorC from "@genway/adapter-vendor-c"
import * as EmuC from "@genway/adapter-vendor-c/testing"
import * as VendorD from "@genway/adapter-vendor-d"
import * as EmuD from "@genway/adapter-vendor-d/testing"
import * as VendorE from "@genway/adapter-vendor-e"
import * as EmuE from "@genway/adapter-vendor-e/testing"
import { ModelEntry, type VendorAdapter } from "@genway/core"
import { Registry } from "@genway/registry"
import { assert, describe, it } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as TestClock from "effect/TestClock"
import { validBodies } from "./bodies.js"
import * as Harness from "./harness.js"

const taskEntries = Registry.entries.filter(ModelEntry.isTaskEntry)
const entryOf = (id: string) => taskEntries.find((e) => e.endpoints.includes(id))!
const key = (s: string) => Redacted.make(s)

/** Emulators for every vendor, completing each task on its second poll. */
const emulators = Effect.gen(function*() {
  const a = yield* EmuA.Emulator.make({ completeOnPoll: 2 })
  const b = yield* EmuB.Emulator.make({ completeAfterPolls: 2 })
  const c = yield* EmuC.Emulator.make({ completeAfterPolls: 2 })
  const d = yield* EmuD.Emulator.make({ completeOnPoll: 2 })
  const e = yield* EmuE.Emulator.make({ completeAfterPolls: 2 })
  return { a, b, c, d, e }
})

type Emulators = Effect.Effect.Success<typeof emulators>

const adaptersFor = (emu: Emulators) =>
  Effect.gen(function*() {
    const list: ReadonlyArray<VendorAdapter.VendorAdapter> = [
      yield* VendorA.Adapter.make({ baseUrl: emu.a.baseUrl, apiKey: key(emu.a.apiKey) }),
      yield* VendorB.Adapter.make({ baseUrl: emu.b.baseUrl, apiKey: key(emu.b.apiKey) }),
      yield* VendorC.Adapter.make({ baseUrl: emu.c.baseUrl, accessKey: key(emu.c.accessKey), secretKey: key(emu.c.secretKey) }),
      yield* VendorD.Adapter.make({ baseUrl: emu.d.baseUrl, apiKey: key(emu.d.apiKey) }),
      yield* VendorE.Adapter.make({ baseUrl: emu.e.baseUrl, apiKey: key(emu.e.apiKey) })
    ]
    return new Map(list.map((a) => [a.vendor, a] as const))
  })

const liveGateway = (emu: Emulators, dataDir = Harness.tempDir()) =>
  Harness.layer({ live: adaptersFor(emu), settings: { dataDir, pollIntervalMs: Option.some(1000) } })

const settle = Harness.settle

const mp4OrImage = (bytes: Uint8Array) => {
  const head = Buffer.from(bytes.subarray(0, 12))
  if (head.subarray(4, 8).toString("ascii") === "ftyp") return "mp4"
  if (head[0] === 0x89 && head.subarray(1, 4).toString("ascii") === "PNG") return "png"
  if (head[0] === 0xff && head[1] === 0xd8) return "jpeg"
  if (head.subarray(0, 4).toString("ascii") === "RIFF") return "webp"
  return "unknown"
}

const fetchStored = (url: string) =>
  Effect.gen(function*() {
    const u = new URL(url)
    const server = yield* HttpServer.HttpServer
    const address = server.address as HttpServer.TcpAddress
    assert.strictEqual(u.pathname.startsWith("/media/"), true, `served from the gateway's store: ${url}`)
    const r = yield* Effect.promise(() => fetch(`http://127.0.0.1:${address.port}${u.pathname}${u.search}`))
    return mp4OrImage(new Uint8Array(yield* Effect.promise(() => r.arrayBuffer())))
  })

describe("live vendors against their emulators", () => {
  it.scoped("every create endpoint of E3–E8 and G1–G8 completes end to end, one submit each", () =>
    Effect.gen(function*() {
      const emu = yield* emulators
      const ctx = yield* Layer.build(liveGateway(emu))
      yield* Effect.gen(function*() {
        for (const entry of taskEntries) {
          const id = entry.endpoints[0]!
          const created = yield* Harness.send(Harness.post(entry.path, validBodies[id]))
          assert.strictEqual(created.status, 202, `${id}: ${created.text}`)
          assert.isUndefined(created.headers["x-genway-sandbox"])
          const done = yield* settle(`${entry.path}/${created.json.task_info.id}`)
          assert.strictEqual(done.task_info.status, "completed", `${id}: ${JSON.stringify(done)}`)
          for (const url of done[entry.result] as Array<string>) {
            const kind = yield* fetchStored(url)
            assert.strictEqual(kind === "mp4", entry.result === "videos", `${id}: ${kind}`)
          }
        }
      }).pipe(Effect.provide(ctx))

      const perVendor = (v: string) => taskEntries.filter((e) => e.vendor === v).length
      assert.strictEqual(yield* emu.a.acceptedSubmits, perVendor("vendor-a"))
      assert.strictEqual(yield* emu.b.acceptedSubmits, perVendor("vendor-b"))
      assert.strictEqual(yield* emu.c.acceptedSubmits, perVendor("vendor-c"))
      assert.strictEqual(yield* emu.d.acceptedSubmits, perVendor("vendor-d"))
      assert.strictEqual(yield* emu.e.acceptedSubmits, perVendor("vendor-e"))

      // Each vendor's own protocol, as its emulator saw it.
      const bLog = yield* emu.b.requests
      const bCreates = bLog.filter((r: any) => r.method === "POST")
      assert.isTrue(bCreates.every((r: any) => r.headers["x-dashscope-async"] === "enable"))
      assert.isTrue(bCreates.every((r: any) => typeof r.body.input === "object" && typeof r.body.model === "string"))
      const cLog = yield* emu.c.requests
      const cApi = cLog.filter((r: any) => r.kind !== "download")
      assert.isTrue(cApi.every((r: any) => /^Bearer [\w-]+\.[\w-]+\.[\w-]+$/.test(r.headers["authorization"])))
      const cCreate = cLog.find((r: any) => r.method === "POST") as any
      assert.isString(cCreate.body.external_task_id)
      assert.strictEqual(cCreate.body.duration, "5")
      const dLog = yield* emu.d.requests
      assert.isTrue(dLog.filter((r: any) => r.kind !== "blob").every((r: any) => r.headers["x-goog-api-key"] === emu.d.apiKey))
      const aLog = yield* emu.a.requests
      const aCreate = aLog.find((r: any) => r.method === "POST") as any
      assert.match(aCreate.headers["content-type"], /^multipart\/form-data/)
    }), 60_000)

  it.scoped("429 bursts (with Retry-After and vendor-c's 1303) and 503s while polling: tasks complete, one submit each", () =>
    Effect.gen(function*() {
      const emu = yield* emulators
      yield* emu.b.inject("submit", { _tag: "RateLimited", retryAfterSeconds: 2 }, 3)
      yield* emu.c.inject("submit", { _tag: "RateLimited", code: 1303 }, 2)
      yield* emu.d.inject("poll", { _tag: "Unavailable" }, 3)
      yield* emu.e.inject("poll", { _tag: "Unavailable", retryAfterSeconds: 1 }, 3)
      const ctx = yield* Layer.build(liveGateway(emu))
      yield* Effect.gen(function*() {
        for (const id of ["E4", "E8", "G1", "G3"]) {
          const entry = entryOf(id)
          const created = yield* Harness.send(Harness.post(entry.path, validBodies[id]))
          const done = yield* settle(`${entry.path}/${created.json.task_info.id}`, 120)
          assert.strictEqual(done.task_info.status, "completed", `${id}: ${JSON.stringify(done)}`)
        }
      }).pipe(Effect.provide(ctx))
      for (const e of [emu.b, emu.c, emu.d, emu.e]) assert.strictEqual(yield* e.acceptedSubmits, 1)
    }), 60_000)

  it.scoped("a restart of the gateway between submit and completion loses nothing and submits nothing twice", () =>
    Effect.gen(function*() {
      const emu = yield* emulators
      const dataDir = Harness.tempDir()
      const ids = ["E4", "E8", "G1", "G3", "E7"]
      const urls: Array<string> = []
      yield* Effect.scoped(Effect.gen(function*() {
        const ctx = yield* Layer.build(liveGateway(emu, dataDir))
        yield* Effect.gen(function*() {
          for (const id of ids) {
            const entry = entryOf(id)
            const created = yield* Harness.send(Harness.post(entry.path, validBodies[id]))
            urls.push(`${entry.path}/${created.json.task_info.id}`)
          }
          yield* Harness.work // every task submitted; none complete yet
        }).pipe(Effect.provide(ctx))
      }))
      const ctx = yield* Layer.build(liveGateway(emu, dataDir))
      yield* Effect.gen(function*() {
        for (const url of urls) {
          const done = yield* settle(url)
          assert.strictEqual(done.task_info.status, "completed", url)
        }
      }).pipe(Effect.provide(ctx))
      for (const e of [emu.a, emu.b, emu.c, emu.d, emu.e]) assert.strictEqual(yield* e.acceptedSubmits, 1)
    }), 60_000)

  it.scoped("a connection dropped after the vendor accepted a submit: reconciled by client id, or failed with 3001 — never a second job", () =>
    Effect.gen(function*() {
      const emu = yield* emulators
      yield* emu.c.inject("submit", { _tag: "Drop", afterAccept: true }, 1)
      yield* emu.b.inject("submit", { _tag: "Drop", afterAccept: true }, 1)
      const ctx = yield* Layer.build(liveGateway(emu))
      yield* Effect.gen(function*() {
        const e8 = entryOf("E8")
        const c = yield* Harness.send(Harness.post(e8.path, validBodies.E8))
        const cDone = yield* settle(`${e8.path}/${c.json.task_info.id}`)
        assert.strictEqual(cDone.task_info.status, "completed")

        const e4 = entryOf("E4")
        const b = yield* Harness.send(Harness.post(e4.path, validBodies.E4))
        const bDone = yield* settle(`${e4.path}/${b.json.task_info.id}`)
        assert.strictEqual(bDone.task_info.status, "failed")
        assert.strictEqual(bDone.task_info.error.code, 3001)
        assert.match(bDone.task_info.error.detail, /not resubmitted/)
      }).pipe(Effect.provide(ctx))
      assert.strictEqual(yield* emu.c.acceptedSubmits, 1)
      assert.strictEqual(yield* emu.b.acceptedSubmits, 1)
    }), 60_000)

  it.scoped("gateway A with vendor-e pointed at gateway B (sandbox) serves G3 and G8 end to end", () =>
    Effect.gen(function*() {
      const b = yield* Layer.build(Harness.layer({ settings: { sandboxDelayMs: 1500 } }))
      const bAddress = Context.get(b, HttpServer.HttpServer).address as HttpServer.TcpAddress
      const live = Effect.map(
        VendorE.Adapter.make({ baseUrl: `http://127.0.0.1:${bAddress.port}`, apiKey: key(Harness.tokenB) }),
        (adapter) => new Map([[adapter.vendor, adapter] as const])
      )
      const a = yield* Layer.build(Harness.layer({ live, settings: { pollIntervalMs: Option.some(1000) } }))
      for (const id of ["G3", "G8"]) {
        const entry = entryOf(id)
        const created = yield* Harness.send(Harness.post(entry.path, validBodies[id])).pipe(Effect.provide(a))
        assert.strictEqual(created.status, 202)
        const url = `${entry.path}/${created.json.task_info.id}`
        let done: any
        for (let i = 0; i < 20 && done === undefined; i++) {
          yield* Harness.work.pipe(Effect.provide(a))
          yield* Harness.work.pipe(Effect.provide(b))
          const r = yield* Harness.send(Harness.get(url)).pipe(Effect.provide(a))
          if (r.json.task_info.status === "completed") done = r.json
          yield* TestClock.adjust("1 second")
        }
        assert.isDefined(done, `${id} did not complete through the chain`)
        const kind = yield* fetchStored(done.videos[0]).pipe(Effect.provide(a))
        assert.strictEqual(kind, "mp4")
      }
    }), 60_000)
})

/**
 * Takeover of a dead replica's submit on PostgreSQL (issue 13, item 1), with real processes: a
 * `genway serve` is SIGKILLed while its submit waits on a slow vendor; another replica takes the
 * task over within the 30 s lease (plus start-up margin), and the vendor sees one submit. vendor-b
 * offers no client-chosen id, so the task fails with 3001 "not resubmitted" rather than risk a
 * second job. Real processes and a real vendor delay: waits are wall-clock, bounded by deadlines.
 */
import * as EmuB from "@genway/adapter-vendor-b/testing"
import { assert, describe, it } from "@effect/vitest"
import { Registry } from "@genway/registry"
import * as Effect from "effect/Effect"
import type { ChildProcess } from "node:child_process"
import { validBodies } from "./bodies.js"
import { tempDir } from "./harness.js"
import * as Pg from "./pg.js"
import { exited, freePort, serve, until } from "./processes.js"

const token = "leases-process-token"
const e4 = Registry.entries.find((e) => e.endpoints.includes("E4"))!

/** A replica on the schema's database, vendor-b live against `emu`, its own data directory. */
const replica = (port: number, databaseUrl: string, emu: EmuB.Emulator.Emulator): ChildProcess =>
  serve(tempDir(), port, {
    GATEWAY_DATABASE_URL: databaseUrl,
    GATEWAY_API_KEYS: token,
    VENDOR_B_BASE_URL: emu.baseUrl,
    VENDOR_B_API_KEY: emu.apiKey
  })

describe.skipIf(!Pg.available("leases.process.test.ts"))("lease takeover across processes (PostgreSQL)", () => {
  it.live("a replica killed during a slow submit: another fails the task with 3001 within the lease, one submit", () =>
    Effect.gen(function*() {
      const { schema } = yield* Pg.privateSchema
      const databaseUrl = new URL(Pg.url!)
      databaseUrl.searchParams.set("options", `-c search_path=${schema}`)
      const emu = yield* EmuB.Emulator.make({ completeAfterPolls: 1 })
      // Longer than the lease, shorter than the adapter's 30 s request timeout.
      yield* emu.inject("submit", { _tag: "Slow", delay: "25 seconds" })
      const headers = { authorization: `Bearer ${token}`, "content-type": "application/json" }
      const children: Array<ChildProcess> = []
      yield* Effect.addFinalizer(() =>
        Effect.promise(() => Promise.all(children.map((c) => (c.kill("SIGKILL"), exited(c)))))
      )
      const start = (port: number) => {
        const child = replica(port, databaseUrl.toString(), emu)
        children.push(child)
        const base = `http://127.0.0.1:${port}`
        return Effect.as(Effect.promise(() => until("a healthy replica", () => fetch(`${base}/healthz`).then((r) => (r.ok ? true : undefined)), 60_000)), { child, base })
      }

      const a = yield* start(yield* Effect.promise(freePort))
      const created = yield* Effect.promise(() =>
        fetch(`${a.base}${e4.path}`, { method: "POST", headers, body: JSON.stringify(validBodies.E4) }).then((r) => r.json() as any)
      )
      const taskPath = `${e4.path}/${created.task_info.id}`
      // The submit is in the vendor's hands (and held there): kill the replica without warning.
      yield* Effect.promise(() =>
        until("the submit to reach the vendor", async () => ((await submitsSeen(emu)) > 0 ? true : undefined), 30_000)
      )
      a.child.kill("SIGKILL")
      yield* Effect.promise(() => exited(a.child))
      const killedAt = Date.now()

      const b = yield* start(yield* Effect.promise(freePort))
      const done = yield* Effect.promise(() =>
        until("the task to be taken over and finished", async () => {
          const t = (await fetch(`${b.base}${taskPath}`, { headers }).then((r) => r.json())) as any
          return t.task_info.status === "failed" || t.task_info.status === "completed" ? t : undefined
        }, 75_000)
      )
      const tookMs = Date.now() - killedAt
      // The lease (30 s) plus a replica's start-up and a worker pass, never the old 300 s.
      assert.isBelow(tookMs, 70_000)
      assert.strictEqual(done.task_info.status, "failed")
      assert.strictEqual(done.task_info.error.code, 3001)
      assert.match(done.task_info.error.detail, /not resubmitted/)
      const submits = (yield* emu.requests).filter((r) => r.kind === "submit")
      assert.strictEqual(submits.length, 1)
      assert.isAtMost(yield* emu.acceptedSubmits, 1)
    }).pipe(Effect.scoped), 180_000)
})

/** How many submits the emulator has received so far. */
const submitsSeen = (emu: EmuB.Emulator.Emulator) =>
  Effect.runPromise(Effect.map(emu.requests, (rs) => rs.filter((r) => r.kind === "submit").length))

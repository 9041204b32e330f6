/**
 * The usage ledger across a SIGKILL: tasks reserved before the kill are settled once after the
 * restart, and the totals equal the expected sum. This runs the real `genway serve` process, so it
 * waits on wall-clock time (bounded), polling the gateway's own endpoints.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as path from "node:path"
import * as Database from "../src/platform/Database.js"
import * as fs from "node:fs"
import * as Usage from "../src/ledger/Usage.js"
import { tempDir } from "./harness.js"
import { serve, until, exited, freePort, healthy as isHealthy } from "./processes.js"

const token = "ledger-crash-test-token"


const start = (dataDir: string, port: number) =>
  serve(dataDir, port, {
      GATEWAY_API_KEYS: token,
      GATEWAY_SANDBOX_DELAY_MS: "1500",
      GATEWAY_MODELS_FILE: path.join(dataDir, "models.json")
  })



describe("usage ledger crash safety", () => {
  it.live("SIGKILL mid-flight and restart: every task settled exactly once, totals equal the expected sum", () =>
    Effect.gen(function*() {
      const dataDir = tempDir()
      fs.writeFileSync(path.join(dataDir, "models.json"), JSON.stringify({ "vendor-b/vid2.5-t2v-preview": { price: { per_second: 0.1 } } }))
      const port = yield* Effect.promise(freePort)
      const base = `http://127.0.0.1:${port}`
      const e4 = "/vendors/vendor-b/v1/vid2.5-t2v-preview/generation"
      const headers = { authorization: `Bearer ${token}`, "content-type": "application/json" }
      const healthy = isHealthy(base)

      let child = start(dataDir, port)
      yield* Effect.promise(() => until("first start", healthy, 30_000))
      // 10 tasks of 10 s and 10 of the default 5 s: 150 s at 0.1 USD = 15 USD.
      const created = yield* Effect.promise(() =>
        Promise.all(Array.from({ length: 20 }, async (_, i) => {
          const r = await fetch(`${base}${e4}`, {
            method: "POST",
            headers,
            body: JSON.stringify(i % 2 === 0 ? { prompt: `p${i}`, duration: 10 } : { prompt: `p${i}` })
          })
          assert.strictEqual(r.status, 202)
          return `${e4}/${((await r.json()) as any).task_info.id}`
        }))
      )
      yield* Effect.promise(() => new Promise((r) => setTimeout(r, 400)))
      const killed = exited(child)
      child.kill("SIGKILL")
      yield* Effect.promise(() => killed)

      child = start(dataDir, port)
      yield* Effect.promise(() => until("restart", healthy, 30_000))
      yield* Effect.promise(() =>
        until("all tasks to finish", async () => {
          const all = await Promise.all(created.map((u) => fetch(`${base}${u}`, { headers }).then((r) => r.json() as any)))
          return all.every((t) => t.task_info.status === "completed") ? all : undefined
        }, 30_000)
      )
      const stopped = exited(child)
      child.kill("SIGTERM")
      yield* Effect.promise(() => stopped)

      const report = yield* Usage.report({ from: 0, to: Date.now() + 60_000 }).pipe(
        Effect.provide(Database.sqlite(path.join(dataDir, "genway.db")))
      )
      assert.strictEqual(report.total.counts.completed, 20)
      assert.strictEqual(report.total.units.seconds, 150)
      assert.strictEqual(report.total.cost_usd, 15)
      assert.strictEqual(report.total.reserved_usd, 0)
    }), 120_000)
})

/**
 * SIGKILL at an arbitrary moment and restart on the same data directory: no task is lost, none is
 * submitted twice, in-flight tasks finish. This runs the real `genway serve` process, so it waits
 * on wall-clock time (bounded), polling the gateway's own endpoints.
 */
import { assert, describe, it } from "@effect/vitest"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as path from "node:path"
import * as Database from "../src/platform/Database.js"
import { validBodies } from "./bodies.js"
import { tempDir } from "./harness.js"
import { Registry } from "@genway/registry"
import { serve, until, exited, freePort, healthy as isHealthy } from "./processes.js"

const token = "crash-test-token"


const start = (dataDir: string, port: number) =>
  serve(dataDir, port, {
      GATEWAY_API_KEYS: token,
      GATEWAY_SANDBOX_DELAY_MS: "1500"
  })



describe("crash safety", () => {
  it.live("SIGKILL mid-flight and restart: every task completes, each submitted exactly once", () =>
    Effect.gen(function*() {
      const dataDir = tempDir()
      const port = yield* Effect.promise(freePort)
      const base = `http://127.0.0.1:${port}`
      const headers = { authorization: `Bearer ${token}`, "content-type": "application/json" }
      const healthy = isHealthy(base)

      let child = start(dataDir, port)
      yield* Effect.promise(() => until("first start", healthy, 30_000))
      const entries = Registry.entries.filter((e) => e.kind === "task")
      const created = yield* Effect.promise(() =>
        Promise.all(Array.from({ length: 42 }, async (_, i) => {
          const entry = entries[i % entries.length]!
          const r = await fetch(`${base}${entry.path}`, {
            method: "POST",
            headers,
            body: JSON.stringify(validBodies[entry.endpoints[0]!])
          })
          assert.strictEqual(r.status, 202)
          const json = (await r.json()) as any
          return `${entry.path}/${json.task_info.id}`
        }))
      )
      // Let the workers get going, then kill without warning.
      yield* Effect.promise(() => new Promise((r) => setTimeout(r, 400)))
      const killed = exited(child)
      child.kill("SIGKILL")
      yield* Effect.promise(() => killed)

      child = start(dataDir, port)
      yield* Effect.promise(() => until("restart", healthy, 30_000))
      const results = yield* Effect.promise(() =>
        until("all tasks to finish", async () => {
          const all = await Promise.all(created.map((u) => fetch(`${base}${u}`, { headers }).then((r) => r.json() as any)))
          return all.every((t) => t.task_info.status === "completed") ? all : undefined
        }, 30_000)
      )
      assert.strictEqual(results.length, 42)
      const stopped = exited(child)
      child.kill("SIGTERM")
      yield* Effect.promise(() => stopped)

      const submits = yield* Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        return yield* sql`SELECT task_id, COUNT(*) AS n FROM task_events WHERE note = 'submitted' GROUP BY task_id`
      }).pipe(Effect.provide(Database.sqlite(path.join(dataDir, "genway.db"))))
      assert.strictEqual(submits.length, 42)
      assert.isTrue(submits.every((r) => Number(r.n) === 1))
    }), 120_000)
})

/**
 * Kept E2 responses under SIGKILL: on SQLite an answer goes out once its rows are in the answers'
 * log, and they are committed behind it (platform/AnswerRows.ts). So a gateway killed while
 * answering many requests at once loses none it answered: after a restart on the same data
 * directory (which commits what the log holds past its watermark) every response a client got a
 * 200 for is there, completed, with its one usage row.
 * This runs the real `genway serve` process (sandboxed vendor-a), killed while requests are in flight.
 */
import { assert, describe, it } from "@effect/vitest"
import * as SqlClient from "@effect/sql/SqlClient"
import { Registry } from "@genway/registry"
import * as Effect from "effect/Effect"
import * as path from "node:path"
import * as Database from "../src/platform/Database.js"
import { tempDir } from "./harness.js"
import { exited, freePort, serve, until, healthy as isHealthy } from "./processes.js"

const token = "responses-crash-token"
const entry = Registry.entries.find((e) => e.kind === "responses")!

describe("kept responses under SIGKILL", () => {
  it.live("killed while answering 16 clients at once: every response answered 200 is kept, recorded once", () =>
    Effect.gen(function*() {
      const dataDir = tempDir()
      const port = yield* Effect.promise(freePort)
      const base = `http://127.0.0.1:${port}`
      const headers = { authorization: `Bearer ${token}`, "content-type": "application/json" }
      const healthy = isHealthy(base)

      let child = serve(dataDir, port, { GATEWAY_API_KEYS: token })
      yield* Effect.promise(() => until("first start", healthy, 30_000))

      // 16 clients creating kept responses back to back until the gateway is gone; the kill comes
      // once 200 have been answered, with the others' requests in flight.
      const answered: Array<string> = []
      let killedAt = -1
      const killed = exited(child)
      const client = async (c: number) => {
        for (let i = 0;; i++) {
          try {
            const r = await fetch(`${base}${entry.path}`, { method: "POST", headers, body: JSON.stringify({ model: "responses", input: `client ${c} #${i}` }) })
            const json = (await r.json()) as { id?: string }
            if (r.status !== 200) throw new Error(`answered ${r.status}`)
            answered.push(json.id!)
            if (answered.length === 200) {
              killedAt = answered.length
              child.kill("SIGKILL")
            }
          } catch (error) {
            if (killedAt >= 0) return
            throw error
          }
        }
      }
      yield* Effect.promise(() => Promise.all(Array.from({ length: 16 }, (_, c) => client(c))))
      yield* Effect.promise(() => killed)
      // Answers that reached a client after the kill was sent count too: they were sent after their commit.
      assert.isAtLeast(answered.length, 200)

      child = serve(dataDir, port, { GATEWAY_API_KEYS: token })
      yield* Effect.promise(() => until("restart", healthy, 30_000))
      const read = yield* Effect.promise(() =>
        Promise.all(answered.map((id) => fetch(`${base}${entry.path}/${id}`, { headers }).then(async (r) => [r.status, ((await r.json()) as { status?: string }).status] as const)))
      )
      assert.deepStrictEqual(read.filter(([status, state]) => status !== 200 || state !== "completed"), [], "an answered response was lost")
      const stopped = exited(child)
      child.kill("SIGTERM")
      yield* Effect.promise(() => stopped)

      const usage = yield* Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        return yield* sql<{ id: string }>`SELECT id FROM usage_ledger WHERE source = 'request'`
      }).pipe(Effect.provide(Database.sqlite(path.join(dataDir, "genway.db"))))
      const recorded = new Set(usage.map((r) => r.id))
      assert.deepStrictEqual(answered.filter((id) => !recorded.has(id)), [], "an answered response has no usage row")
    }), 120_000)
})

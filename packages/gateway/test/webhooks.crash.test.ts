/**
 * SIGKILL right after tasks complete, then restart on the same data directory: every
 * `task.completed` is still delivered (the outbox row was committed with the completion), and
 * repeats of one event share its `webhook-id`. Runs the real `genway serve` process, so it waits on
 * wall-clock time (bounded), polling.
 */
import { assert, describe, it } from "@effect/vitest"
import { Registry } from "@genway/registry"
import * as Effect from "effect/Effect"
import { freePort, tempDir } from "./harness.js"
import { receiver } from "./receiver.js"
import { serve, until, exited, healthy as isHealthy } from "./processes.js"

const token = "webhook-crash-token"

const start = (dataDir: string, port: number) =>
  serve(dataDir, port, {
      GATEWAY_API_KEYS: token,
      GATEWAY_SANDBOX_DELAY_MS: "500",
      GATEWAY_WEBHOOK_ALLOW_INSECURE: "1",
      GATEWAY_WEBHOOK_ALLOW_PRIVATE: "1",
      GATEWAY_WEBHOOK_RETRY_MS: Array.from({ length: 120 }, () => "500").join(",")
  })



describe("webhooks survive a crash", () => {
  it.scopedLive("SIGKILL after completion, restart: every task.completed is delivered, repeats share the webhook-id", () =>
    Effect.gen(function*() {
      // Refuses everything until the restart, so the deliveries are still owed when the process dies.
      const hook = yield* receiver(() => 500)
      const dataDir = tempDir()
      const port = yield* Effect.promise(freePort)
      const base = `http://127.0.0.1:${port}`
      const headers = { authorization: `Bearer ${token}`, "content-type": "application/json" }
      const healthy = isHealthy(base)
      let child = start(dataDir, port)
      yield* Effect.addFinalizer(() => Effect.sync(() => child.kill("SIGKILL")))
      yield* Effect.promise(() => until("first start", healthy, 30_000))
      const made = yield* Effect.promise(() =>
        fetch(`${base}/v1/webhooks`, { method: "POST", headers, body: JSON.stringify({ url: hook.url, events: ["task.completed"] }) })
          .then((r) => r.json() as Promise<any>)
      )
      hook.secret = made.secret
      const entry = Registry.entries.find((e) => e.endpoints.includes("E4"))!
      const ids = yield* Effect.promise(() =>
        Promise.all(Array.from({ length: 8 }, async () => {
          const r = await fetch(`${base}${entry.path}`, { method: "POST", headers, body: JSON.stringify({ prompt: "p" }) })
          return ((await r.json()) as any).task_info.id as string
        }))
      )
      yield* Effect.promise(() =>
        until("all tasks to complete", async () => {
          const all = await Promise.all(ids.map((id) => fetch(`${base}${entry.path}/${id}`, { headers }).then((r) => r.json() as any)))
          return all.every((t) => t.task_info.status === "completed") ? true : undefined
        }, 30_000)
      )
      const killed = exited(child)
      child.kill("SIGKILL")
      yield* Effect.promise(() => killed)
      hook.answer = () => 200

      child = start(dataDir, port)
      yield* Effect.promise(() => until("restart", healthy, 30_000))
      yield* Effect.promise(() =>
        until("every completion delivered", async () => {
          const delivered = new Set(
            hook.received.filter((r) => r.verified.ok)
              .map((r) => (r.verified as any).payload)
              .filter((p) => p.type === "task.completed")
              .map((p) => p.data.task_info.id)
          )
          return ids.every((id) => delivered.has(id)) ? true : undefined
        }, 45_000)
      )
      const idsByTask = new Map<string, Set<string>>()
      for (const r of hook.received) {
        assert.isTrue(r.verified.ok)
        const taskId = (r.verified as any).payload.data.task_info.id
        idsByTask.set(taskId, (idsByTask.get(taskId) ?? new Set()).add(r.id))
      }
      for (const id of ids) assert.strictEqual(idsByTask.get(id)?.size, 1, id)
      const stopped = exited(child)
      child.kill("SIGTERM")
      yield* Effect.promise(() => stopped)
    }), 180_000)
})

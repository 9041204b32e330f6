// TEMPORARY (not committed): 10k in-flight polls on one bundle with node args (NODE_ARGS), CPU and RSS from /proc.
import { Registry } from "@genway/registry"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as SqlClient from "@effect/sql/SqlClient"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { spawn } from "node:child_process"
import { randomUUID } from "node:crypto"
import * as Config from "../src/platform/Config.js"
import * as Gateway from "../src/Gateway.js"
import { TaskStore } from "../src/tasks/Store.js"
import { cpuMs, freePort, rssKb } from "./main.js"
const count = 10_000
const seconds = Number(process.env.SECS ?? 20)
const entry = Registry.entries.find((e) => e.endpoints.includes("E4"))!
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "genway-polls-"))
const port = await freePort()
const settings = Config.layerWith({ dataDir, port, host: "127.0.0.1", publicUrl: `http://127.0.0.1:${port}`, databaseUrl: Option.none(), apiKeys: [Redacted.make("t")], sandboxDelayMs: 3_600_000, pollIntervalMs: Option.some(5000), modelsFile: Option.none(), requireLive: false, workerBatch: 500, workerConcurrency: 64 })
await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
  const ctx = yield* Layer.build(Gateway.services(Effect.succeed(new Map()), Registry.layer()).pipe(Layer.provideMerge(settings)))
  const store = ctx.unsafeMap.get(TaskStore.key) as TaskStore["Type"]
  const sql = ctx.unsafeMap.get(SqlClient.SqlClient.key) as SqlClient.SqlClient
  const now = Date.now()
  const template = randomUUID()
  yield* store.create({ id: template, tenant: "bench", entryId: entry.id, vendor: entry.vendor, mode: "sandbox", request: JSON.stringify({ prompt: "p" }), hints: {}, idempotencyKey: null, requestHash: null, upstreamModel: entry.upstream.model, deadlineAt: now + 3_600_000, createdAt: now }, now)
  const columns = (yield* sql<{ name: string }>`SELECT name FROM pragma_table_info('tasks')`).map((c) => c.name)
  const list = columns.map((c) => `"${c}"`).join(", ")
  const values = columns.map((c) => (c === "id" ? `t.id || '-' || n.i` : `t."${c}"`)).join(", ")
  yield* sql.unsafe(`INSERT INTO tasks (${list}) WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?) SELECT ${values} FROM n, tasks t WHERE t.id = ?`, [count - 1, template])
})))
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const c = spawn(process.execPath, [...(process.env.NODE_ARGS ?? "").split(" ").filter(Boolean), process.env.BUNDLE!, "serve"], { cwd: dataDir, stdio: ["ignore", "ignore", "inherit"], env: { ...process.env, HOST: "127.0.0.1", PORT: String(port), GATEWAY_DATA_DIR: dataDir, GATEWAY_API_KEYS: "t", GATEWAY_SANDBOX_DELAY_MS: "3600000", GATEWAY_POLL_INTERVAL_MS: "5000", GATEWAY_WORKER_BATCH: "500", GATEWAY_WORKER_CONCURRENCY: "64", LOG_LEVEL: "warn" } })
await sleep(6000)
const c0 = cpuMs(c.pid!)!; const t0 = performance.now(); let peak = 0
for (let s = 0; s < seconds; s++) { await sleep(1000); peak = Math.max(peak, rssKb(c.pid!)! / 1024) }
console.log(`cores ${((cpuMs(c.pid!)! - c0) / (performance.now() - t0)).toFixed(3)} rss ${peak.toFixed(0)} MB`)
c.kill("SIGINT"); await new Promise((r) => c.once("exit", r))
fs.rmSync(dataDir, { recursive: true, force: true })
process.exit(0)

/**
 * Task benchmarks (DESIGN.md §7), on loopback against an in-process gateway on SQLite:
 * - create: throughput and latency of `POST` creates under concurrent load;
 * - workers: CPU and memory of the poll workers with 10,000 tasks in flight at a 5 s cadence (seeded
 *   here, polled by `genway serve` in its own process);
 * - big bodies: memory while 50 requests carrying a 10 MB image arrive at once.
 * Numbers are printed, never asserted: this is not a test.
 */
import { SampleMedia } from "@genway/core"
import { Registry } from "@genway/registry"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as fs from "node:fs"
import { Agent, request } from "node:http"
import { Worker } from "node:worker_threads"
import * as os from "node:os"
import * as path from "node:path"
import { randomUUID } from "node:crypto"
import * as Config from "../src/platform/Config.js"
import * as Gateway from "../src/Gateway.js"
import { TaskStore } from "../src/tasks/Store.js"
import * as SqlClient from "@effect/sql/SqlClient"
import { cpuMs, freePort, rssKb, spawnGenway } from "./main.js"

const token = "bench-token"

const percentile = (sorted: ReadonlyArray<number>, p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!

const post = (agent: Agent, port: number, path: string, body: string) =>
  new Promise<{ status: number; ms: number }>((resolve, reject) => {
    const start = performance.now()
    const req = request(
      { agent, host: "127.0.0.1", port, path, method: "POST", headers: { authorization: `Bearer ${token}`, "content-type": "application/json", "content-length": Buffer.byteLength(body) } },
      (res) => {
        res.resume()
        res.on("end", () => resolve({ status: res.statusCode ?? 0, ms: performance.now() - start }))
      }
    )
    req.on("error", reject)
    req.end(body)
  })

const settingsFor = (dataDir: string, port: number, patch: Partial<Config.GatewaySettings> = {}) =>
  Config.layerWith({
    dataDir,
    port,
    host: "127.0.0.1",
    publicUrl: `http://127.0.0.1:${port}`,
    databaseUrl: Option.none(),
    apiKeys: [Redacted.make(token)],
    sandboxDelayMs: 4000,
    pollIntervalMs: Option.none(),
    modelsFile: Option.none(),
    requireLive: false,
    ...patch
  })

/** Runs `body` with a gateway listening on `port` (with or without its workers). */
const withGateway = <A>(port: number, patch: Partial<Config.GatewaySettings>, body: (dataDir: string) => Promise<A>, workers = true) => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "genway-bench-"))
  const layer = workers
    ? Gateway.layer
    : Gateway.http.pipe(Layer.provideMerge(Gateway.services(Effect.succeed(new Map()), Registry.layer())))
  return Effect.runPromise(
    Effect.scoped(Effect.gen(function*() {
      yield* Layer.build(layer.pipe(Layer.provide(settingsFor(dataDir, port, patch))))
      return yield* Effect.promise(() => body(dataDir))
    }))
  )
}

/** Runs the load generator in a worker thread (its own event loop, the other core). */
const load = (options: { port: number; path: string; body: string; total: number; concurrency: number; warmup: number }) =>
  new Promise<{ seconds: number; latencies: Array<number>; failed: number }>((resolve, reject) => {
    const worker = new Worker(new URL("./load.mjs", import.meta.url), { workerData: { ...options, token } })
    worker.once("message", resolve)
    worker.once("error", reject)
  })

/** Creates: `total` requests with `concurrency` in flight, from a load generator on another thread. */
export const creates = async (total = 10_000, concurrency = 32, workers = true) => {
  const entry = Registry.entries.find((e) => e.endpoints.includes("E4"))!
  const body = JSON.stringify({ prompt: "a benchmark of paper boats", duration: 5 })
  return withGateway(18931, {}, async () => {
    const r = await load({ port: 18931, path: entry.path, body, total, concurrency, warmup: 200 })
    const latencies = [...r.latencies].sort((a, b) => a - b)
    return {
      bench: `task create (SQLite, loopback, load from another thread, workers ${workers ? "on" : "off"})`,
      requests: total,
      concurrency,
      failed: r.failed,
      perSecond: Math.round(total / r.seconds),
      p50ms: +percentile(latencies, 0.5).toFixed(2),
      p99ms: +percentile(latencies, 0.99).toFixed(2),
      target: ">= 2000/s, p99 <= 20 ms"
    }
  }, workers)
}

/** Workers: `count` sandboxed tasks kept in flight (a long sandbox delay), polled every 5 s. */
export const workers = async (count = 10_000, seconds = 30) => {
  const entry = Registry.entries.find((e) => e.endpoints.includes("E4"))!
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "genway-bench-"))
  const port = await freePort()
  const settings = settingsFor(dataDir, port, {
    sandboxDelayMs: 3_600_000,
    pollIntervalMs: Option.some(5000),
    workerBatch: 500,
    workerConcurrency: 64
  })
  // Seed the tasks before the workers start.
  await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
    const ctx = yield* Layer.build(Gateway.services(Effect.succeed(new Map()), Registry.layer()).pipe(Layer.provideMerge(settings)))
    const store = (ctx.unsafeMap.get(TaskStore.key) as TaskStore["Type"])
    const sql = ctx.unsafeMap.get(SqlClient.SqlClient.key) as SqlClient.SqlClient
    const now = Date.now()
    // One task created through the store, then copied `count - 1` times by one statement (ids
    // `<template>-<n>`): seeding is not what is measured, and creating 10,000 one by one takes
    // seconds. The copies have no event rows; the workers do not read them.
    const template = randomUUID()
    yield* store.create({
      id: template, tenant: "bench", entryId: entry.id, vendor: entry.vendor, mode: "sandbox",
      request: JSON.stringify({ prompt: "a benchmark of paper boats" }), hints: {}, idempotencyKey: null, requestHash: null,
      upstreamModel: entry.upstream.model, deadlineAt: now + 3_600_000, createdAt: now
    }, now)
    const columns = (yield* sql<{ name: string }>`SELECT name FROM pragma_table_info('tasks')`).map((c) => c.name)
    const list = columns.map((c) => `"${c}"`).join(", ")
    const values = columns.map((c) => (c === "id" ? `t.id || '-' || n.i` : `t."${c}"`)).join(", ")
    yield* sql.unsafe(
      `INSERT INTO tasks (${list}) WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?) SELECT ${values} FROM n, tasks t WHERE t.id = ?`,
      [count - 1, template]
    )
  })))
  console.error(`workers: ${count} tasks seeded`)
  // The workers run in `genway serve` as deployed (the compiled gateway, its own process); its CPU
  // and RSS are read from /proc.
  const child = await spawnGenway({
    port,
    dataDir,
    token,
    stdio: ["ignore", "ignore", "inherit"],
    env: {
      GATEWAY_SANDBOX_DELAY_MS: "3600000",
      GATEWAY_POLL_INTERVAL_MS: "5000",
      GATEWAY_WORKER_BATCH: "500",
      GATEWAY_WORKER_CONCURRENCY: "64",
      LOG_LEVEL: "warn"
    }
  })
  try {
    // Let every task be submitted once, then measure steady-state polling.
    await sleep(6000)
    if (child.exitCode !== null || child.pid === undefined) throw new Error(`genway serve exited with ${child.exitCode}`)
    const cpu0 = cpuMs(child.pid) ?? 0
    const t0 = performance.now()
    let rssPeak = 0
    for (let s = 0; s < seconds; s++) {
      await sleep(1000)
      rssPeak = Math.max(rssPeak, (rssKb(child.pid) ?? 0) * 1024)
    }
    const cpu = (cpuMs(child.pid) ?? 0) - cpu0
    console.error("workers: measured")
    const wall = performance.now() - t0
    return {
      bench: "poll workers (SQLite, genway serve in its own process)",
      tasksInFlight: count,
      cadence: "5 s",
      cpuCores: +(cpu / wall).toFixed(3),
      rssPeakMB: Math.round(rssPeak / 1e6),
      target: "< 0.3 core, < 200 MB RSS"
    }
  } finally {
    child.kill("SIGKILL")
    await new Promise((resolve) => (child.exitCode !== null || child.signalCode !== null ? resolve(undefined) : child.once("exit", resolve)))
    fs.rmSync(dataDir, { recursive: true, force: true })
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Big bodies: `n` concurrent creates each carrying a 10 MB inline image. */
export const bigBodies = async (n = 50) => {
  const entry = Registry.entries.find((e) => e.endpoints.includes("E5"))!
  // A valid 400x400 PNG padded with a trailing chunk to ~10 MB decoded.
  const png = Buffer.from(SampleMedia.png(400, 400))
  const pad = Buffer.alloc(9_900_000 - png.length)
  const image = `data:image/png;base64,${Buffer.concat([png, pad]).toString("base64")}`
  const body = JSON.stringify({ prompt: "big", image })
  return withGateway(18933, {}, async () => {
    // Here the client stays on the gateway's thread on purpose: its bodies count in the RSS.
    const agent = new Agent({ keepAlive: true, maxSockets: n })
    const rss0 = process.memoryUsage().rss
    let rssPeak = rss0
    const timer = setInterval(() => (rssPeak = Math.max(rssPeak, process.memoryUsage().rss)), 20)
    const results = await Promise.all(Array.from({ length: n }, () => post(agent, 18933, entry.path, body)))
    clearInterval(timer)
    agent.destroy()
    return {
      bench: "50 concurrent creates with a 10 MB image",
      statuses: [...new Set(results.map((r) => r.status))],
      bodyMB: +(body.length / 1e6).toFixed(1),
      rssGrowthMB: Math.round((rssPeak - rss0) / 1e6),
      perRequestMB: +((rssPeak - rss0) / 1e6 / n).toFixed(1),
      note: "the client's own request bodies (13 MB each) are in the same process"
    }
  })
}

/**
 * The side-by-side benchmark (DESIGN.md §7), in one run: the same fake upstream behind **direct**
 * (the upstream itself), the **floor** (bench/side/floor.mjs: a bare node:http proxy), **Portkey**
 * (`@portkey-ai/gateway`, offline, the upstream as its OpenAI-compatible custom host) and **Genway**
 * (`genway serve` in its own process), and **Genway + telemetry** (the same, exporting traces to an
 * OTLP/HTTP sink, logging JSON and scraped on /metrics; the ratios "telemetry on / off" compare it with
 * the plain Genway, which runs with tracing off). Load comes from another process (bench/side/load.mjs:
 * autocannon, or a sequential keep-alive client). Then task create against a floor doing one
 * durable insert on the same database (SQLite, and PostgreSQL when GATEWAY_TEST_DATABASE_URL is
 * set), E1 stream time to first byte (bench/ttfb.ts), 10k in-flight polls (bench/tasks.ts) and,
 * in full runs, the memory of mirroring a 200 MiB result (bench/mirror.ts). Prints a table and
 * the ratios. Only ratios from one run count: the machine is shared.
 *
 * `pnpm bench` (full) or `pnpm bench --quick` (shorter phases). With `BENCH_BASELINE_DIR` set to
 * another checkout's `packages/gateway` (installed), the task create phase also runs that build's
 * `genway serve` in the same run ("baseline Genway") and prints the ratio Genway / baseline.
 */
import { Registry } from "@genway/registry"
import { type ChildProcess, spawn } from "node:child_process"
import { randomBytes } from "node:crypto"
import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { cpuMs, freePort, spawnGenway, startScript as startScriptOf, waitFor } from "./main.js"

const here = path.dirname(fileURLToPath(import.meta.url))
const require = createRequire(import.meta.url)
const tsx = require.resolve("tsx/esm")
const token = "bench-token"
const upstreamKey = "upstream-key"
// Relative to where `pnpm bench` was typed (pnpm runs the script in packages/gateway).
const baselineDir = process.env.BENCH_BASELINE_DIR
  ? path.resolve(process.env.INIT_CWD ?? process.cwd(), process.env.BENCH_BASELINE_DIR)
  : undefined

export interface SideOptions {
  readonly quick: boolean
  readonly only?: ReadonlyArray<string>
}

const children: Array<ChildProcess> = []
const stopAll = () => {
  for (const c of children) if (c.exitCode === null) c.kill("SIGTERM")
}
process.on("exit", stopAll)

/** A bench script in its own process (see main.ts), stopped when this run ends. */
const startScript = (script: string, env: Record<string, string>, args: Array<string> = []) =>
  startScriptOf(script, env, { args, onChild: (child) => children.push(child) })

/** Bytes and lines a process wrote on stdout (its log, when `countStdout`). */
interface Output {
  bytes: number
  lines: number
}

const startGenway = async (env: Record<string, string>, name = "genway", countStdout = false, gatewayDir = path.join(here, "..")) => {
  const port = await freePort()
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "genway-side-"))
  const child = await spawnGenway({ port, dataDir, token, env, cwd: dataDir, gatewayDir, stdio: ["ignore", countStdout ? "pipe" : "ignore", "ignore"] })
  children.push(child)
  const stdout: Output = { bytes: 0, lines: 0 }
  child.stdout?.on("data", (d: Buffer) => {
    stdout.bytes += d.length
    for (let i = d.indexOf(10); i !== -1; i = d.indexOf(10, i + 1)) stdout.lines++
  })
  await waitFor(`http://127.0.0.1:${port}/healthz`, child, name)
  return { port, child, stdout }
}

/** Scrapes `url` every second until stopped, as Prometheus would; keeps the last text. */
const scrapeEverySecond = (url: string) => {
  const state = { scrapes: 0, failed: 0, bytes: 0, last: "" }
  const once = () =>
    fetch(url).then(async (r) => {
      const text = await r.text()
      if (r.status !== 200) return void state.failed++
      state.scrapes++
      state.bytes += Buffer.byteLength(text)
      state.last = text
    }, () => void state.failed++)
  const timer = setInterval(() => void once(), 1000)
  return async () => {
    clearInterval(timer)
    await once()
    return state
  }
}

/** The sum of a Prometheus counter's samples whose labels contain `match`. */
const counterSum = (text: string, name: string, match: string) => {
  let sum = 0
  for (const line of text.split("\n")) {
    if (line.startsWith(`${name}{`) && line.includes(match)) sum += Number(line.slice(line.lastIndexOf(" ") + 1))
  }
  return sum
}

const startPortkey = async () => {
  const port = await freePort()
  const script = require.resolve("@portkey-ai/gateway/build/start-server.js")
  const child = spawn(process.execPath, [script, `--port=${port}`, "--headless"], {
    stdio: "ignore",
    env: { ...process.env, NODE_ENV: "production" }
  })
  children.push(child)
  await waitFor(`http://127.0.0.1:${port}/`, child, "portkey")
  return { port, child }
}

interface Job {
  readonly url: string
  readonly headers: Record<string, string>
  readonly body: string
}
interface Cannon {
  readonly rps: number
  readonly total: number
  readonly p50: number
  readonly p99: number
  readonly failed: number
}
interface Sequential {
  readonly p50: number
  readonly p99: number
  readonly failed: number
  /** The upstream called directly, alternating with the measured requests (when asked for). */
  readonly pair?: { readonly p50: number; readonly p99: number }
}

/**
 * The load generator (bench/side/load.mjs): one process for the whole run, started at its first
 * job, fed one job a line on stdin; each job's result is its next line on stdout. Jobs run one at a
 * time, in the order given.
 */
let loader: { child: ChildProcess; waiting: Array<(line: string) => void>; ended: string | undefined } | undefined
const loadGenerator = () => {
  if (loader !== undefined && loader.ended === undefined) return loader
  const child = spawn(process.execPath, [path.join(here, "side/load.mjs")], { stdio: ["pipe", "pipe", "inherit"] })
  children.push(child)
  const state: NonNullable<typeof loader> = { child, waiting: [], ended: undefined }
  let buffered = ""
  child.stdout!.on("data", (d) => {
    buffered += String(d)
    for (let i = buffered.indexOf("\n"); i !== -1; i = buffered.indexOf("\n")) {
      const line = buffered.slice(0, i)
      buffered = buffered.slice(i + 1)
      state.waiting.shift()?.(line)
    }
  })
  child.once("exit", (code) => {
    state.ended = `load generator exited with ${code}`
    for (const answer of state.waiting.splice(0)) answer(JSON.stringify({ error: state.ended }))
  })
  loader = state
  return state
}

const runLoad = <A>(job: Record<string, unknown>) =>
  new Promise<A>((resolve, reject) => {
    const generator = loadGenerator()
    generator.waiting.push((line) => {
      const result = JSON.parse(line) as A | { error: string }
      if (typeof result === "object" && result !== null && "error" in result) reject(new Error(`load generator: ${result.error}`))
      else resolve(result)
    })
    generator.child.stdin!.write(`${JSON.stringify(job)}\n`)
  })

/**
 * Seconds of unmeasured load each contestant gets before it is measured, the same for all: V8
 * optimises a large code path (Genway's, Portkey's) over tens of seconds of load, a bare proxy's
 * at once. Measured on the 2-core machine: Genway's CPU per kept E2 request falls from about 3.4 ms
 * in the first seconds to about 1.9 ms after 20–30 s of load. Quick runs warm briefly (their
 * figures for the larger contestants lean pessimistic); full runs warm properly. E2 only: a task
 * create warm-up would leave its tasks to the workers during the measured phase.
 */
const warmSeconds = (quick: boolean) => (quick ? 2 : 20)

const max = (job: Job, seconds: number, connections = 50) => runLoad<Cannon>({ mode: "max", ...job, connections, seconds })
const atRate = (job: Job, seconds: number, rate: number) => runLoad<Cannon>({ mode: "rate", ...job, connections: 50, seconds, rate })
const sequential = (job: Job, requests: number, warmup: number, pair?: Job) =>
  runLoad<Sequential>({ mode: "sequential", ...job, requests, warmup, ...(pair === undefined ? {} : { pair }) })

/**
 * What a contestant's sequential requests add over the upstream's: its percentiles less those of
 * the direct requests that alternated with them (bench/side/load.mjs, `pair`).
 */
const addedOf = (seq: Sequential) => ({ p50: seq.p50 - (seq.pair?.p50 ?? NaN), p99: seq.p99 - (seq.pair?.p99 ?? NaN) })

/**
 * Waits until none of `pids` uses more than 5 % of a core over half a second (at most 60 s, then
 * says so): a Genway's workers go on with the tasks of a phase after its load stops, and that work
 * must not compete with the next contestant's measurement. Tasks still waiting for their next poll
 * do not count as busy.
 */
const quiet = async (pids: ReadonlyArray<number | undefined>) => {
  const until = Date.now() + 60_000
  while (Date.now() < until) {
    const before = pids.map(cpuMs)
    await new Promise((r) => setTimeout(r, 500))
    const busy = pids.some((pid, i) => (cpuMs(pid) ?? 0) - (before[i] ?? 0) > 25)
    if (!busy) return
  }
  console.error("bench: a gateway was still busy after 60 s; measuring anyway")
}

const r1 = (n: number) => Math.round(n * 10) / 10
const r2 = (n: number) => Math.round(n * 100) / 100
/** `+1.2` or `−1.2` (a contestant can beat direct's p99 in a noisy run). */
const signed = (n: number) => (n < 0 ? `−${r2(-n)}` : `+${r2(n)}`)
const ratio = (a: number, b: number) => (b === 0 ? NaN : Math.round((a / b) * 100) / 100)

const table = (header: ReadonlyArray<string>, rows: ReadonlyArray<ReadonlyArray<string | number>>) => {
  const lines = [`| ${header.join(" | ")} |`, `|${header.map(() => "---").join("|")}|`]
  for (const row of rows) lines.push(`| ${row.join(" | ")} |`)
  return lines.join("\n")
}

const telemetryOn = "Genway + telemetry"

/**
 * E2 non-stream pass-through: direct, floor, Portkey, Genway (store default and store:false), and
 * Genway with telemetry on: a second `genway serve` exporting traces to an OTLP/HTTP sink
 * (bench/side/otlp.mjs), logging JSON lines (counted on a pipe) and scraped on /metrics every second
 * while it is measured. The plain Genway rows run without `OTEL_EXPORTER_OTLP_ENDPOINT`: telemetry off.
 * `--quick` leaves the telemetry contestant out (it would add a tenth of the quick run's time).
 */
const e2 = async (quick: boolean, out: Array<string>, ratios: Record<string, number | string>) => {
  const seconds = quick ? 1.5 : 10
  const seqN = quick ? 300 : 5000
  const seqWarmup = quick ? 100 : 200
  // Everything starts at once (a start is mostly waiting on module loading), after the two that
  // the others are pointed at.
  const [up, sink] = await Promise.all([
    startScript(path.join(here, "side/upstream.mjs"), { UPSTREAM_KEY: upstreamKey }),
    quick ? undefined : startScript(path.join(here, "side/otlp.mjs"), {})
  ])
  const upstreamBase = `http://127.0.0.1:${up.port}/v1`
  const [floor, portkey, genway, traced] = await Promise.all([
    startScript(path.join(here, "side/floor.mjs"), { FLOOR_TOKEN: token, UPSTREAM_URL: upstreamBase, UPSTREAM_KEY: upstreamKey }),
    startPortkey(),
    startGenway({ VENDOR_A_BASE_URL: upstreamBase, VENDOR_A_API_KEY: upstreamKey }),
    sink === undefined ? undefined : startGenway({
      VENDOR_A_BASE_URL: upstreamBase,
      VENDOR_A_API_KEY: upstreamKey,
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${sink.port}`,
      LOG_FORMAT: "json"
    }, "genway + telemetry", true)
  ])
  const body = JSON.stringify({ model: "responses", input: "a benchmark of paper boats" })
  const bodyNoStore = JSON.stringify({ model: "responses", input: "a benchmark of paper boats", store: false })
  const json = { "content-type": "application/json" }
  const entry = Registry.entries.find((e) => e.endpoints.includes("E2"))!
  // Each with the process that answers it (whose CPU time is read around its measurement).
  const contestants: Array<[string, Job, ChildProcess]> = [
    ["direct", { url: `${upstreamBase}/responses`, headers: { ...json, authorization: `Bearer ${upstreamKey}` }, body }, up.child],
    ["floor", { url: `http://127.0.0.1:${floor.port}/v1/responses`, headers: { ...json, authorization: `Bearer ${token}` }, body }, floor.child],
    ["Portkey 1.15.2", {
      url: `http://127.0.0.1:${portkey.port}/v1/responses`,
      headers: { ...json, authorization: `Bearer ${upstreamKey}`, "x-portkey-provider": "openai", "x-portkey-custom-host": upstreamBase },
      body
    }, portkey.child],
    ["Genway (kept)", { url: `http://127.0.0.1:${genway.port}${entry.path}`, headers: { ...json, authorization: `Bearer ${token}` }, body }, genway.child],
    // Right after its plain twin, so the machine's load drifts as little as possible between them.
    ...(traced === undefined ? [] : [[telemetryOn, { url: `http://127.0.0.1:${traced.port}${entry.path}`, headers: { ...json, authorization: `Bearer ${token}` }, body }, traced.child] as [string, Job, ChildProcess]]),
    ["Genway (store:false)", { url: `http://127.0.0.1:${genway.port}${entry.path}`, headers: { ...json, authorization: `Bearer ${token}` }, body: bodyNoStore }, genway.child]
  ]
  // The upstream itself needs no warm-up (no optimising of a long code path, and no ratio reads its
  // throughput), and store:false runs on the process that was just warmed and measured as "kept".
  const warm = (name: string) => name !== "direct" && name !== "Genway (store:false)"
  // A check that each answers 200 before measuring.
  for (const [name, job] of contestants) {
    const r = await fetch(job.url, { method: "POST", headers: job.headers, body: job.body })
    if (r.status !== 200) throw new Error(`${name} answered ${r.status}: ${(await r.text()).slice(0, 300)}`)
    await r.arrayBuffer().catch(() => undefined)
  }
  const directJob = contestants.find(([name]) => name === "direct")![1]
  const results: Record<string, { max: Cannon; seq: Sequential; rate: Cannon; cpuPerRequest: number | undefined }> = {}
  let scraped: Awaited<ReturnType<ReturnType<typeof scrapeEverySecond>>> | undefined
  // What the telemetry contestant had produced by the end of its warm-up (subtracted below).
  let warmed = { served: 0, traces: { requests: 0, bytes: 0 }, lines: 0, bytes: 0 }
  for (const [name, job, child] of contestants) {
    if (warm(name)) await max(job, warmSeconds(quick))
    if (name === telemetryOn && traced !== undefined && sink !== undefined) {
      // The exporter sends every second: one interval more, and the warm-up's spans are in.
      await new Promise((r) => setTimeout(r, 1500))
      const counts = await fetch(`http://127.0.0.1:${sink.port}/counts`).then((r) => r.json()) as Record<string, { requests: number; bytes: number }>
      const metrics = await fetch(`http://127.0.0.1:${traced.port}/metrics`).then((r) => r.text())
      warmed = {
        served: counterSum(metrics, "genway_http_requests_total", `route="${entry.path}"`),
        traces: counts["/v1/traces"] ?? { requests: 0, bytes: 0 },
        lines: traced.stdout.lines,
        bytes: traced.stdout.bytes
      }
    }
    const stopScraping = name === telemetryOn && traced !== undefined ? scrapeEverySecond(`http://127.0.0.1:${traced.port}/metrics`) : undefined
    const cpuBefore = cpuMs(child.pid)
    const t = Date.now()
    // Each proxy's sequential requests alternate with direct ones: what it adds is read against
    // the upstream of the same seconds (the machine drifts between phases by as much as the
    // target's 0.1 ms).
    const seq = await sequential(job, seqN, seqWarmup, name === "direct" ? undefined : directJob)
    const m = await max(job, seconds)
    const rate = await atRate(job, seconds, 1000)
    if (stopScraping !== undefined) scraped = await stopScraping()
    const cpuAfter = cpuMs(child.pid)
    const answered = seqN + seqWarmup + m.total + rate.total
    const cpuPerRequest = cpuBefore === undefined || cpuAfter === undefined ? undefined : (cpuAfter - cpuBefore) / answered
    results[name] = { max: m, seq, rate, cpuPerRequest }
    console.error(`bench: e2 ${name} measured in ${Math.round((Date.now() - t) / 1000)} s`)
  }
  const rows = contestants.map(([name]) => {
    const r = results[name]!
    const added = name === "direct" ? "—" : ((a) => `${signed(a.p50)} / ${signed(a.p99)}`)(addedOf(r.seq))
    const failed = r.max.failed + r.rate.failed + r.seq.failed
    const cpu = r.cpuPerRequest === undefined ? "—" : r2(r.cpuPerRequest)
    return [name, Math.round(r.max.rps), name === "direct" ? `${r2(r.seq.p50)} / ${r2(r.seq.p99)} (absolute)` : added, r1(r.rate.p99), cpu, failed]
  })
  out.push(`E2 non-stream pass-through (50 connections for max and at 1,000 req/s; ${seconds} s each; sequential ${seqN} requests, each proxy's alternating with as many direct ones: added = its percentile less theirs)`)
  out.push(table(["", "max req/s", "sequential added p50 / p99 ms", "p99 ms at 1,000 req/s", "CPU ms per request", "non-2xx/errors"], rows))
  const floorR = results["floor"]!
  const portkeyR = results["Portkey 1.15.2"]!
  for (const variant of ["Genway (kept)", "Genway (store:false)"]) {
    const g = results[variant]!
    ratios[`${variant} max / floor (>= 0.5)`] = ratio(g.max.rps, floorR.max.rps)
    ratios[`${variant} max / Portkey`] = ratio(g.max.rps, portkeyR.max.rps)
    ratios[`${variant} seq added p50 - floor's ms (<= 0.1)`] = r2(addedOf(g.seq).p50 - addedOf(floorR.seq).p50)
    ratios[`${variant} seq added p50 / Portkey's`] = ratio(addedOf(g.seq).p50, addedOf(portkeyR.seq).p50)
    ratios[`${variant} seq added p99 / floor's`] = ratio(addedOf(g.seq).p99, addedOf(floorR.seq).p99)
    ratios[`${variant} p99@1000 / floor (<= 3)`] = ratio(g.rate.p99, floorR.rate.p99)
    ratios[`${variant} p99@1000 / Portkey`] = ratio(g.rate.p99, portkeyR.rate.p99)
  }
  if (traced === undefined || sink === undefined) {
    out.push(`(${telemetryOn}: full runs only)`)
  } else {
    // The exporter sends every second: one more interval, and the sink has all of the run's spans.
    await new Promise((r) => setTimeout(r, 1500))
    const received = await fetch(`http://127.0.0.1:${sink.port}/counts`).then((r) => r.json()) as Record<string, { requests: number; bytes: number }>
    const served = counterSum(scraped?.last ?? "", "genway_http_requests_total", `route="${entry.path}"`) - warmed.served
    const allTraces = received["/v1/traces"] ?? { requests: 0, bytes: 0 }
    const traces = { requests: allTraces.requests - warmed.traces.requests, bytes: allTraces.bytes - warmed.traces.bytes }
    const lines = traced.stdout.lines - warmed.lines
    const logBytes = traced.stdout.bytes - warmed.bytes
    const otlpMetrics = received["/v1/metrics"] ?? { requests: 0, bytes: 0 }
    out.push(`${telemetryOn}: what its telemetry produced while measured (E2 requests served: ${served}, from its /metrics)`)
    out.push(table(["", "requests", "bytes", "per E2 request"], [
      ["OTLP POST /v1/traces (protobuf)", traces.requests, traces.bytes, served === 0 ? "—" : `${Math.round(traces.bytes / served)} B`],
      ["OTLP POST /v1/metrics", otlpMetrics.requests, otlpMetrics.bytes, "—"],
      ["JSON log lines on stdout", lines, logBytes, served === 0 ? "—" : `${r2(lines / served)} lines`],
      ["GET /metrics scrapes (every 1 s)", `${scraped?.scrapes ?? 0} (${scraped?.failed ?? 0} failed)`, scraped?.bytes ?? 0, "—"]
    ]))
    const off = results["Genway (kept)"]!
    const on = results[telemetryOn]!
    ratios["telemetry on / off: max req/s"] = ratio(on.max.rps, off.max.rps)
    ratios["telemetry on / off: seq added p50"] = ratio(addedOf(on.seq).p50, addedOf(off.seq).p50)
    ratios["telemetry on / off: seq added p99"] = ratio(addedOf(on.seq).p99, addedOf(off.seq).p99)
    ratios["telemetry on - off: seq added p50 ms"] = r2(addedOf(on.seq).p50 - addedOf(off.seq).p50)
    ratios["telemetry on / off: p99@1000"] = ratio(on.rate.p99, off.rate.p99)
    if (on.cpuPerRequest !== undefined && off.cpuPerRequest !== undefined) {
      ratios["telemetry on / off: CPU per request"] = ratio(on.cpuPerRequest, off.cpuPerRequest)
    }
    if (traces.bytes === 0) ratios["telemetry on: spans exported"] = "NONE (the sink received no trace export)"
  }
  for (const c of [up.child, floor.child, portkey.child, genway.child, traced?.child, sink?.child]) c?.kill("SIGTERM")
}

/** Tasks completed so far on the gateway at `port` (its `genway_tasks` gauge, read from the database at each scrape). */
const completedOf = (port: number) =>
  fetch(`http://127.0.0.1:${port}/metrics`).then((r) => r.text()).then((text) => counterSum(text, "genway_tasks", `status="completed"`))

/** Task create, sandbox, workers on, vs a floor doing one durable insert on the same database. */
const creates = async (quick: boolean, out: Array<string>, ratios: Record<string, number | string>) => {
  const seconds = quick ? 1.5 : 10
  const entry = Registry.entries.find((e) => e.endpoints.includes("E4"))!
  const body = JSON.stringify({ prompt: "a benchmark of paper boats", duration: 5 })
  const headers = { "content-type": "application/json", authorization: `Bearer ${token}` }
  // [name, Genway's env, the baseline Genway's env (its own database), the floor's env, cleanup]
  const databases: Array<["SQLite" | "PostgreSQL", Record<string, string>, Record<string, string>, Record<string, string>, () => Promise<void>]> = []
  const sqliteDir = fs.mkdtempSync(path.join(os.tmpdir(), "genway-side-floor-"))
  databases.push(["SQLite", {}, {}, {
    FLOOR_DB: "sqlite",
    FLOOR_SQLITE_FILE: path.join(sqliteDir, "floor.db"),
    FLOOR_RESOLVE_FROM: fs.realpathSync(require.resolve("@effect/sql-sqlite-node/package.json"))
  }, async () => {}])
  const pgUrl = process.env.GATEWAY_TEST_DATABASE_URL
  if (pgUrl !== undefined && pgUrl !== "") {
    const pgRequire = createRequire(fs.realpathSync(require.resolve("@effect/sql-pg/package.json")))
    const pg = pgRequire("pg") as { Client: new (o: { connectionString: string }) => { connect(): Promise<void>; query(q: string): Promise<unknown>; end(): Promise<void> } }
    const schema = `genway_bench_${randomBytes(4).toString("hex")}`
    const admin = new pg.Client({ connectionString: pgUrl })
    await admin.connect()
    await admin.query(`CREATE SCHEMA ${schema}`)
    await admin.query(`CREATE SCHEMA ${schema}_base`)
    const scoped = new URL(pgUrl)
    scoped.searchParams.set("options", `-c search_path=${schema}`)
    const scopedBase = new URL(pgUrl)
    scopedBase.searchParams.set("options", `-c search_path=${schema}_base`)
    databases.push(["PostgreSQL", { GATEWAY_DATABASE_URL: scoped.toString() }, { GATEWAY_DATABASE_URL: scopedBase.toString() }, {
      FLOOR_DB: "pg",
      FLOOR_PG_URL: scoped.toString(),
      FLOOR_RESOLVE_FROM: fs.realpathSync(require.resolve("@effect/sql-pg/package.json"))
    }, async () => {
      await admin.query(`DROP SCHEMA ${schema} CASCADE`)
      await admin.query(`DROP SCHEMA ${schema}_base CASCADE`)
      await admin.end()
    }])
  } else {
    out.push("(PostgreSQL task create skipped: GATEWAY_TEST_DATABASE_URL is not set)")
  }
  const rows: Array<Array<string | number>> = []
  // The sandbox's generation time, short: a phase's tasks complete (and cost the workers) within
  // it, and there is little left for them to finish before the next phase.
  const sandbox = { GATEWAY_SANDBOX_DELAY_MS: "1000" }
  try {
    // Every process of this part starts at once (a start is mostly module loading); the idle ones
    // wait while the others are measured.
    const started = await Promise.all(databases.map(async ([db, genwayEnv, baseEnv, floorEnv]) => {
      const [floor, genway, base] = await Promise.all([
        startScript(path.join(here, "side/floor.mjs"), { FLOOR_TOKEN: token, ...floorEnv }),
        startGenway({ ...sandbox, ...genwayEnv }, `genway (${db})`),
        baselineDir === undefined ? undefined : startGenway({ ...sandbox, ...baseEnv }, `baseline genway (${db})`, false, baselineDir)
      ])
      return { db, floor, genway, base }
    }))
    for (const { base, db, floor, genway } of started) {
      const floorJob = { url: `http://127.0.0.1:${floor.port}/tasks`, headers, body }
      const genwayJob = { url: `http://127.0.0.1:${genway.port}${entry.path}`, headers, body }
      const baseJob = base === undefined ? undefined : { ...genwayJob, url: `http://127.0.0.1:${base.port}${entry.path}` }
      for (const job of baseJob === undefined ? [genwayJob] : [genwayJob, baseJob]) {
        const check = await fetch(job.url, { method: "POST", headers, body })
        if (check.status !== 202) throw new Error(`task create at ${job.url} answered ${check.status}: ${await check.text()}`)
      }
      const pids = [genway.child.pid, base?.child.pid]
      const measure = async <A>(run: () => Promise<A>) => {
        await quiet(pids)
        return run()
      }
      const fMax = await measure(() => max(floorJob, seconds))
      // How many tasks the workers completed during the phase, against how many were created in it.
      // The creates and the tasks' lives share one process, and under a full create load the
      // workers fall behind (the backlog is worked off afterwards, see bench/JOURNAL.md "Progress
      // written behind"), so the create rate alone overstates what the gateway sustains.
      const gDone = await measure(async () => {
        const before = await completedOf(genway.port)
        const m = await max(genwayJob, seconds)
        return { m, completed: (await completedOf(genway.port)) - before }
      })
      const gMax = gDone.m
      const bMax = baseJob === undefined ? undefined : await measure(() => max(baseJob, seconds))
      const fRate = await measure(() => atRate(floorJob, seconds, 2000))
      const gRate = await measure(() => atRate(genwayJob, seconds, 2000))
      const bRate = baseJob === undefined ? undefined : await measure(() => atRate(baseJob, seconds, 2000))
      rows.push([`floor (${db})`, Math.round(fMax.rps), r1(fMax.p99), "—", r1(fRate.p99), Math.round(fRate.rps), fMax.failed + fRate.failed])
      rows.push([
        `Genway (${db})`,
        Math.round(gMax.rps),
        r1(gMax.p99),
        `${gDone.completed} of ${gMax.total}`,
        r1(gRate.p99),
        Math.round(gRate.rps),
        gMax.failed + gRate.failed
      ])
      // A sandboxed task takes 1 s: of a phase of `seconds`, at most the creates of its first
      // `seconds - 1` can have completed by its end, however fast the workers.
      ratios[`task create ${db} max: tasks completed during it / created (at most ${r2((seconds - 1) / seconds)})`] = ratio(gDone.completed, gMax.total)
      if (bMax !== undefined && bRate !== undefined) {
        rows.push([`baseline Genway (${db})`, Math.round(bMax.rps), r1(bMax.p99), "—", r1(bRate.p99), Math.round(bRate.rps), bMax.failed + bRate.failed])
        ratios[`task create ${db} max, Genway / baseline`] = bMax.failed + gMax.failed > 0
          ? "— (non-2xx answers during max; see the table)"
          : ratio(gMax.rps, bMax.rps)
      }
      ratios[`task create ${db} max / floor (>= 0.4)`] = ratio(gMax.rps, fMax.rps)
      ratios[`task create ${db} p99 ms at 2,000/s (<= 20)`] = r1(gRate.p99)
      floor.child.kill("SIGTERM")
      genway.child.kill("SIGTERM")
      base?.child.kill("SIGTERM")
    }
    await new Promise((r) => setTimeout(r, 300))
  } finally {
    for (const [, , , , cleanup] of databases) await cleanup()
  }
  out.push(`Task create (sandbox, workers on; 50 connections; ${seconds} s each)`)
  out.push(table(["", "max req/s", "p99 ms at max", "tasks completed during max (of created)", "p99 ms at 2,000 req/s", "achieved req/s", "non-2xx/errors"], rows))
}

/**
 * E1 stream time to first byte, through bench/ttfb.ts: direct (vendor-d's emulator, in its own
 * process), the floor proxy and Genway (each in its own process), one request at a time.
 */
const ttfb = async (quick: boolean, out: Array<string>, ratios: Record<string, number | string>) => {
  const { run } = await import("./ttfb.js")
  // Warmed as E2's contestants are (steady state, not V8 optimising the path); the first 50 rounds
  // after the start are reported apart.
  // Quick: 200 rounds of three requests, as many requests as the 300 pairs of direct and Genway before.
  const r = await run({ runs: quick ? 100 : 500, warmup: quick ? 200 : 1500 })
  out.push(`E1 stream time to first SSE byte (vendor-d emulator in its own process, one request at a time, after ${r.warmup} unmeasured rounds)`)
  out.push(table(["", "p50 ms", "p99 ms"], [
    ["direct", r.directMs.p50, r.directMs.p99],
    ["floor", r.floorMs.p50, r.floorMs.p99],
    ["Genway", r.gatewayMs.p50, r.gatewayMs.p99],
    ["floor, paired added", r.floorPairedAddedMs.p50, r.floorPairedAddedMs.p99],
    ["Genway, paired added", r.pairedAddedMs.p50, r.pairedAddedMs.p99],
    ["Genway, paired added, first 50 rounds after the start", r.coldAddedMs.p50, r.coldAddedMs.p99]
  ]))
  ratios["E1 TTFB p50 added over direct ms (<= 0.3)"] = r.differenceMs.p50
  ratios["E1 TTFB p50 added by the floor over direct ms"] = r.floorDifferenceMs.p50
  ratios["E1 TTFB p50 Genway - floor ms"] = +(r.gatewayMs.p50 - r.floorMs.p50).toFixed(3)
  ratios["E1 TTFB p50 added, first 50 rounds after the start, ms"] = r.coldAddedMs.p50
}

/** 10k in-flight polls, in a child process so its RSS is its own. */
const polls = async (quick: boolean, out: Array<string>, ratios: Record<string, number | string>) => {
  const child = spawn(process.execPath, ["--import", tsx, path.join(here, "run.ts"), "workers"], {
    stdio: ["ignore", "pipe", "inherit"],
    env: { ...process.env, BENCH_WORKERS_SECONDS: quick ? "5" : "30" }
  })
  let text = ""
  child.stdout.on("data", (d) => (text += String(d)))
  const limitS = quick ? 60 : 180
  const timer = setTimeout(() => child.kill("SIGKILL"), limitS * 1000)
  await new Promise((r) => child.once("exit", r))
  clearTimeout(timer)
  if (!text.includes("{")) {
    out.push("10,000 tasks in flight, 5 s poll cadence (SQLite, sandbox)")
    out.push(`did not finish within ${limitS} s (seeding, ramp-up and measurement): the process is saturated`)
    ratios["polls CPU cores (< 0.3)"] = `> 1 (no result in ${limitS} s)`
    return
  }
  const r = JSON.parse(text.trim().split("\n").pop()!) as { cpuCores: number; rssPeakMB: number; error?: string }
  if (r.error !== undefined) throw new Error(r.error)
  out.push("10,000 tasks in flight, 5 s poll cadence (SQLite, sandbox)")
  out.push(table(["", "CPU cores", "RSS peak MB"], [["Genway", r.cpuCores, r.rssPeakMB]]))
  ratios["polls CPU cores (< 0.3)"] = r.cpuCores
  ratios["polls RSS MB (< 200)"] = r.rssPeakMB
}

/** Memory while one 200 MiB result is mirrored, to the data directory and to S3 (bench/mirror.ts). */
const mirror = async (_quick: boolean, out: Array<string>, ratios: Record<string, number | string>) => {
  const { run: mirrorRun } = await import("./mirror.js")
  const r = await mirrorRun({ mib: 200 })
  out.push("Mirror one 200 MiB result (generated as a stream by a fake vendor; gateway RSS sampled every 100 ms)")
  out.push(table(
    ["store", "baseline RSS MB", "peak RSS MB", "added MB", "seconds", "stored bytes"],
    r.stores.map((s) => [s.store, s.baselineMB, s.peakMB, s.addedMB, s.seconds, s.storedBytes])
  ))
  for (const s of r.stores) ratios[`mirror 200 MiB to ${s.store}: RSS added MB (bounded, not ~200)`] = s.addedMB
}

export const run = async (options: SideOptions) => {
  const started = new Date()
  const out: Array<string> = []
  const ratios: Record<string, number | string> = {}
  const parts: Record<string, typeof e2> = { e2, create: creates, e1: ttfb, polls, mirror }
  for (const [name, part] of Object.entries(parts)) {
    if (options.only !== undefined && options.only.length > 0 && !options.only.includes(name)) continue
    // About half a minute: in full runs, or when asked for by name.
    if (name === "mirror" && options.quick && !(options.only ?? []).includes("mirror")) continue
    const t = Date.now()
    console.error(`bench: ${name}…`)
    try {
      await part(options.quick, out, ratios)
      console.error(`bench: ${name} done in ${Math.round((Date.now() - t) / 1000)} s`)
    } catch (e) {
      out.push(`${name}: FAILED: ${String(e)}`)
    }
    out.push("")
  }
  stopAll()
  const cpus = os.cpus()
  const header = `Benchmark ${started.toISOString()} — ${cpus.length} × ${cpus[0]?.model ?? "cpu"}, ${Math.round(os.totalmem() / 1e9)} GB, Node ${process.version}, ${options.quick ? "--quick" : "full"} run, ${Math.round((Date.now() - started.getTime()) / 1000)} s. Shared machine: only ratios from this one run count.`
  const ratioTable = table(["ratio (target)", "this run"], Object.entries(ratios).map(([k, v]) => [k, v]))
  return [header, "", ...out, "Ratios", ratioTable].join("\n")
}

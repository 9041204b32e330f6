/**
 * Time to first SSE byte of a streamed chat completion (DESIGN.md §7: within 1 ms of the upstream's).
 * vendor-d's emulator streams on loopback, holding each event `streamDelayMs`; the same generation is
 * requested `runs` times straight from the emulator (`:streamGenerateContent?alt=sse`) and through
 * a gateway whose vendor-d is live against it (`POST /v1/chat/completions`, `stream: true`),
 * alternating, one request at a time, after `warmup` unmeasured pairs. The clock stops at the first
 * body byte; every answer is read to its end. The gateway runs in its own process (`genway serve`, as deployed), the emulator and
 * the client in this one; `inProcess: true` runs all three on one event loop instead, which
 * charges the gateway with the client's and the emulator's work that waits behind it.
 * Numbers are printed, never asserted: this is not a test.
 *
 * `npx tsx bench/ttfb.ts [runs] [streamDelayMs] [--in-process]`, or `pnpm bench ttfb`.
 */
import * as VendorD from "@genway/adapter-vendor-d"
import { Emulator } from "@genway/adapter-vendor-d/testing"
import { Registry } from "@genway/registry"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as fs from "node:fs"
import { Agent, request } from "node:http"
import * as os from "node:os"
import * as path from "node:path"
import { freePort, isMain, printAndExit, spawnGenway } from "./main.js"

const token = "bench-token"
const model = "image-model-2.5-flash-image-preview"

/** Options of a run. */
export interface TtfbOptions {
  readonly runs?: number
  /**
   * Unmeasured pairs first (default and least 50): the gateway's code is optimised by V8 only
   * after some thousands of requests, as E2's contestants are warmed for 20 s. The first 50 pairs
   * after the start are reported apart (`coldAddedMs`).
   */
  readonly warmup?: number
  readonly streamDelayMs?: number
  /** Gateway, emulator and client on one event loop (default: the gateway in its own process). */
  readonly inProcess?: boolean
}

const percentile = (sorted: ReadonlyArray<number>, p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!

const summary = (values: ReadonlyArray<number>) => {
  const sorted = [...values].sort((a, b) => a - b)
  return { p50: +percentile(sorted, 0.5).toFixed(3), p99: +percentile(sorted, 0.99).toFixed(3) }
}

/** One request to time. */
interface Target {
  readonly url: URL
  readonly headers: Record<string, string>
  readonly body: string
}

/** POSTs the target's body; resolves with the milliseconds until the first body byte, once the answer has ended. */
const firstByte = (agent: Agent, target: Target) =>
  new Promise<number>((resolve, reject) => {
    const start = performance.now()
    let first: number | undefined
    const req = request(target.url, {
      agent,
      method: "POST",
      headers: { ...target.headers, "content-type": "application/json", "content-length": Buffer.byteLength(target.body) }
    }, (res) => {
      if (res.statusCode !== 200) reject(new Error(`${target.url.pathname}: HTTP ${res.statusCode}`))
      res.on("data", () => {
        first ??= performance.now() - start
      })
      res.on("end", () => (first === undefined ? reject(new Error("empty answer")) : resolve(first)))
      res.on("error", reject)
    })
    req.on("error", reject)
    req.end(target.body)
  })

/**
 * A gateway on `port` in this process, vendor-d live against `emulator` (the gateway's modules load
 * only for this mode: the default runs it as a child).
 */
const inProcessGateway = (port: number, dataDir: string, emulator: Emulator.Emulator) =>
  Effect.flatMap(Effect.promise(() => Promise.all([import("../src/Gateway.js"), import("../src/platform/Config.js")])), ([Gateway, Config]) => Effect.asVoid(Layer.build(
    Gateway.http.pipe(
      Layer.provideMerge(Gateway.services(Effect.succeed(new Map()), Registry.layer())),
      Layer.provideMerge(Config.layerWith({
        host: "127.0.0.1",
        port,
        dataDir,
        databaseUrl: Option.none(),
        apiKeys: [Redacted.make(token)],
        pollIntervalMs: Option.none(),
        modelsFile: Option.none(),
        requireLive: false
      })),
      Layer.provide(Layer.setConfigProvider(
        ConfigProvider.fromMap(new Map([[VendorD.Config.BASE_URL, emulator.baseUrl], [VendorD.Config.API_KEY, emulator.apiKey]]))
      )),
      Layer.provide(Logger.minimumLogLevel(LogLevel.Warning))
    )
  )))

/** `genway serve` on `port` in a child process, vendor-d live against `emulator`; stopped with the scope. */
const childGateway = (port: number, dataDir: string, emulator: Emulator.Emulator) =>
  Effect.gen(function*() {
    const child = yield* Effect.acquireRelease(
      Effect.promise(() =>
        spawnGenway({ port, dataDir, token, env: { [VendorD.Config.BASE_URL]: emulator.baseUrl, [VendorD.Config.API_KEY]: emulator.apiKey } })
      ),
      (child) => Effect.sync(() => void child.kill())
    )
    // Ready when /healthz answers (a minute at most: the first start compiles TypeScript).
    yield* Effect.promise(async () => {
      for (let i = 0; i < 600; i++) {
        if (child.exitCode !== null) throw new Error(`the gateway exited with ${child.exitCode}`)
        const ok = await fetch(`http://127.0.0.1:${port}/healthz`).then((r) => r.ok, () => false)
        if (ok) return
        await new Promise((resolve) => setTimeout(resolve, 100))
      }
      throw new Error("the gateway did not start")
    })
  })

/** Runs the benchmark and returns its numbers. */
export const run = (options: TtfbOptions = {}) => {
  const runs = options.runs ?? 300
  const streamDelayMs = options.streamDelayMs ?? 5
  return Effect.runPromise(Effect.scoped(Effect.gen(function*() {
    const emulator = yield* Emulator.make({ streamDelayMs })
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "genway-bench-"))
    const port = yield* Effect.promise(freePort)
    yield* (options.inProcess === true ? inProcessGateway : childGateway)(port, dataDir, emulator)

    const text = "a benchmark of paper boats"
    const direct: Target = {
      url: new URL(`${emulator.baseUrl}/models/${model}:streamGenerateContent?alt=sse`),
      headers: { "x-goog-api-key": emulator.apiKey },
      body: JSON.stringify({ contents: [{ role: "user", parts: [{ text }] }], generationConfig: { responseModalities: ["TEXT", "IMAGE"] } })
    }
    const viaGateway: Target = {
      url: new URL(`http://127.0.0.1:${port}/v1/chat/completions`),
      headers: { authorization: `Bearer ${token}` },
      body: JSON.stringify({ model, stream: true, messages: [{ role: "user", content: [{ type: "text", text }] }] })
    }

    return yield* Effect.promise(async () => {
      const agent = new Agent({ keepAlive: true, maxSockets: 4 })
      const cold: Array<number> = []
      for (let i = 0; i < Math.max(50, options.warmup ?? 50); i++) {
        const d = await firstByte(agent, direct)
        const g = await firstByte(agent, viaGateway)
        if (i < 50) cold.push(g - d)
      }
      const upstream: Array<number> = []
      const through: Array<number> = []
      const added: Array<number> = []
      for (let i = 0; i < runs; i++) {
        // Alternate the order so neither side always runs right after the other.
        let d: number
        let g: number
        if (i % 2 === 0) {
          d = await firstByte(agent, direct)
          g = await firstByte(agent, viaGateway)
        } else {
          g = await firstByte(agent, viaGateway)
          d = await firstByte(agent, direct)
        }
        upstream.push(d)
        through.push(g)
        added.push(g - d)
      }
      agent.destroy()
      const directMs = summary(upstream)
      const gatewayMs = summary(through)
      return {
        bench: `chat stream time to first SSE byte (vendor-d emulator on loopback; gateway ${options.inProcess === true ? "in the client's process" : "in its own process"})`,
        runs,
        warmup: Math.max(50, options.warmup ?? 50),
        streamDelayMs,
        directMs,
        gatewayMs,
        differenceMs: { p50: +(gatewayMs.p50 - directMs.p50).toFixed(3), p99: +(gatewayMs.p99 - directMs.p99).toFixed(3) },
        pairedAddedMs: summary(added),
        coldAddedMs: summary(cold),
        target: "gateway within 1 ms of the upstream"
      }
    })
  })))
}

if (isMain(import.meta.url)) {
  const args = process.argv.slice(2)
  const [runs, delay] = args.filter((a) => !a.startsWith("--")).map(Number)
  printAndExit(run({
    ...(runs !== undefined && Number.isFinite(runs) ? { runs } : {}),
    ...(delay !== undefined && Number.isFinite(delay) ? { streamDelayMs: delay } : {}),
    inProcess: args.includes("--in-process")
  }))
}

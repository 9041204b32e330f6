/**
 * Time to first SSE byte of a streamed chat completion (DESIGN.md §7: within 0.3 ms of the
 * upstream's at p50). vendor-d's emulator streams on loopback, in a process of its own, holding each
 * event `streamDelayMs`; the same generation is requested `runs` times straight from the emulator
 * (`:streamGenerateContent?alt=sse`), through the bench's floor proxy (bench/side/floor.mjs: the
 * least a gateway must do for a stream) and through a gateway whose vendor-d is live against it
 * (`POST /v1/chat/completions`, `stream: true`), one request at a time, the three in an order that
 * turns each round, after `warmup` unmeasured rounds. The clock stops at the first body byte; every
 * answer is read to its end. The gateway runs in its own process (`genway serve`, as deployed);
 * `inProcess: true` runs it on the client's event loop instead, which charges it with the client's
 * work that waits behind it; `emulatorInProcess: true` puts the emulator there too (the first
 * method of round 2: see `TtfbOptions`). Numbers are printed, never asserted: this is not a test.
 *
 * `npx tsx bench/ttfb.ts [runs] [streamDelayMs] [--in-process] [--emulator-in-process]`, or `pnpm bench ttfb`.
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
import type * as Scope from "effect/Scope"
import type { ChildProcess } from "node:child_process"
import * as fs from "node:fs"
import { createRequire } from "node:module"
import { Agent, request } from "node:http"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { freePort, isMain, printAndExit, spawnGenway, startScript, waitFor } from "./main.js"

const here = path.dirname(fileURLToPath(import.meta.url))
const require = createRequire(import.meta.url)
const token = "bench-token"
const model = "image-model-2.5-flash-image-preview"

/** Options of a run. */
export interface TtfbOptions {
  readonly runs?: number
  /**
   * Unmeasured rounds first (default and least 50): the gateway's code is optimised by V8 only
   * after some thousands of requests, as E2's contestants are warmed for 20 s. The first 50 rounds
   * after the start are reported apart (`coldAddedMs`).
   */
  readonly warmup?: number
  readonly streamDelayMs?: number
  /** The gateway on the client's event loop (default: the gateway in its own process). */
  readonly inProcess?: boolean
  /**
   * The emulator on the client's event loop (default: its own process). The direct request then
   * never wakes another process, where every request through a gateway wakes two.
   */
  readonly emulatorInProcess?: boolean
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

/** Where the vendor's API answers, and its key. */
interface Upstream {
  readonly baseUrl: string
  readonly apiKey: string
}

/**
 * A gateway on `port` in this process, vendor-d live against `upstream` (the gateway's modules load
 * only for this mode: the default runs it as a child).
 */
const inProcessGateway = (port: number, dataDir: string, upstream: Upstream) =>
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
        ConfigProvider.fromMap(new Map([[VendorD.Config.BASE_URL, upstream.baseUrl], [VendorD.Config.API_KEY, upstream.apiKey]]))
      )),
      Layer.provide(Logger.minimumLogLevel(LogLevel.Warning))
    )
  )))

/** A child process, killed with the scope. */
const owned = <A extends { readonly child: ChildProcess }>(start: () => Promise<A>) =>
  Effect.acquireRelease(Effect.promise(start), ({ child }) => Effect.sync(() => void child.kill()))

/** `genway serve` on `port` in a child process, vendor-d live against `upstream`; stopped with the scope. */
const childGateway = (port: number, dataDir: string, upstream: Upstream) =>
  Effect.gen(function*() {
    const { child } = yield* owned(async () => ({
      child: await spawnGenway({ port, dataDir, token, env: { [VendorD.Config.BASE_URL]: upstream.baseUrl, [VendorD.Config.API_KEY]: upstream.apiKey } })
    }))
    yield* Effect.promise(() => waitFor(`http://127.0.0.1:${port}/healthz`, child, "the gateway"))
  })

/**
 * vendor-d's emulator: in its own process (the default, as an upstream always is), or in this one
 * (`emulatorInProcess`: round 2's first method, where the direct request never leaves this
 * process's event loop).
 */
const emulatorOf = (streamDelayMs: number, inProcess: boolean): Effect.Effect<Upstream, never, Scope.Scope> =>
  inProcess
    ? Emulator.make({ streamDelayMs })
    : owned(() =>
      startScript<{ readonly port: number } & Upstream>(path.join(here, "side", "emulator.ts"), { EMULATOR_STREAM_DELAY_MS: String(streamDelayMs) }, {
        nodeArgs: ["--import", require.resolve("tsx/esm")]
      })
    )

/** Runs the benchmark and returns its numbers. */
export const run = (options: TtfbOptions = {}) => {
  const runs = options.runs ?? 300
  const streamDelayMs = options.streamDelayMs ?? 5
  return Effect.runPromise(Effect.scoped(Effect.gen(function*() {
    const upstream = yield* emulatorOf(streamDelayMs, options.emulatorInProcess === true)
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "genway-bench-"))
    const port = yield* Effect.promise(freePort)

    yield* (options.inProcess === true ? inProcessGateway : childGateway)(port, dataDir, upstream)

    const text = "a benchmark of paper boats"
    // vendor-d's streaming call: the floor makes the same one, for the model it is asked for.
    const streamUrl = (m: string) => `${upstream.baseUrl}/models/${m}:streamGenerateContent?alt=sse`
    const credentials = { "x-goog-api-key": upstream.apiKey }
    const floor = yield* owned(() =>
      startScript(path.join(here, "side", "floor.mjs"), {
        FLOOR_TOKEN: token,
        FLOOR_SSE_URL: streamUrl("{model}"),
        FLOOR_SSE_HEADERS: JSON.stringify(credentials)
      })
    )
    const direct: Target = {
      url: new URL(streamUrl(model)),
      headers: credentials,
      body: JSON.stringify({ contents: [{ role: "user", parts: [{ text }] }], generationConfig: { responseModalities: ["TEXT", "IMAGE"] } })
    }
    const chat = JSON.stringify({ model, stream: true, messages: [{ role: "user", content: [{ type: "text", text }] }] })
    const viaFloor: Target = { url: new URL(`http://127.0.0.1:${floor.port}/v1/chat/completions`), headers: { authorization: `Bearer ${token}` }, body: chat }
    const viaGateway: Target = { url: new URL(`http://127.0.0.1:${port}/v1/chat/completions`), headers: { authorization: `Bearer ${token}` }, body: chat }

    return yield* Effect.promise(async () => {
      const agent = new Agent({ keepAlive: true, maxSockets: 4 })
      /** One round: each target once, `first` going first (the order turns from round to round). */
      const round = async (first: number) => {
        const targets = [direct, viaFloor, viaGateway]
        const ms = [0, 0, 0]
        for (let k = 0; k < 3; k++) {
          const t = (first + k) % 3
          ms[t] = await firstByte(agent, targets[t]!)
        }
        return ms as [number, number, number]
      }
      const cold: Array<number> = []
      for (let i = 0; i < Math.max(50, options.warmup ?? 50); i++) {
        const [d, , g] = await round(i % 3)
        if (i < 50) cold.push(g - d)
      }
      const upstreamMs: Array<number> = []
      const floorMs: Array<number> = []
      const through: Array<number> = []
      const added: Array<number> = []
      const floorAdded: Array<number> = []
      for (let i = 0; i < runs; i++) {
        // Turn the order so that no target always runs right after another.
        const [d, f, g] = await round(i % 3)
        upstreamMs.push(d)
        floorMs.push(f)
        through.push(g)
        added.push(g - d)
        floorAdded.push(f - d)
      }
      agent.destroy()
      const directMs = summary(upstreamMs)
      const gatewayMs = summary(through)
      const floorSummary = summary(floorMs)
      return {
        bench: `chat stream time to first SSE byte (vendor-d emulator on loopback, ${
          options.emulatorInProcess === true ? "in the client's process" : "in its own process"
        }; gateway ${options.inProcess === true ? "in the client's process" : "in its own process"})`,
        runs,
        warmup: Math.max(50, options.warmup ?? 50),
        streamDelayMs,
        directMs,
        floorMs: floorSummary,
        gatewayMs,
        differenceMs: { p50: +(gatewayMs.p50 - directMs.p50).toFixed(3), p99: +(gatewayMs.p99 - directMs.p99).toFixed(3) },
        floorDifferenceMs: { p50: +(floorSummary.p50 - directMs.p50).toFixed(3), p99: +(floorSummary.p99 - directMs.p99).toFixed(3) },
        pairedAddedMs: summary(added),
        floorPairedAddedMs: summary(floorAdded),
        coldAddedMs: summary(cold),
        target: "gateway within 0.3 ms of the upstream at p50 (DESIGN.md §7)"
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
    inProcess: args.includes("--in-process"),
    emulatorInProcess: args.includes("--emulator-in-process")
  }))
}

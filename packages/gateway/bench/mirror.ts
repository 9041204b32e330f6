/**
 * Memory while a large result is mirrored (issue 13: "mirroring a 200 MB result keeps RSS bounded",
 * a figure, not a test). vendor-b's emulator completes one E4 task whose result URL points at a
 * server here that streams 200 MiB of video bytes, generated as it goes (never held); a
 * `genway serve` in its own process mirrors it into its data directory, then (a second gateway)
 * into an S3 bucket (`s3rver`, in this process). The gateway's RSS (`VmRSS` of /proc/<pid>/status)
 * is sampled every 100 ms: the baseline is the idle process after start-up and one 1 MiB task
 * (code loaded on first use), the peak is the highest sample from the large task's create to its
 * completion. The stored copy's size is reported.
 * Numbers are printed, never asserted: this is not a test. Linux only (/proc).
 *
 * `npx tsx bench/mirror.ts [MiB]` (from packages/gateway), or `pnpm bench mirror`.
 */
import { HeadObjectCommand, S3Client } from "@aws-sdk/client-s3"
import { Emulator } from "@genway/adapter-vendor-b/testing"
import { Registry } from "@genway/registry"
import * as Effect from "effect/Effect"
import type { ChildProcess } from "node:child_process"
import * as fs from "node:fs"
import * as http from "node:http"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import S3rver from "s3rver"
import { freePort, isMain, printAndExit, rssKb, spawnGenway } from "./main.js"

const token = "bench-token"
const bucket = "bench-media"
const e4 = Registry.entries.find((e) => e.endpoints.includes("E4"))!

/** One store's figures. */
export interface MirrorFigures {
  readonly store: "local" | "s3"
  readonly baselineMB: number
  readonly peakMB: number
  /** Peak minus baseline: what mirroring the result cost in memory. */
  readonly addedMB: number
  /** From the create to the task's completion (submit, one poll, the copy). */
  readonly seconds: number
  readonly storedBytes: number
}

const mb = (kb: number) => Math.round(kb / 1024)

const tempDir = () => fs.mkdtempSync(path.join(os.tmpdir(), "genway-bench-mirror-"))


/**
 * Serves a video of `size.bytes` (read per request) at any path, written 64 KiB at a time as the
 * reader takes them: an MP4 `ftyp` box, then a repeating pattern. Nothing of the size is ever held.
 */
const endlessVideo = (size: { bytes: number }) =>
  Effect.acquireRelease(
    Effect.async<{ server: http.Server; origin: string }>((resume) => {
      const chunk = Buffer.alloc(64 * 1024)
      for (let i = 0; i < chunk.length; i++) chunk[i] = (i * 31 + 7) & 0xff
      const first = Buffer.from(chunk)
      first.write("\x00\x00\x00\x18ftypisom\x00\x00\x02\x00isomiso2", 0, "latin1")
      const server = http.createServer((req, res) => {
        const bytes = size.bytes
        res.writeHead(200, { "content-type": "video/mp4", "content-length": bytes })
        if (req.method === "HEAD") return void res.end()
        let sent = 0
        const pump = () => {
          while (sent < bytes) {
            const n = Math.min(chunk.length, bytes - sent)
            const piece = sent === 0 ? first.subarray(0, n) : chunk.subarray(0, n)
            sent += n
            if (!res.write(piece)) return void res.once("drain", pump)
          }
          res.end()
        }
        res.on("error", () => undefined)
        pump()
      })
      server.listen(0, "127.0.0.1", () => {
        const { port } = server.address() as net.AddressInfo
        resume(Effect.succeed({ server, origin: `http://127.0.0.1:${port}` }))
      })
    }),
    ({ server }) =>
      Effect.async<void>((resume) => {
        server.closeAllConnections()
        server.close(() => resume(Effect.void))
      })
  )

/** `genway serve` in its own process with `env`; killed when the scope closes. */
const gateway = (env: Record<string, string>) =>
  Effect.gen(function*() {
    const port = yield* Effect.promise(freePort)
    const dataDir = tempDir()
    const child = yield* Effect.acquireRelease(
      Effect.promise(() =>
        spawnGenway({ port, dataDir, token, env: { GATEWAY_DATABASE_URL: "", ...env }, stdio: ["ignore", "ignore", "inherit"] })
      ),
      (child: ChildProcess) =>
        Effect.async<void>((resume) => {
          if (child.exitCode !== null || child.signalCode !== null) return resume(Effect.void)
          child.once("exit", () => resume(Effect.void))
          child.kill("SIGKILL")
        }).pipe(Effect.zipRight(Effect.sync(() => fs.rmSync(dataDir, { recursive: true, force: true }))))
    )
    const base = `http://127.0.0.1:${port}`
    yield* Effect.promise(async () => {
      for (let i = 0; i < 900; i++) {
        if (child.exitCode !== null) throw new Error(`the gateway exited with ${child.exitCode}`)
        if (await fetch(`${base}/healthz`).then((r) => r.ok, () => false)) return
        await new Promise((r) => setTimeout(r, 100))
      }
      throw new Error("the gateway did not start")
    })
    return { pid: child.pid!, base, dataDir }
  })

/** Creates an E4 task on the gateway at `base` and waits for it to complete; returns its id. */
const complete = async (base: string) => {
  const headers = { authorization: `Bearer ${token}`, "content-type": "application/json" }
  const created = await fetch(`${base}${e4.path}`, {
    method: "POST",
    headers,
    body: JSON.stringify({ prompt: "a very long take of a paper boat", duration: 5 })
  }).then((r) => r.json() as Promise<any>)
  const id = created.task_info.id as string
  for (;;) {
    const task = (await fetch(`${base}${e4.path}/${id}`, { headers }).then((r) => r.json())) as any
    const status = task.task_info.status as string
    if (status === "completed") return id
    if (status === "failed") throw new Error(`the task failed: ${JSON.stringify(task.task_info.error)}`)
    await new Promise((r) => setTimeout(r, 100))
  }
}

/**
 * Mirrors one result of `bytes` through a fresh gateway with `env` and measures it. A 1 MiB task
 * runs first, so code loaded and pools opened on first use count in the baseline, not the copy.
 */
const measure = (
  store: "local" | "s3",
  env: Record<string, string>,
  size: { bytes: number },
  bytes: number,
  storedSize: (taskId: string, dataDir: string) => Promise<number>
) =>
  Effect.scoped(Effect.gen(function*() {
    const g = yield* gateway(env)
    return yield* Effect.promise(async (): Promise<MirrorFigures> => {
      size.bytes = 1024 * 1024
      await complete(g.base)
      size.bytes = bytes
      // Idle after the warm-up: two seconds of samples, the median is the baseline.
      const idle: Array<number> = []
      for (let i = 0; i < 20; i++) {
        idle.push(rssKb(g.pid) ?? 0)
        await new Promise((r) => setTimeout(r, 100))
      }
      const baseline = idle.sort((a, b) => a - b)[10]!
      let peak = baseline
      const sampler = setInterval(() => (peak = Math.max(peak, rssKb(g.pid) ?? 0)), 100)
      const started = performance.now()
      const id = await complete(g.base)
      const seconds = (performance.now() - started) / 1000
      clearInterval(sampler)
      peak = Math.max(peak, rssKb(g.pid) ?? 0)
      return {
        store,
        baselineMB: mb(baseline),
        peakMB: mb(peak),
        addedMB: mb(peak - baseline),
        seconds: +seconds.toFixed(1),
        storedBytes: await storedSize(id, g.dataDir)
      }
    })
  }))

/** Options of a run. */
export interface MirrorOptions {
  /** The result's size in MiB (default 200). */
  readonly mib?: number
}

/** Runs the benchmark: the local directory, then S3. */
export const run = (options: MirrorOptions = {}) => {
  const bytes = (options.mib ?? 200) * 1024 * 1024
  return Effect.runPromise(Effect.scoped(Effect.gen(function*() {
    const size = { bytes }
    const video = yield* endlessVideo(size)
    const vendor = yield* Emulator.make({ completeAfterPolls: 1, mediaOrigin: video.origin })
    const s3Dir = tempDir()
    const s3 = yield* Effect.acquireRelease(
      Effect.promise(async () => {
        const server = new S3rver({ address: "127.0.0.1", port: 0, silent: true, directory: s3Dir, configureBuckets: [{ name: bucket, configs: [] }] })
        const { port } = await server.run()
        return { server, endpoint: `http://127.0.0.1:${port}` }
      }),
      ({ server }) => Effect.promise(() => server.close()).pipe(Effect.zipRight(Effect.sync(() => fs.rmSync(s3Dir, { recursive: true, force: true }))))
    )
    const common = { VENDOR_B_BASE_URL: vendor.baseUrl, VENDOR_B_API_KEY: vendor.apiKey, GATEWAY_POLL_INTERVAL_MS: "200" }
    const local = yield* measure("local", common, size, bytes, async (id, dataDir) => {
      const dir = path.join(dataDir, "media", id)
      return fs.readdirSync(dir).reduce((n, f) => n + fs.statSync(path.join(dir, f)).size, 0)
    })
    const client = new S3Client({
      endpoint: s3.endpoint,
      forcePathStyle: true,
      region: "us-east-1",
      credentials: { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" }
    })
    const inBucket = yield* measure("s3", {
      ...common,
      GATEWAY_MEDIA_STORE: `s3://${bucket}/bench`,
      GATEWAY_S3_ENDPOINT: s3.endpoint,
      GATEWAY_S3_FORCE_PATH_STYLE: "1",
      AWS_REGION: "us-east-1",
      AWS_ACCESS_KEY_ID: "S3RVER",
      AWS_SECRET_ACCESS_KEY: "S3RVER"
    }, size, bytes, async (id) => (await client.send(new HeadObjectCommand({ Bucket: bucket, Key: `bench/media/${id}/0.mp4` }))).ContentLength ?? 0)
    client.destroy()
    return {
      bench: `mirror one ${bytes / 1024 / 1024} MiB result (vendor-b emulator, generated stream; genway serve in its own process)`,
      resultBytes: bytes,
      stores: [local, inBucket]
    }
  })))
}

if (isMain(import.meta.url)) {
  const mib = Number(process.argv[2] ?? 200)
  printAndExit(run({ mib: Number.isFinite(mib) && mib > 0 ? mib : 200 }))
}

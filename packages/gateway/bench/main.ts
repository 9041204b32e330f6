/** Running a bench script on its own: `npx tsx bench/<script>.ts …` prints its result as one JSON line. */
import { type ChildProcess, spawn, type StdioOptions } from "node:child_process"
import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as net from "node:net"
import * as path from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"

const here = path.dirname(fileURLToPath(import.meta.url))

/** Whether the module at `url` is the script node was started with. */
export const isMain = (url: string): boolean => process.argv[1] !== undefined && url === pathToFileURL(process.argv[1]).href

/** Prints the result as JSON and exits 0, or prints the error and exits 1. */
export const printAndExit = (result: Promise<unknown>): void => {
  result.then(
    (value) => {
      console.log(JSON.stringify(value))
      process.exit(0)
    },
    (error) => {
      console.error(error)
      process.exit(1)
    }
  )
}

/**
 * The node arguments that run `genway <args>` of the gateway package in `gatewayDir` as one process,
 * as deployed: the compiled gateway (built first when stale, see bin/build.mjs). A checkout without
 * the compiled form (an earlier build given as `BENCH_BASELINE_DIR`), or `GENWAY_FROM_SOURCE=1`,
 * runs the TypeScript sources through tsx, still in one process, so CPU and memory read from its
 * pid are the gateway's own. `BENCH_GENWAY_NODE_ARGS` comes first (a `--cpu-prof`, a V8 flag).
 */
const genwayArgs = async (gatewayDir: string, args: ReadonlyArray<string>): Promise<Array<string>> => {
  const node = (process.env.BENCH_GENWAY_NODE_ARGS ?? "").split(" ").filter(Boolean)
  const build = path.join(gatewayDir, "bin", "build.mjs")
  if (process.env.GENWAY_FROM_SOURCE !== "1" && fs.existsSync(build)) {
    const { ensureBuilt } = (await import(pathToFileURL(build).href)) as { ensureBuilt: () => Promise<string> }
    return [...node, await ensureBuilt(), ...args]
  }
  const tsx = createRequire(path.join(gatewayDir, "package.json")).resolve("tsx/esm")
  return [...node, "--import", tsx, path.join(gatewayDir, "src", "main.ts"), ...args]
}

/** What a bench's `genway serve` listens on and runs with. */
export interface GenwayOptions {
  readonly port: number
  readonly dataDir: string
  readonly token: string
  /** More variables (vendors, delays, workers), over this process's. */
  readonly env?: Record<string, string>
  readonly stdio?: StdioOptions
  readonly cwd?: string
  /** The gateway package to run (default: this one). */
  readonly gatewayDir?: string
}

/** Starts `genway serve` on 127.0.0.1 as its own process (see `genwayArgs`). */
export const spawnGenway = async (options: GenwayOptions): Promise<ChildProcess> =>
  spawn(process.execPath, await genwayArgs(options.gatewayDir ?? path.join(here, ".."), ["serve"]), {
    stdio: options.stdio ?? "ignore",
    ...(options.cwd !== undefined ? { cwd: options.cwd } : {}),
    env: {
      ...process.env,
      HOST: "127.0.0.1",
      PORT: String(options.port),
      GATEWAY_DATA_DIR: options.dataDir,
      GATEWAY_API_KEYS: options.token,
      ...options.env
    }
  })

/**
 * Starts a bench script as its own process (`nodeArgs` first: `--import tsx/esm` for a TypeScript
 * one); it prints a JSON object with its `port` on its first line, with which this resolves.
 * `onChild` sees the process at once, so a caller can stop it even if it never answers.
 */
export const startScript = <A extends { readonly port: number } = { readonly port: number }>(
  script: string,
  env: Record<string, string>,
  options: { readonly args?: ReadonlyArray<string>; readonly nodeArgs?: ReadonlyArray<string>; readonly onChild?: (child: ChildProcess) => void } = {}
) =>
  new Promise<A & { readonly child: ChildProcess }>((resolve, reject) => {
    const child = spawn(process.execPath, [...(options.nodeArgs ?? []), script, ...(options.args ?? [])], {
      env: { ...process.env, ...env },
      stdio: ["ignore", "pipe", "inherit"]
    })
    options.onChild?.(child)
    let out = ""
    child.stdout!.on("data", (d) => {
      out += String(d)
      if (!out.includes("\n")) return
      try {
        resolve({ ...(JSON.parse(out.split("\n")[0]!) as A), child })
      } catch (e) {
        reject(e)
      }
    })
    child.once("exit", (code) => reject(new Error(`${script} exited with ${code}`)))
  })

/** Waits until `url` answers at all, any status (two minutes at most: a first start may compile the gateway). */
export const waitFor = async (url: string, child: ChildProcess, what: string): Promise<void> => {
  for (let i = 0; i < 1200; i++) {
    if (child.exitCode !== null) throw new Error(`${what} exited with ${child.exitCode}`)
    const ok = await fetch(url).then(() => true, () => false)
    if (ok) return
    await new Promise((r) => setTimeout(r, 100))
  }
  throw new Error(`${what} did not start`)
}

/** A TCP port free on 127.0.0.1 right now. */
export const freePort = () =>
  new Promise<number>((resolve) => {
    const server = net.createServer().listen(0, "127.0.0.1", () => {
      const { port } = server.address() as net.AddressInfo
      server.close(() => resolve(port))
    })
  })

/** Clock ticks per second of /proc/<pid>/stat (USER_HZ, 100 on Linux). */
const ticksPerSecond = 100

/**
 * CPU time (user + system) a process has used, in ms, from /proc (Linux); undefined elsewhere.
 * Steadier than throughput on a shared machine: the scheduler takes cores away from every
 * contestant alike, but what a request costs stays what it is.
 */
export const cpuMs = (pid: number | undefined): number | undefined => {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8")
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
    // utime and stime are fields 14 and 15 of stat(5), counted after the ")" from field 3.
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / ticksPerSecond
  } catch {
    return undefined
  }
}

/** The process's resident set, in KiB. */
export const rssKb = (pid: number): number | undefined => {
  try {
    const m = /^VmRSS:\s+(\d+) kB$/m.exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"))
    return m === null ? undefined : Number(m[1])
  } catch {
    return undefined
  }
}

/**
 * Real `genway serve` processes for the crash and CLI tests: waiting for a condition (bounded) and
 * for a process to exit.
 */
import { type ChildProcess, spawn } from "node:child_process"
import * as net from "node:net"
import { fileURLToPath } from "node:url"

/** Polls `f` every 100 ms until it yields a value (errors count as "not yet"); fails after `timeoutMs`. */
export const until = async <A>(what: string, f: () => Promise<A | undefined>, timeoutMs = 90_000): Promise<A> => {
  const end = Date.now() + timeoutMs
  while (Date.now() < end) {
    const a = await f().catch(() => undefined)
    if (a !== undefined) return a
    await new Promise((r) => setTimeout(r, 100))
  }
  throw new Error(`timed out waiting for ${what}`)
}

/** A check for `until`: whether the gateway at `base` answers `/healthz`. */
export const healthy = (base: string) => () => fetch(`${base}/healthz`).then((r) => (r.ok ? true : undefined))

/** Resolves when the process has exited (at once if it already has). */
export const exited = (child: ChildProcess) =>
  new Promise<void>((resolve) => (child.exitCode !== null || child.signalCode !== null ? resolve() : child.once("exit", () => resolve())))

/** The `genway` command as installed: the compiled gateway, in the process spawned. */
export const bin = fileURLToPath(new URL("../bin/genway.mjs", import.meta.url))

const tails = new WeakMap<ChildProcess, { text: string }>()

/** The last few kilobytes a `serve` process wrote on stderr, for diagnostics. */
export const stderrTail = (child: ChildProcess): string => tails.get(child)?.text ?? ""

/**
 * A real `genway serve` on the embedded database of `dataDir`, listening on 127.0.0.1:`port`,
 * with `env` on top (tokens, delays, feature switches). Its stderr is read as it comes (a full
 * pipe would block the process), keeping the tail for `stderrTail`.
 */
export const serve = (dataDir: string, port: number, env: Record<string, string>): ChildProcess => {
  const child = spawn(process.execPath, [bin, "serve"], {
    env: { ...process.env, GATEWAY_DATABASE_URL: "", GATEWAY_DATA_DIR: dataDir, PORT: String(port), HOST: "127.0.0.1", ...env },
    stdio: ["ignore", "ignore", "pipe"]
  })
  const tail = { text: "" }
  tails.set(child, tail)
  child.stderr?.on("data", (chunk: Buffer) => {
    tail.text = (tail.text + chunk.toString("utf8")).slice(-8192)
  })
  return child
}

/** A TCP port free on 127.0.0.1 right now. */
export const freePort = () =>
  new Promise<number>((resolve) => {
    const server = net.createServer().listen(0, "127.0.0.1", () => {
      const { port } = server.address() as net.AddressInfo
      server.close(() => resolve(port))
    })
  })

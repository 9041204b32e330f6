/**
 * One gateway per SQLite data directory: a lock file (`genway.lock`, holding the owner's pid)
 * taken at startup and removed at shutdown. A second process refuses to start while the owner
 * lives; a lock left by a process that died (a crash, `kill -9`) is taken over. With PostgreSQL
 * any number of replicas share the database, and no lock is taken.
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { Settings } from "./Config.js"

/** The data directory is in use by another live process. */
export class DataDirLocked extends Error {
  readonly _tag = "DataDirLocked"
  constructor(message: string) {
    super(message)
    this.name = "DataDirLocked"
    this.stack = `DataDirLocked: ${message}`
  }
}

const alive = (pid: number) => {
  if (pid === process.pid) return false
  try {
    process.kill(pid, 0)
    return true
  } catch (e) {
    // EPERM: the process exists but belongs to someone else.
    return (e as NodeJS.ErrnoException).code === "EPERM"
  }
}

/** Takes the lock of `dataDir`, or fails naming the process that holds it. */
export const acquire = (dataDir: string): string => {
  fs.mkdirSync(dataDir, { recursive: true })
  const file = path.join(dataDir, "genway.lock")
  const content = JSON.stringify({ pid: process.pid, host: os.hostname(), started_at: new Date().toISOString() })
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      fs.writeFileSync(file, content, { flag: "wx" })
      return file
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e
    }
    let holder: { pid?: unknown; host?: unknown } = {}
    try {
      holder = JSON.parse(fs.readFileSync(file, "utf8"))
    } catch {
      // unreadable or half-written: treated as stale below
    }
    const pid = typeof holder.pid === "number" ? holder.pid : NaN
    const sameHost = holder.host === undefined || holder.host === os.hostname()
    if (Number.isInteger(pid) && (!sameHost || alive(pid))) {
      throw new DataDirLocked(
        `another gateway (pid ${pid}${sameHost ? "" : ` on ${String(holder.host)}`}) is using the data directory ${dataDir}; ` +
          `stop it first, or give this one its own GATEWAY_DATA_DIR (replicas share state through GATEWAY_DATABASE_URL)`
      )
    }
    fs.rmSync(file, { force: true })
  }
  throw new DataDirLocked(`could not take the lock ${file}; remove it if no gateway is running`)
}

/** Removes the lock if it is still ours. */
export const release = (file: string) => {
  try {
    const holder = JSON.parse(fs.readFileSync(file, "utf8")) as { pid?: unknown }
    if (holder.pid === process.pid) fs.rmSync(file, { force: true })
  } catch {
    // already gone
  }
}

/** The lock for the lifetime of the layer (none with PostgreSQL). */
export const layer = Layer.scopedDiscard(Effect.gen(function*() {
  const settings = yield* Settings
  if (Option.isSome(settings.databaseUrl)) return
  yield* Effect.acquireRelease(
    Effect.try({ try: () => acquire(settings.dataDir), catch: (e) => e as Error }),
    (file) => Effect.sync(() => release(file))
  )
}))

/**
 * WAL checkpoints of the embedded SQLite database, off the event loop.
 *
 * In WAL mode a commit appends pages to the `-wal` file; a checkpoint copies them back into the
 * database file and syncs it. SQLite runs one by itself in the committing connection once the log
 * passes 1,000 pages, inside that commit: on the gateway's one connection, on the event loop.
 * Measured under kept E2 load: commits took 0.19 ms at p50 and 10–15 ms at p99 — the 5 % that
 * checkpointed held 56 % of all commit time, and every request in flight waited for them. A
 * checkpoint costs about 4 ms of syncs whatever its size plus about 19 µs per page.
 *
 * Here the gateway's connection never checkpoints by itself (`wal_autocheckpoint = 0`); a worker
 * thread with its own connection to the same file runs a `PASSIVE` checkpoint every `intervalMs`
 * (copying and syncing without taking any lock a writer needs). A passive checkpoint cannot let the
 * log start over while writes keep coming (the log restarts only at a write that finds every page
 * copied), so once the log is longer than `restartPages` and the worker has copied all but a few
 * of its pages, the gateway's connection checkpoints the rest itself, between two transactions:
 * one short stall (a few pages and one sync) every `restartPages` pages instead of a long one every
 * 1,000. If the worker fell far behind, the log is still bounded: past `4 × restartPages` the
 * connection checkpoints whatever is left. If the worker cannot start or dies, the connection
 * checkpoints by itself again, as SQLite does by default, and the reason is logged.
 *
 * Durability is unchanged: a commit is durable once in the log (synchronous = NORMAL), whoever
 * copies it later. `:memory:` databases have no log and no worker.
 */
import { createRequire } from "node:module"
import { Worker } from "node:worker_threads"

/** What one checkpoint reports (SQLite's `wal_checkpoint` row). */
export interface Result {
  readonly busy: number
  /** Pages in the log. */
  readonly log: number
  /** Pages of the log copied into the database file. */
  readonly checkpointed: number
}

export interface Options {
  /** How often the worker checkpoints (ms). */
  readonly intervalMs: number
  /** Log length (pages) after which the connection lets the log start over. */
  readonly restartPages: number
  /** The most pages the connection copies itself when the log is past `restartPages` (its stall). */
  readonly tailPages: number
}

export const defaults: Options = { intervalMs: 100, restartPages: 4_000, tailPages: 256 }

/** The connection's side: what the checkpointer needs of it. */
export interface Connection {
  pragma(source: string, options?: { simple?: boolean }): unknown
  readonly inTransaction: boolean
}

/** The running checkpointer. */
export interface Checkpointer {
  /** A checkpoint by the worker now (tests); its result. */
  readonly now: () => Promise<Result>
  /** Called by the connection between transactions: lets the log start over when it is due. */
  readonly between: () => void
  /** The worker's latest result; `undefined` before its first. */
  readonly latest: () => Result | undefined
  /** Whether the worker runs (false after `stop` or once it failed: the connection checkpoints itself). */
  readonly running: () => boolean
  /** Stops the worker and closes its connection; the gateway's connection checkpoints by itself again. */
  readonly stop: () => Promise<void>
}

// The worker: its own connection, a `PASSIVE` checkpoint every `intervalMs`, and one on request.
// CommonJS, evaluated (the gateway runs as one compiled module: no second file to find).
const workerSource = `
const { parentPort, workerData } = require("node:worker_threads")
const Database = require(workerData.module)
const db = new Database(workerData.filename, { fileMustExist: true })
const checkpoint = () => {
  try {
    const [row] = db.pragma("wal_checkpoint(PASSIVE)")
    return { busy: row.busy, log: row.log, checkpointed: row.checkpointed }
  } catch {
    // Another checkpoint holds the log (the gateway's connection finishing one): next time.
    return { busy: 1, log: -1, checkpointed: -1 }
  }
}
const tick = () => parentPort.postMessage({ kind: "tick", result: checkpoint() })
const timer = setInterval(tick, workerData.intervalMs)
parentPort.on("message", (message) => {
  if (message.kind === "now") parentPort.postMessage({ kind: "now", id: message.id, result: checkpoint() })
  if (message.kind === "stop") {
    clearInterval(timer)
    db.close()
    parentPort.close()
  }
})
`

const betterSqlite3 = (): string => createRequire(import.meta.url).resolve("better-sqlite3")

/**
 * Starts the worker for the database `filename`, whose connection (in WAL mode) is `db`.
 * `warn` reports a worker that could not start or died (the connection then checkpoints itself).
 */
export const start = (filename: string, db: Connection, warn: (message: string) => void, options: Options = defaults): Checkpointer => {
  let latest: Result | undefined
  let running = true
  let nextId = 0
  const waiting = new Map<number, (result: Result) => void>()
  db.pragma("wal_autocheckpoint = 0")

  const fallBack = (why: string) => {
    if (!running) return
    running = false
    try {
      db.pragma("wal_autocheckpoint = 1000")
    } catch {
      // The connection is closed already: nothing is left to checkpoint by it.
    }
    warn(`SQLite checkpoints run on the event loop again: ${why}`)
    for (const resume of waiting.values()) resume({ busy: 1, log: -1, checkpointed: -1 })
    waiting.clear()
  }

  const worker = new Worker(workerSource, {
    eval: true,
    workerData: { module: betterSqlite3(), filename, intervalMs: options.intervalMs }
  })
  // The worker keeps the process alive only while someone waits for it (`now`, `stop`): an
  // unreferenced worker's reply never comes to a process that has nothing else left to do.
  worker.unref()
  const wait = () => {
    if (waiting.size === 0) worker.ref()
  }
  const waited = () => {
    if (waiting.size === 0) worker.unref()
  }
  worker.on("message", (message: { kind: "tick" | "now"; id?: number; result: Result }) => {
    if (message.result.log >= 0) latest = message.result
    if (message.kind === "now") {
      const resume = waiting.get(message.id!)
      waiting.delete(message.id!)
      waited()
      resume?.(message.result)
    }
    between()
  })
  worker.on("error", (error) => fallBack(`the checkpoint worker failed (${error instanceof Error ? error.message : String(error)})`))
  worker.on("exit", (code) => fallBack(`the checkpoint worker exited (${code})`))

  /** The connection's own checkpoint of what is left, once the log is long (see the module's comment). */
  const between = () => {
    if (!running || latest === undefined || db.inTransaction) return
    const { log, checkpointed } = latest
    if (log < options.restartPages) return
    if (log - checkpointed > options.tailPages && log < 4 * options.restartPages) return
    // Until the worker's next report: the log starts over at the next write.
    latest = undefined
    try {
      db.pragma("wal_checkpoint(PASSIVE)")
    } catch {
      // The worker holds the log right now: its next report brings the next chance.
    }
  }

  return {
    now: () =>
      new Promise<Result>((resolve) => {
        if (!running) return resolve({ busy: 1, log: -1, checkpointed: -1 })
        const id = nextId++
        wait()
        waiting.set(id, resolve)
        worker.postMessage({ kind: "now", id })
      }),
    between,
    latest: () => latest,
    running: () => running,
    stop: () =>
      new Promise<void>((resolve) => {
        if (!running) return resolve()
        running = false
        worker.ref()
        worker.once("exit", () => {
          db.pragma("wal_autocheckpoint = 1000")
          resolve()
        })
        worker.postMessage({ kind: "stop" })
      })
  }
}

/**
 * The answers' rows committed on a thread of their own (platform/AnswerRows.ts, on the embedded
 * SQLite database): a `worker_threads` thread with its own connection to the database file takes
 * the log's lines of a batch and commits their rows with the log's watermark in one transaction,
 * as the main thread's connection would. Why: at 1,000 kept E2 requests a second, committing the
 * answers' rows took about a tenth of the main thread's CPU per request (bench/JOURNAL.md, "The
 * answers' rows committed on a thread of their own"), and the main thread is what bounds the
 * gateway's throughput: elsewhere that work runs on another core.
 *
 * The two connections write one file, and SQLite lets one write at a time. The thread waits for
 * the lock in SQLite's busy handler (its waits are its own); the main thread's connection never does
 * (platform/Sqlite.ts): a write or a transaction's begin that finds the file locked is tried again
 * a millisecond later, asynchronously, and its transactions begin `IMMEDIATE`, since a deferred one
 * that had read before the thread committed could not write at all. They rarely meet: answers
 * commit a batch every 20 ms at most, and an E2 request writes nothing else.
 *
 * The thread starts with the first commit (a gateway that answers no E2 request, polling tasks
 * say, never starts it), holds the process open only while a commit is in flight, and is started
 * again if it ever dies; a commit it fails, or one it was running when it died, fails with a
 * `SqlError`, as the same commit on the main thread's connection would.
 */
import { SqlError } from "@effect/sql/SqlError"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import { createRequire } from "node:module"
import { Worker } from "node:worker_threads"
import * as Database from "./Database.js"
import * as Sqlite from "./Sqlite.js"

/** The thread, as `AnswerRows` uses it. */
export interface Writer {
  /** Commits the rows of the log's `lines` and the watermark `seq` in one transaction. */
  readonly commit: (lines: ReadonlyArray<string>, seq: number) => Effect.Effect<void, SqlError>
  /**
   * False once a thread stopped before it had opened the database (the driver or the file could
   * not be opened there): the rows are then committed on the main thread's connection instead.
   */
  readonly usable: () => boolean
}

/**
 * The thread's program (CommonJS, run with `eval`: the compiled gateway is one module, and a
 * thread needs a program of its own). It inserts each row with the columns its line has, an id
 * there already left as it is, as `AnswerRows`' insert does on the main thread (there one
 * statement per table, here one per row, in the lines' order; the start-up's replay reads the same
 * lines); the pragmas are the database's (platform/Database.ts, given as `pragmas`), which SQLite
 * keeps per connection, and its waits for the lock last as long as the main connection's
 * (platform/Sqlite.ts, `defaultBusyTimeoutMs`).
 */
const program = `
const { parentPort, workerData } = require("node:worker_threads")
const Database = require(workerData.driver)
const db = new Database(workerData.file, { fileMustExist: true })
for (const pragma of workerData.pragmas) db.pragma(pragma)
db.pragma("busy_timeout = " + workerData.busyTimeoutMs)
const tables = new Set(workerData.tables)
const quote = (name) => '"' + name.replace(/"/g, '""') + '"'
const prepared = new Map()
const prepare = (text) => {
  let statement = prepared.get(text)
  if (statement === undefined) {
    if (prepared.size >= 200) prepared.clear()
    prepared.set(text, statement = db.prepare(text))
  }
  return statement
}
const insert = (table, values) => {
  if (!tables.has(table)) throw new Error("not a table of the answers: " + table)
  const columns = Object.keys(values)
  prepare("INSERT INTO " + quote(table) + " (" + columns.map(quote).join(", ") + ") VALUES (" +
    columns.map(() => "?").join(", ") + ") ON CONFLICT (id) DO NOTHING").run(...columns.map((c) => values[c]))
}
const commit = db.transaction((lines, seq) => {
  for (const line of lines) for (const row of JSON.parse(line).r) insert(row.t, row.v)
  prepare(workerData.mark).run(seq)
})
parentPort.postMessage({ ready: true })
parentPort.on("message", ({ id, lines, seq }) => {
  try {
    commit.immediate(lines, seq)
    parentPort.postMessage({ id })
  } catch (error) {
    parentPort.postMessage({ id, error: { message: String(error && error.message || error), code: error && error.code } })
  }
})
`

/** better-sqlite3's entry module, named by the compiled gateway's build (bin/build.mjs); unset in the sources. */
declare const GENWAY_SQLITE_DRIVER: string | undefined

/**
 * The driver's entry module for the thread to load: the one the gateway itself imports. The
 * compiled gateway may live in a cache outside the install (bin/build.mjs), so its build names it;
 * the sources resolve it from here.
 */
const driverEntry = (): string =>
  typeof GENWAY_SQLITE_DRIVER === "string" ? GENWAY_SQLITE_DRIVER : createRequire(import.meta.url).resolve("better-sqlite3")

interface Reply {
  readonly id: number
  readonly ready?: true
  readonly error?: { readonly message: string; readonly code?: string }
}

/**
 * The committing thread for the database at `file`, stopped with the scope; `tables`: those an
 * answer's rows may go to; `mark`: the statement that sets the log's watermark (its one parameter).
 */
export const make = (file: string, tables: ReadonlyArray<string>, mark: string): Effect.Effect<Writer, never, Scope.Scope> =>
  Effect.gen(function*() {
    let worker: Worker | undefined
    let broken = false
    let driver = ""
    try {
      driver = driverEntry()
    } catch {
      broken = true
    }
    let next = 0
    const waiting = new Map<number, (exit: Effect.Effect<void, SqlError>) => void>()
    const failAll = (cause: unknown) => {
      for (const resume of waiting.values()) resume(Effect.fail(new SqlError({ cause, message: "the answers' commit thread stopped" })))
      waiting.clear()
    }
    const started = () => {
      if (worker !== undefined) return worker
      const w = new Worker(program, { eval: true, workerData: { driver, file, tables, mark, pragmas: Database.connectionPragmas, busyTimeoutMs: Sqlite.defaultBusyTimeoutMs } })
      let ready = false
      w.unref()
      w.on("message", (reply: Reply) => {
        if (reply.ready === true) return void (ready = true)
        const resume = waiting.get(reply.id)
        if (resume === undefined) return
        waiting.delete(reply.id)
        if (waiting.size === 0) w.unref()
        resume(reply.error === undefined ? Effect.void : Effect.fail(new SqlError({ cause: reply.error, message: reply.error.message })))
      })
      const gone = (cause: unknown) => {
        if (worker !== w) return
        worker = undefined
        if (!ready) broken = true
        failAll(cause)
      }
      w.on("error", gone)
      w.on("exit", (code) => gone(new Error(`the answers' commit thread exited with code ${code}`)))
      return worker = w
    }
    yield* Effect.addFinalizer(() =>
      Effect.promise(async () => {
        const w = worker
        worker = undefined
        failAll(new Error("the answers' commit thread was stopped"))
        if (w !== undefined) await w.terminate()
      })
    )
    return {
      usable: () => !broken,
      commit: (lines, seq) =>
        Effect.async<void, SqlError>((resume) => {
          if (broken) return resume(Effect.fail(new SqlError({ cause: new Error("no commit thread"), message: "the answers' commit thread could not start" })))
          const w = started()
          const id = next++
          waiting.set(id, resume)
          if (waiting.size === 1) w.ref()
          w.postMessage({ id, lines, seq })
        })
    }
  })

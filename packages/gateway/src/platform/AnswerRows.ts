/**
 * The rows that record an answer — a kept E2 response, the usage of an E1/E2 request — and when
 * the answer may go out.
 *
 * On PostgreSQL (replicas share the database, and a client may read on another replica what it
 * created on this one) an answer goes out once its rows have committed: they are written in
 * shared batches (platform/WriteBatch.ts).
 *
 * On the embedded SQLite database (one process owns it: platform/DataDirLock.ts) the rows are
 * written behind the answer, from a log of their own:
 * - before the answer goes out, its rows are appended to the log (`answers/<n>.log` beside the
 *   database), one line per answer; the answers of one event-loop turn share one `write`, at the
 *   end of the turn, and each goes out once it has returned. Once `write` has returned the line is
 *   the kernel's: it survives a SIGKILL of the gateway, as a SQLite commit with
 *   `synchronous = NORMAL` does (neither survives every power loss);
 * - the rows are then committed in batches (every `delayMs`, or at once when `max` answers wait),
 *   each batch with the log's watermark (`answer_log.written`, the last line committed) in the
 *   same transaction, by a thread of their own on a connection of its own to the database file
 *   (platform/AnswerWriter.ts; `genway serve` gives the file) — or on the connection in context
 *   when no file is given or the thread cannot open it; a batch the thread fails is tried again
 *   answer by answer on the connection in context;
 * - at start-up, before anything is served, the lines past the watermark are committed; so a
 *   row is written once, and a row committed and deleted since (a response deleted by its owner,
 *   one past its retention) is not written again;
 * - a read of a response whose row is still in the log (`written`), and a usage or budget read
 *   or the background poller's claim (`settled`), first have the batch written, so reads see every
 *   answer already given.
 * A line that cannot be appended (the disk full, say) makes its answer wait for its commit, as
 * on PostgreSQL; so does every answer while more than `backlog` wait to be committed (the database
 * failing), so memory stays bounded. A batch that fails is written answer by answer: rows the
 * database refuses while it takes the watermark (a constraint) are logged and dropped, so they
 * hold nobody up; when it takes no writes at all, what is left is tried again after `retryMs`, its
 * lines staying in the log meanwhile, and reads waiting for them go on without them. Closing the
 * layer commits what waits.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import type * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Runtime from "effect/Runtime"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import * as fs from "node:fs"
import * as path from "node:path"
import { Settings } from "./Config.js"
import * as AnswerWriter from "./AnswerWriter.js"
import * as Database from "./Database.js"
import * as Files from "./Files.js"
import * as WriteBatch from "./WriteBatch.js"

/** The tables an answer's rows go to; each is keyed by `id`, and a row whose id is there already is left as it is. */
export const tables = ["responses", "usage_ledger"] as const

/** One row of an answer, as its table's columns. */
export interface Row {
  readonly table: typeof tables[number]
  readonly values: Readonly<Record<string, unknown>>
}

export interface Service {
  /**
   * Records an answer's rows; resumes once they will be in the database even if the process dies
   * now. `id`: the kept response among them, for `written`.
   */
  readonly submit: (rows: ReadonlyArray<Row>, id?: string) => Effect.Effect<void, SqlError>
  /** Resumes once the rows submitted under `id` are in the database (at once when none wait). */
  readonly written: (id: string) => Effect.Effect<void>
  /** Resumes once every row submitted so far is in the database. */
  readonly settled: Effect.Effect<void>
}

export class AnswerRows extends Context.Tag("@genway/gateway/AnswerRows")<AnswerRows, Service>() {}

/** Inserts rows, one statement per table; an id there already is left as it is. */
const insert = (sql: SqlClient.SqlClient, rows: ReadonlyArray<Row>): Effect.Effect<void, SqlError> => {
  const statements: Array<Effect.Effect<unknown, SqlError>> = []
  for (const table of tables) {
    const values = rows.flatMap((r) => (r.table === table ? [r.values] : []))
    if (values.length > 0) statements.push(sql`INSERT INTO ${sql(table)} ${sql.insert(values)} ON CONFLICT (id) DO NOTHING`)
  }
  if (statements.length === 0) return Effect.void
  return statements.length === 1 ? Effect.asVoid(statements[0]!) : sql.withTransaction(Effect.asVoid(Effect.all(statements)))
}

/** Each answer's rows committed before it goes out, in shared batches. */
export const committedFirst: Effect.Effect<Service, never, SqlClient.SqlClient | Scope.Scope> = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const write = yield* WriteBatch.make((answers: ReadonlyArray<ReadonlyArray<Row>>) => insert(sql, answers.flat()))
  return { submit: (rows) => write(rows), written: () => Effect.void, settled: Effect.void }
})

/** A line of the log: the answer's number and its rows. */
const Line = Schema.parseJson(Schema.Struct({
  s: Schema.Number,
  r: Schema.Array(Schema.Struct({ t: Schema.Literal(...tables), v: Schema.Record({ key: Schema.String, value: Schema.Unknown }) }))
}))
const decodeLine = Schema.decodeEither(Line)

interface Pending {
  readonly seq: number
  readonly rows: ReadonlyArray<Row>
  /** Its line of the log (what the commit thread reads). */
  readonly line: string
  /** The line is in the log; otherwise the submitter waits for the commit. */
  readonly logged: boolean
}

interface Waiter {
  readonly seq: number
  readonly resume: (exit: Exit.Exit<void, SqlError>) => void
  /** A read (`written`, `settled`), not an answer held back. */
  readonly reader: boolean
}

export interface Options {
  /** The folder of the log's files. */
  readonly dir: string
  /** How long an answer's rows wait to be committed with others. */
  readonly delayMs?: number
  /** Answers per batch; this many waiting are committed at once. */
  readonly max?: number
  /** Answers waiting beyond which an answer waits for its own commit. */
  readonly backlog?: number
  /** The wait before a failed batch is tried again. */
  readonly retryMs?: number
  /** A log file is closed and a new one begun past this many bytes. */
  readonly fileBytes?: number
  /**
   * The database's file: the rows are committed by a thread of its own on a connection to it
   * (platform/AnswerWriter.ts). Without it, on the connection in context.
   */
  readonly file?: string
}

/** The log's watermark set to the answer given as its one parameter (here and on the commit thread). */
const markStatement = "INSERT INTO answer_log (id, written) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET written = excluded.written"

const fileName = /^(\d+)\.log$/

/** The log's files in `dir`, oldest first. */
const logFiles = (dir: string): Array<string> =>
  fs.readdirSync(dir)
    .flatMap((name) => {
      const m = fileName.exec(name)
      return m === null ? [] : [{ name, n: Number(m[1]) }]
    })
    .sort((a, b) => a.n - b.n)
    .map(({ name }) => path.join(dir, name))

/** Rows written behind their answers, from the log in `options.dir` (see the module's comment). */
export const writtenBehind = (options: Options): Effect.Effect<Service, SqlError, SqlClient.SqlClient | Scope.Scope> =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const { dir } = options
    const delayMs = options.delayMs ?? 20
    const max = options.max ?? 64
    const backlog = options.backlog ?? 10_000
    const retryMs = options.retryMs ?? 1_000
    const fileBytes = options.fileBytes ?? 1 << 20

    // Made before the drain below is added as a finalizer, so the thread stops after it.
    const thread = options.file === undefined ? undefined : yield* AnswerWriter.make(options.file, tables, markStatement)

    /** Commits `batch` with the watermark, in one transaction, on the connection in context. */
    const commitHere = (batch: ReadonlyArray<Pending>): Effect.Effect<void, SqlError> =>
      sql.withTransaction(Effect.andThen(insert(sql, batch.flatMap((p) => p.rows)), mark(batch[batch.length - 1]!.seq)))

    /** Whether the log said that the thread could not open the database (once). */
    let threadLost = false

    /** The watermark alone: whether the database takes writes at all. */
    const mark = (seq: number): Effect.Effect<void, SqlError> => Effect.asVoid(sql.unsafe(markStatement, [seq]))

    // Start-up: the lines past the watermark are read, to be committed before anything is served.
    Files.privateDir(dir)
    const marked = yield* sql<{ written: number | string }>`SELECT written FROM answer_log WHERE id = 1`
    let written = marked.length === 0 ? 0 : Number(marked[0]!.written)
    let lastSeq = written
    const found = logFiles(dir)
    const replay: Array<Pending> = []
    let unreadable = 0
    for (const file of found) {
      for (const text of fs.readFileSync(file, "utf8").split("\n")) {
        if (text === "") continue
        const line = decodeLine(text)
        if (Either.isLeft(line)) {
          // Only the end of a line the process died writing can be cut short.
          unreadable++
          continue
        }
        const { r, s } = line.right
        if (s > lastSeq) lastSeq = s
        if (s > written) replay.push({ seq: s, rows: r.map(({ t, v }) => ({ table: t, values: v })), line: text, logged: true })
      }
    }
    replay.sort((a, b) => a.seq - b.seq)

    let pending: Array<Pending> = replay
    let waiters: Array<Waiter> = []
    const ids = new Map<string, number>()

    const resumeUpTo = (seq: number) => {
      if (waiters.length === 0) return
      const still: Array<Waiter> = []
      for (const w of waiters) {
        if (w.seq <= seq) w.resume(Exit.void)
        else still.push(w)
      }
      waiters = still
    }

    /** The watermark reached `seq`: what waited for it goes on. */
    const committed = (seq: number) => {
      written = seq
      let i = 0
      while (i < pending.length && pending[i]!.seq <= seq) i++
      pending = pending.slice(i)
      resumeUpTo(seq)
      // Ids are in the order of their answers.
      for (const [id, s] of ids) {
        if (s > seq) break
        ids.delete(id)
      }
    }

    /** An answer whose line is not in the log was not given: it fails as its commit did. */
    const failUnlogged = (p: Pending, exit: Exit.Exit<void, SqlError>) => {
      pending = pending.filter((q) => q !== p)
      waiters = waiters.filter((w) => (w.seq === p.seq ? (w.resume(exit), false) : true))
    }

    const describeRows = (p: Pending) => p.rows.map((r) => `${r.table} ${String(r.values["id"])}`).join(", ")

    /** The last failure of a batch that was left to be tried again. */
    let lastFailure: Exit.Failure<void, SqlError> | undefined

    /**
     * Commits `batch`; when that fails, each answer alone, in order. When an answer fails alone, the
     * watermark alone tells why: written, the database takes writes and refused that answer's rows
     * (a constraint), which are dropped and logged so they hold nobody up; not written, the database
     * is failing. True when nothing of the batch waits any more; false when the database failed:
     * what is left is tried again later (the answers not in the log fail now).
     */
    const runBatch = (batch: ReadonlyArray<Pending>): Effect.Effect<boolean> => {
      // The batch on the thread when it runs; answer by answer on the connection in context, where
      // the watermark's own write (`mark`) tells a row refused from a database that takes no
      // writes: a failure of the thread is neither.
      const threaded = thread !== undefined && thread.usable()
      const first = threaded ? thread.commit(batch.map((p) => p.line), batch[batch.length - 1]!.seq) : commitHere(batch)
      const lost = thread === undefined || threaded || threadLost
        ? Effect.void
        : Effect.suspend(() => {
          threadLost = true
          return Effect.logWarning("answers: the commit thread could not open the database; the rows are committed on the main thread")
        })
      return Effect.zipRight(lost, Effect.flatMap(Effect.exit(first), (exit) => {
        if (Exit.isSuccess(exit)) return Effect.sync(() => (committed(batch[batch.length - 1]!.seq), true))
        return Effect.gen(function*() {
          if (batch.length > 1 || threaded) {
            yield* Effect.logError(`answers: ${batch.length} answers' rows could not be committed together${threaded ? " by the commit thread" : ""}; trying them one by one`, exit.cause)
          }
          for (const [i, p] of batch.entries()) {
            const alone = batch.length === 1 && !threaded ? exit : yield* Effect.exit(commitHere([p]))
            if (Exit.isSuccess(alone)) {
              committed(p.seq)
              continue
            }
            if (Exit.isFailure(yield* Effect.exit(mark(p.seq)))) {
              lastFailure = alone
              yield* Effect.logError(`answers: the database takes no writes; ${pending.length} answers wait, tried again in ${retryMs} ms`, alone.cause)
              for (const q of batch.slice(i)) if (!q.logged) failUnlogged(q, alone)
              return false
            }
            if (p.logged) yield* Effect.logError(`answers: the database refused the rows of an answer already given (${describeRows(p)}); dropped`, alone.cause)
            else failUnlogged(p, alone)
            committed(p.seq)
          }
          return true
        })
      }))
    }

    // The lines past the watermark, committed before anything is served; a database that takes no
    // writes stops the start, the log left as it is.
    while (pending.length > 0) {
      if (!(yield* runBatch(pending.slice(0, max)))) return yield* Effect.failCause(lastFailure!.cause)
    }
    if (replay.length > 0 || unreadable > 0) {
      yield* Effect.logInfo(`answers: ${replay.length} answers' rows committed from the log at start-up` +
        (unreadable > 0 ? ` (${unreadable} unreadable lines skipped)` : ""))
    }
    for (const file of found) fs.rmSync(file, { force: true })

    // The log's current file, and those closed whose lines are not all committed yet.
    interface Open {
      readonly file: string
      readonly fd: number
      bytes: number
      lastSeq: number
    }
    const open = (first: number): Open => {
      const file = path.join(dir, `${first}.log`)
      return { file, fd: fs.openSync(file, "a", Files.fileMode), bytes: 0, lastSeq: first - 1 }
    }
    let current = open(lastSeq + 1)
    const closed: Array<{ readonly file: string; readonly lastSeq: number }> = []

    const runtime = yield* Effect.runtime<never>()
    const runFork = Runtime.runFork(runtime)
    let inFlight = false
    let running: Fiber.RuntimeFiber<void> | undefined
    let timer: ReturnType<typeof setTimeout> | undefined
    let appendFailed = false

    /** The log's files as the watermark allows: closed ones wholly committed go, and the current one is emptied when all of it is. */
    const tidy = () => {
      while (closed.length > 0 && closed[0]!.lastSeq <= written) fs.rmSync(closed.shift()!.file, { force: true })
      if (current.bytes > 0 && current.lastSeq <= written && pending.length === 0) {
        fs.ftruncateSync(current.fd, 0)
        current.bytes = 0
      } else if (current.bytes >= fileBytes) {
        fs.closeSync(current.fd)
        closed.push({ file: current.file, lastSeq: current.lastSeq })
        current = open(lastSeq + 1)
      }
    }

    function start() {
      timer = undefined
      if (inFlight || closing || pending.length === 0) return
      const batch = pending.slice(0, max)
      inFlight = true
      const fiber = runFork(Effect.map(runBatch(batch), (settledAll) => {
        inFlight = false
        running = undefined
        if (!settledAll) {
          // Reads do not wait for a database that takes no writes: they go on to it (and fail, or
          // read what it has); answers held back by the backlog keep waiting.
          waiters = waiters.filter((w) => (w.reader ? (w.resume(Exit.void), false) : true))
          if (!closing) timer = setTimeout(start, retryMs)
          return
        }
        try {
          tidy()
        } catch (error) {
          runFork(Effect.logWarning("answers: the log's files could not be tidied", error))
        }
        schedule()
      }))
      // A commit may finish before `runFork` returns.
      if (inFlight) running = fiber
    }

    /** Commits at once when a batch is full or someone waits, else after `delayMs`. */
    function schedule(now = false) {
      if (inFlight || closing || pending.length === 0) return
      if (now || pending.length >= max) {
        if (timer !== undefined) clearTimeout(timer)
        start()
      } else if (timer === undefined) {
        timer = setTimeout(start, delayMs)
      }
    }

    const waitFor = (seq: number, reader: boolean): Effect.Effect<void, SqlError> =>
      Effect.async<void, SqlError>((resume) => {
        if (seq <= written) return resume(Exit.void)
        waiters.push({ seq, resume, reader })
        schedule(true)
      })

    /** The line of answer `seq` (its rows, in order). */
    const lineOf = (seq: number, rows: ReadonlyArray<Row>) => JSON.stringify({ s: seq, r: rows.map((row) => ({ t: row.table, v: row.values })) })

    /** Appends the lines of answers `first`, `first + 1`, … in one `write`. */
    const append = (first: number, texts: ReadonlyArray<string>): boolean => {
      const lines = Buffer.from(texts.join("\n") + "\n")
      try {
        const n = fs.writeSync(current.fd, lines)
        if (n !== lines.length) {
          // Cut short (the disk full): taken back, so the next line starts on a line of its own.
          fs.ftruncateSync(current.fd, current.bytes)
          throw new Error(`only ${n} of ${lines.length} bytes written`)
        }
        current.bytes += n
        current.lastSeq = first + texts.length - 1
        appendFailed = false
        return true
      } catch (error) {
        if (!appendFailed) runFork(Effect.logError("answers: the log could not be appended to; answers wait for their commit", error))
        appendFailed = true
        return false
      }
    }

    /**
     * The answers submitted in this turn of the event loop, whose lines are appended together at
     * its end (`appendAll`): one `write` for all of them, where a write per answer cost about 7 %
     * of a `store: false` request's CPU at 1,200 requests/s (bench/JOURNAL.md, "The answers' lines
     * appended once a turn"). Each answer still goes out only after the `write` of its line.
     * Not `WriteBatch` (the rows' batches on PostgreSQL): it writes a lone item at once and the
     * rest of the turn after it, so a busy turn makes two writes, each batch on a fiber of its own;
     * built on it, the append measured 1.11 × the CPU per request of this at 600 requests/s.
     */
    interface Appending {
      readonly rows: ReadonlyArray<Row>
      readonly id: string | undefined
      readonly resume: (next: Effect.Effect<void, SqlError>) => void
    }
    let toAppend: Array<Appending> = []
    let appendAt: ReturnType<typeof setImmediate> | undefined

    /** Appends the lines of the answers waiting, numbers them in order, and lets each go on. */
    const appendAll = () => {
      appendAt = undefined
      const answers = toAppend
      toAppend = []
      if (answers.length === 0) return
      // After shutdown began: committed before the answer, as on PostgreSQL.
      if (closing) {
        for (const a of answers) a.resume(insert(sql, a.rows))
        return
      }
      const first = lastSeq + 1
      lastSeq += answers.length
      const texts = answers.map((a, i) => lineOf(first + i, a.rows))
      const logged = append(first, texts)
      for (const [i, a] of answers.entries()) {
        const seq = first + i
        pending.push({ seq, rows: a.rows, line: texts[i]!, logged })
        if (a.id !== undefined) ids.set(a.id, seq)
        // A line not in the log, or past the backlog: the answer waits for its commit.
        a.resume(logged && pending.length <= backlog ? Effect.void : waitFor(seq, false))
      }
      schedule()
    }

    let closing = false

    yield* Effect.addFinalizer(() =>
      Effect.suspend(function drain(): Effect.Effect<void> {
        closing = true
        // Answers waiting for this turn's append are committed before they go out.
        if (appendAt !== undefined) {
          clearImmediate(appendAt)
          appendAll()
        }
        if (timer !== undefined) clearTimeout(timer)
        timer = undefined
        if (inFlight && running !== undefined) return Effect.flatMap(running.await, drain)
        if (pending.length === 0) {
          fs.closeSync(current.fd)
          for (const c of closed) fs.rmSync(c.file, { force: true })
          fs.rmSync(current.file, { force: true })
          return Effect.void
        }
        return Effect.flatMap(runBatch(pending.slice(0, max)), (settledAll) => {
          if (settledAll) return drain()
          // Left in the log: committed at the next start. Whoever still waits is answered now.
          fs.closeSync(current.fd)
          for (const w of waiters) w.resume(Exit.void)
          waiters = []
          return Effect.logError("answers: rows could not be committed at shutdown; they stay in the log for the next start")
        })
      })
    )

    const service: Service = {
      submit: (rows, id) =>
        Effect.suspend(() => {
          // After shutdown began: committed before the answer, as on PostgreSQL.
          if (closing) return insert(sql, rows)
          return Effect.async<void, SqlError>((resume) => {
            toAppend.push({ rows, id, resume })
            appendAt ??= setImmediate(appendAll)
          })
        }),
      written: (id) =>
        Effect.suspend(() => {
          const seq = ids.get(id)
          if (seq === undefined) return Effect.void
          if (seq <= written) {
            ids.delete(id)
            return Effect.void
          }
          return Effect.ignore(waitFor(seq, true))
        }),
      settled: Effect.suspend(() => (pending.length === 0 ? Effect.void : Effect.ignore(waitFor(lastSeq, true))))
    }
    return service
  })

/** The answers' rows of the settings' database: written behind on the embedded SQLite one, committed first on PostgreSQL. */
export const layer: Layer.Layer<AnswerRows, SqlError, SqlClient.SqlClient | Settings> = Layer.scoped(
  AnswerRows,
  Effect.flatMap(Settings, (s) =>
    Option.isSome(s.databaseUrl)
      ? committedFirst
      : writtenBehind({ dir: path.join(s.dataDir, "answers"), file: Database.sqliteFile(s.dataDir) }))
)

/** `settled` of the answers' rows in context; at once where there are none (a CLI reading the database, say). */
export const settled: Effect.Effect<void> = Effect.flatMap(
  Effect.serviceOption(AnswerRows),
  (answers) => (Option.isSome(answers) ? answers.value.settled : Effect.void)
)

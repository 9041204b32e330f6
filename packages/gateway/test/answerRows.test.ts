/**
 * The answers' rows written behind their answers on SQLite (platform/AnswerRows.ts): in the log
 * when `submit` resumes, committed later, and committed once by the next start when the process
 * died first; reads that wait for them; the log's files tidied. A process killed for real while
 * answering is responses.crash.test.ts.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { assert, describe, it } from "@effect/vitest"
import { Registry } from "@genway/registry"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as Scope from "effect/Scope"
import * as fs from "node:fs"
import { syncBuiltinESMExports } from "node:module"
import * as path from "node:path"
import * as Ledger from "../src/ledger/Ledger.js"
import * as AnswerRows from "../src/platform/AnswerRows.js"
import * as Database from "../src/platform/Database.js"
import * as Store from "../src/responses/Store.js"
import { tempDir } from "./harness.js"

const entry = Registry.entries.find((e) => e.kind === "responses")!
const hour = 3_600_000

/** The rows of one kept answer: the response and its usage. */
const answer = (id: string): ReadonlyArray<AnswerRows.Row> => [
  {
    table: "responses",
    values: Store.columnsOf({
      id,
      tenant: "t",
      keyId: null,
      entryId: entry.id,
      mode: "sandbox",
      status: "completed",
      background: false,
      body: JSON.stringify({ id, status: "completed" }),
      sandboxFinal: null,
      nextPollAt: null,
      deadlineAt: 2,
      createdAt: 1,
      finishedAt: 1,
      expiresAt: Date.now() + hour
    }, 1)
  },
  { table: "usage_ledger", values: Ledger.requestColumns({ id, tenant: "t", keyId: null, entry, inputTokens: 3, outputTokens: 4, at: 1 }) }
]

/** A database in a fresh folder; the log beside it. */
const place = () => {
  const dir = tempDir()
  return { file: path.join(dir, "genway.db"), log: path.join(dir, "answers") }
}

/** The writer over the database at `file`, in a scope of its own: not closing it stands for the process dying. */
const openWith = (file: string, options: AnswerRows.Options, logged: (message: string) => void = () => {}) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    const context = yield* Layer.buildWithScope(Database.sqlite(file), scope)
    const logger = Logger.replace(Logger.defaultLogger, Logger.make(({ message }) => logged(String(message))))
    const answers = yield* AnswerRows.writtenBehind(options).pipe(Effect.provide(context), Effect.provide(logger), Scope.extend(scope))
    const sql = context.unsafeMap.get(SqlClient.SqlClient.key) as SqlClient.SqlClient
    const ids = (table: "responses" | "usage_ledger") =>
      Effect.map(sql<{ readonly id: string }>`SELECT id FROM ${sql(table)} ORDER BY id`, (rows) => rows.map((r) => r.id))
    return { answers, sql, ids, close: Scope.close(scope, Exit.void) }
  })

/**
 * Runs `effect` counting the `fs.writeSync` calls made meanwhile, each made through `write` (the
 * module's `import * as fs` sees the counting function once the built-in module's exports are synced).
 */
const countingWrites = <A, E, R>(
  effect: Effect.Effect<A, E, R>,
  write: (original: typeof fs.writeSync, ...args: Parameters<typeof fs.writeSync>) => number = (original, ...args) => original(...args)
) =>
  Effect.acquireUseRelease(
    Effect.sync(() => {
      const fsObject = (fs as unknown as { default: typeof fs }).default as { writeSync: typeof fs.writeSync }
      const original = fsObject.writeSync
      const counted = { calls: 0, restore: () => {} }
      fsObject.writeSync = ((...args: Parameters<typeof fs.writeSync>) => {
        counted.calls++
        return write(original, ...args)
      }) as typeof fs.writeSync
      syncBuiltinESMExports()
      counted.restore = () => {
        fsObject.writeSync = original
        syncBuiltinESMExports()
      }
      return counted
    }),
    (counted) => Effect.map(effect, (a) => [a, counted.calls] as const),
    (counted) => Effect.sync(() => counted.restore())
  )

const logText = (dir: string) => fs.readdirSync(dir).map((f) => fs.readFileSync(path.join(dir, f), "utf8")).join("")

// Each test runs twice: the rows committed on the connection in context, and on a thread of
// their own with its own connection to the file (platform/AnswerWriter.ts, what `genway serve` does).
for (const thread of [false, true]) {
  describe(`answers' rows written behind (SQLite, committed ${thread ? "on a thread of their own" : "on the connection in context"})`, () => {
    const open = (file: string, options: AnswerRows.Options, logged?: (message: string) => void) =>
      openWith(file, thread ? { ...options, file } : options, logged)
    /** A writer that commits only when asked (or past `limits`), with r1 and r2 submitted and not yet committed. */
    const twoWaiting = (limits: Pick<AnswerRows.Options, "max" | "backlog">) =>
      Effect.gen(function*() {
        const { file, log } = place()
        const w = yield* open(file, { dir: log, delayMs: hour, ...limits })
        for (const id of ["r1", "r2"]) yield* w.answers.submit(answer(id))
        assert.deepStrictEqual(yield* w.ids("responses"), [])
        return w
      })

    it.live("in the log when submit resumes; the next start commits them once, and not those committed and deleted since", () =>
      Effect.gen(function*() {
        const { file, log } = place()
        const first = yield* open(file, { dir: log, delayMs: hour })
        yield* first.answers.submit(answer("resp_a"), "resp_a")
        yield* first.answers.submit(answer("resp_b"), "resp_b")
        yield* first.answers.settled
        // Committed, then deleted by its owner: the log still holds its line.
        yield* first.sql`DELETE FROM responses WHERE id = 'resp_a'`
        yield* first.answers.submit(answer("resp_c"), "resp_c")
        yield* first.answers.submit([answer("resp_d")[1]!])
        assert.deepStrictEqual(yield* first.ids("responses"), ["resp_b"], "resp_c waits in the log")
        assert.include(logText(log), `"resp_c"`)
        // A process that died before tidying its log would still have the lines of resp_a and resp_b
        // (committed: the watermark is past them) before those of resp_c and resp_d.
        const line = (s: number, rows: ReadonlyArray<AnswerRows.Row>) => JSON.stringify({ s, r: rows.map((r) => ({ t: r.table, v: r.values })) }) + "\n"
        fs.writeFileSync(path.join(log, "0.log"), line(1, answer("resp_a")) + line(2, answer("resp_b")))

        // The process dies here (its scope is never closed before the next start).
        const second = yield* open(file, { dir: log, delayMs: hour })
        assert.deepStrictEqual(yield* second.ids("responses"), ["resp_b", "resp_c"])
        assert.deepStrictEqual(yield* second.ids("usage_ledger"), ["resp_a", "resp_b", "resp_c", "resp_d"])
        assert.strictEqual(logText(log), "", "the log holds nothing once committed")

        // Answers after the restart are numbered past the old ones, and commit.
        yield* second.answers.submit(answer("resp_e"), "resp_e")
        yield* second.close
        yield* first.close
        const third = yield* open(file, { dir: log, delayMs: hour })
        assert.deepStrictEqual(yield* third.ids("responses"), ["resp_b", "resp_c", "resp_e"])
        yield* third.close
      }))

    it.live("the answers of one turn share one write, in order, and each resumes only with its line in the log", () =>
      Effect.gen(function*() {
        const { file, log } = place()
        const w = yield* open(file, { dir: log, delayMs: hour })
        const ids = ["t1", "t2", "t3", "t4", "t5"]
        const [seen, writes] = yield* countingWrites(Effect.forEach(
          ids,
          (id) => Effect.zipRight(w.answers.submit(answer(id), id), Effect.sync(() => logText(log).includes(`"${id}"`))),
          { concurrency: "unbounded" }
        ))
        assert.deepStrictEqual(seen, [true, true, true, true, true], "an answer resumed before its line was in the log")
        assert.strictEqual(writes, 1, "one write for the answers of one turn")
        const lines = logText(log).trim().split("\n").map((l) => JSON.parse(l) as { s: number; r: ReadonlyArray<{ v: { id: string } }> })
        assert.deepStrictEqual(lines.map((l) => [l.s, l.r[0]!.v.id]), ids.map((id, i) => [i + 1, id]))
        // Answers of a later turn: a write of their own, numbered on.
        const [, later] = yield* countingWrites(w.answers.submit(answer("t6"), "t6"))
        assert.strictEqual(later, 1)
        assert.include(logText(log), `{"s":6,`)
        yield* w.answers.written("t6")
        assert.deepStrictEqual(yield* w.ids("responses"), [...ids, "t6"])
        yield* w.close
      }))

    it.live("a turn's lines cut short or refused by the disk: taken back, and those answers wait for their commit", () =>
      Effect.gen(function*() {
        const { file, log } = place()
        const w = yield* open(file, { dir: log, delayMs: hour })
        // The disk takes half of the turn's lines, then nothing.
        const short = (original: typeof fs.writeSync, fd: number, buffer: any, ...rest: Array<any>) =>
          Buffer.isBuffer(buffer) ? original(fd, buffer.subarray(0, Math.floor(buffer.length / 2))) : original(fd, buffer, ...rest)
        const [, shortWrites] = yield* countingWrites(
          Effect.forEach(["cut1", "cut2"], (id) => w.answers.submit(answer(id), id), { concurrency: "unbounded" }),
          short as never
        )
        assert.strictEqual(shortWrites, 1)
        // Answered only once committed; the half line was taken back, so what the log holds is whole
        // lines only.
        assert.deepStrictEqual(yield* w.ids("usage_ledger"), ["cut1", "cut2"])
        const wholeLines = () => {
          const text = logText(log)
          assert.isTrue(text === "" || text.endsWith("\n"), "a line cut short was left in the log")
          for (const line of text.split("\n").filter((l) => l !== "")) JSON.parse(line)
          return text
        }
        assert.notInclude(wholeLines(), "cut")
        const full = () => {
          throw Object.assign(new Error("no space left on device"), { code: "ENOSPC" })
        }
        yield* countingWrites(w.answers.submit(answer("full1"), "full1"), full)
        assert.include(yield* w.ids("usage_ledger"), "full1")
        assert.notInclude(wholeLines(), "full1")
        // The disk back: answers go out from the log again.
        yield* w.answers.submit(answer("ok2"), "ok2")
        assert.notInclude(yield* w.ids("usage_ledger"), "ok2")
        assert.include(logText(log), `"ok2"`)
        yield* w.close
      }))

    it.live("a read of an answer still in the log has it committed first; settled waits for all", () =>
      Effect.gen(function*() {
        const { file, log } = place()
        const w = yield* open(file, { dir: log, delayMs: hour })
        yield* w.answers.submit(answer("resp_1"), "resp_1")
        yield* w.answers.submit(answer("resp_2"), "resp_2")
        assert.deepStrictEqual(yield* w.ids("responses"), [])
        yield* w.answers.written("resp_2")
        assert.deepStrictEqual(yield* w.ids("responses"), ["resp_1", "resp_2"])
        yield* w.answers.written("resp_unknown")
        yield* w.answers.submit([answer("resp_3")[1]!])
        assert.deepStrictEqual(yield* w.ids("usage_ledger"), ["resp_1", "resp_2"])
        yield* w.answers.settled
        assert.deepStrictEqual(yield* w.ids("usage_ledger"), ["resp_1", "resp_2", "resp_3"])
        yield* w.close
      }))

    it.live("a full batch commits without being asked", () =>
      Effect.gen(function*() {
        const w = yield* twoWaiting({ max: 3 })
        yield* w.answers.submit(answer("r3"))
        // The third filled a batch: committed on a fiber of its own (or the thread, which starts
        // with its first commit), no read asking for it.
        const ids = yield* Effect.repeat(Effect.zipRight(Effect.sleep("1 millis"), w.ids("responses")), { until: (ids) => ids.length === 3, times: 5_000 })
        assert.deepStrictEqual(ids, ["r1", "r2", "r3"])
        yield* w.close
      }))

    it.live("past the backlog an answer waits for its own commit", () =>
      Effect.gen(function*() {
        const w = yield* twoWaiting({ backlog: 2 })
        yield* w.answers.submit(answer("r3"))
        assert.deepStrictEqual(yield* w.ids("responses"), ["r1", "r2", "r3"])
        yield* w.close
      }))

    it.live("the log's files: a new one past its size, those committed removed, the last emptied; closing commits what waits", () =>
      Effect.gen(function*() {
        const { file, log } = place()
        const w = yield* open(file, { dir: log, delayMs: hour, max: 2, fileBytes: 600 })
        for (let i = 0; i < 12; i++) yield* w.answers.submit(answer(`f${i}`))
        yield* w.answers.settled
        const files = fs.readdirSync(log)
        assert.strictEqual(files.length, 1, `left: ${files.join(", ")}`)
        assert.strictEqual(fs.statSync(path.join(log, files[0]!)).size, 0)
        // One answer, short of a batch: it waits (an hour here) until the close commits it.
        yield* w.answers.submit(answer("f12"))
        assert.strictEqual((yield* w.ids("responses")).length, 12)
        yield* w.close
        const again = yield* open(file, { dir: log, delayMs: hour })
        assert.strictEqual((yield* again.ids("responses")).length, 13)
        yield* again.close
        assert.deepStrictEqual(fs.readdirSync(log), [], "closed, the log is gone")
      }))

    it.live("an answer whose rows the database refuses is dropped once a later one commits; the others are written", () =>
      Effect.gen(function*() {
        const { file, log } = place()
        const w = yield* open(file, { dir: log, delayMs: hour })
        const refused: AnswerRows.Row = { table: "usage_ledger", values: { ...answer("resp_bad")[1]!.values, tenant: null } }
        yield* w.answers.submit(answer("resp_1"), "resp_1")
        yield* w.answers.submit([refused])
        yield* w.answers.submit(answer("resp_2"), "resp_2")
        yield* w.answers.settled
        assert.deepStrictEqual(yield* w.ids("usage_ledger"), ["resp_1", "resp_2"])
        assert.deepStrictEqual(yield* w.ids("responses"), ["resp_1", "resp_2"])
        yield* w.close
        // Nothing of it is left to be tried again at the next start.
        const again = yield* open(file, { dir: log, delayMs: hour })
        assert.deepStrictEqual(yield* again.ids("usage_ledger"), ["resp_1", "resp_2"])
        yield* again.close
      }))

    it.live("while the database takes no writes, the rows wait in the log and are tried again until they commit; reads do not wait", () =>
      Effect.gen(function*() {
        const { file, log } = place()
        const failed = yield* Deferred.make<void>()
        const w = yield* open(file, { dir: log, delayMs: hour, retryMs: 5 }, (message) => {
          if (message.includes("takes no writes")) Deferred.unsafeDone(failed, Exit.void)
        })
        // Every commit fails while the watermark's table is away: the database takes no writes.
        yield* w.sql`ALTER TABLE answer_log RENAME TO answer_log_away`
        yield* w.answers.submit(answer("resp_1"), "resp_1")
        assert.include(logText(log), `"resp_1"`)
        // A read asks for the commit, which fails: the read goes on without it.
        const read = yield* Effect.fork(w.answers.written("resp_1"))
        yield* Deferred.await(failed)
        yield* Fiber.join(read)
        assert.deepStrictEqual(yield* w.ids("responses"), [], "the transaction failed whole")
        yield* w.sql`ALTER TABLE answer_log_away RENAME TO answer_log`
        // Nobody asks again: the retry (every 5 ms here) commits them.
        const ids = yield* Effect.repeat(Effect.zipRight(Effect.sleep("5 millis"), w.ids("responses")), { until: (ids) => ids.length > 0, times: 400 })
        assert.deepStrictEqual(ids, ["resp_1"])
        assert.deepStrictEqual(yield* w.ids("usage_ledger"), ["resp_1"])
        yield* w.close
      }))

    it.live("at start-up, a line the process died writing is skipped and rows the database refuses are dropped; the rest commit", () =>
      Effect.gen(function*() {
        const { file, log } = place()
        fs.mkdirSync(log, { recursive: true })
        const line = (s: number, rows: ReadonlyArray<AnswerRows.Row>) => JSON.stringify({ s, r: rows.map((r) => ({ t: r.table, v: r.values })) })
        const refused: AnswerRows.Row = { table: "usage_ledger", values: { ...answer("resp_bad")[1]!.values, tenant: null } }
        fs.writeFileSync(
          path.join(log, "1.log"),
          [line(1, answer("resp_whole")), line(2, [refused]), line(3, answer("resp_after")), line(4, answer("resp_cut")).slice(0, 40)].join("\n")
        )
        const w = yield* open(file, { dir: log, delayMs: hour })
        assert.deepStrictEqual(yield* w.ids("responses"), ["resp_after", "resp_whole"])
        assert.deepStrictEqual(yield* w.ids("usage_ledger"), ["resp_after", "resp_whole"])
        yield* w.close
      }))
  })
}

describe("answers' rows committed on a thread of their own", () => {
  it.live("a thread that cannot open the database: the rows are committed on the connection in context instead, and the log says so", () =>
    Effect.gen(function*() {
      const { file, log } = place()
      const messages: Array<string> = []
      // The thread is given a file that is not there (it never creates one): it stops before it is ready.
      const w = yield* openWith(file, { dir: log, delayMs: hour, file: path.join(path.dirname(file), "missing", "genway.db") }, (m) => messages.push(m))
      // A batch of one: the thread's failure is not taken for the database refusing the rows.
      yield* w.answers.submit(answer("resp_1"), "resp_1")
      yield* w.answers.written("resp_1")
      assert.deepStrictEqual(yield* w.ids("responses"), ["resp_1"])
      assert.isFalse(messages.some((m) => m.includes("dropped")), messages.join("\n"))
      // Later batches go to the connection at once.
      yield* w.answers.submit(answer("resp_2"), "resp_2")
      yield* w.answers.submit(answer("resp_3"), "resp_3")
      yield* w.answers.settled
      assert.deepStrictEqual(yield* w.ids("responses"), ["resp_1", "resp_2", "resp_3"])
      assert.deepStrictEqual(yield* w.ids("usage_ledger"), ["resp_1", "resp_2", "resp_3"])
      assert.strictEqual(messages.filter((m) => m.includes("the commit thread could not open the database")).length, 1)
      yield* w.close
    }))
})

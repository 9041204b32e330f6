/**
 * WAL checkpoints off the event loop (platform/Checkpoints.ts): the gateway's connection never
 * checkpoints by itself while the worker runs; the worker's checkpoint copies every committed page;
 * once the log is long and nearly all copied, the connection copies the rest so that the next write
 * starts the log over; a worker that cannot run hands checkpoints back to the connection (and says
 * why), and so does stopping it; closing waits for the worker even where nothing else holds the
 * process open. The gateway's SQLite layer runs it; `:memory:` does not.
 * Driven by the worker's replies, never by its timer (an hour here) or by sleeps.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { assert, describe, it } from "@effect/vitest"
import Database from "better-sqlite3"
import * as Effect from "effect/Effect"
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import * as Checkpoints from "../src/platform/Checkpoints.js"
import * as Sqlite from "../src/platform/Sqlite.js"

const hour = 60 * 60 * 1000
const here = path.dirname(fileURLToPath(import.meta.url))
const require = createRequire(import.meta.url)

const fileOf = () => path.join(fs.mkdtempSync(path.join(os.tmpdir(), "genway-checkpoints-")), "t.db")

/** A WAL database with a table, as the gateway opens its own. */
const open = (file: string) => {
  const db = new Database(file)
  db.pragma("journal_mode = WAL")
  db.pragma("synchronous = NORMAL")
  db.exec("CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT NOT NULL)")
  return db
}

/** `rows` rows of about 1 KB each, in transactions of 50. */
const write = (db: Database.Database, rows: number) => {
  const insert = db.prepare("INSERT INTO t (body) VALUES (?)")
  const batch = db.transaction((n: number) => {
    for (let i = 0; i < n; i++) insert.run("x".repeat(1000))
  })
  for (let done = 0; done < rows; done += 50) batch(Math.min(50, rows - done))
}

const autocheckpoint = (db: Database.Database) => db.pragma("wal_autocheckpoint", { simple: true }) as number

describe("Checkpoints", () => {
  it("the worker copies the log; the connection never checkpoints meanwhile, and lets a long log start over", async () => {
    const file = fileOf()
    const db = open(file)
    const warnings: Array<string> = []
    const checkpoints = Checkpoints.start(file, db, (m) => warnings.push(m), { intervalMs: hour, restartPages: 100, tailPages: 10 })
    try {
      assert.strictEqual(autocheckpoint(db), 0)
      // About 2,000 pages: past SQLite's own threshold (1,000), which would have checkpointed.
      write(db, 8_000)
      const walBytes = fs.statSync(`${file}-wal`).size
      assert.isAbove(walBytes, 1_000 * 4096)
      const copied = await checkpoints.now()
      assert.isAbove(copied.log, 1_000)
      assert.strictEqual(copied.checkpointed, copied.log)
      // Everything is copied and the log is past `restartPages`: on the worker's report, the
      // connection (in no transaction) finished the checkpoint, and waits for the next report.
      assert.isUndefined(checkpoints.latest())
      // The next write starts the log from its beginning.
      write(db, 10)
      const after = await checkpoints.now()
      assert.isBelow(after.log, 100)
      assert.strictEqual(db.prepare("SELECT COUNT(*) AS n FROM t").get()!["n" as never], 8_010)
      assert.deepStrictEqual(warnings, [])
    } finally {
      await checkpoints.stop()
      db.close()
    }
  })

  it("the connection copies the last pages itself, between transactions, so that the log starts over", async () => {
    const file = fileOf()
    const db = open(file)
    const reader = new Database(file)
    const checkpoints = Checkpoints.start(file, db, () => {}, { intervalMs: hour, restartPages: 100, tailPages: 10 })
    try {
      write(db, 1_000)
      // A reader's snapshot keeps the worker from copying what is written after it.
      reader.exec("BEGIN")
      reader.prepare("SELECT COUNT(*) FROM t").get()
      write(db, 5)
      // The report arrives while the connection is in a transaction: it waits.
      db.exec("BEGIN")
      const partly = await checkpoints.now()
      assert.isAbove(partly.log, 100)
      assert.isBelow(partly.checkpointed, partly.log)
      assert.isAtMost(partly.log - partly.checkpointed, 10)
      assert.strictEqual(checkpoints.latest()?.log, partly.log)
      db.exec("COMMIT")
      reader.exec("COMMIT")
      // Between transactions, the few pages left: copied by the connection, the log starts over.
      checkpoints.between()
      assert.isUndefined(checkpoints.latest())
      write(db, 10)
      assert.isBelow((await checkpoints.now()).log, 100)
    } finally {
      await checkpoints.stop()
      reader.close()
      db.close()
    }
  })

  it("a long log the worker has not copied stays with the worker, up to four times the restart length", async () => {
    for (const [restartPages, left] of [[1_000, true], [400, false]] as const) {
      const file = fileOf()
      const db = open(file)
      const reader = new Database(file)
      const checkpoints = Checkpoints.start(file, db, () => {}, { intervalMs: hour, restartPages, tailPages: 10 })
      try {
        reader.exec("BEGIN")
        reader.prepare("SELECT COUNT(*) FROM t").get()
        // About 2,000 pages that the worker cannot copy while the reader holds its snapshot.
        write(db, 8_000)
        const report = await checkpoints.now()
        assert.isAbove(report.log, 1_600)
        assert.isAbove(report.log - report.checkpointed, 10)
        assert.isBelow(report.log, 4_000)
        if (left) {
          // Under 4 × 1,000 pages: the connection does not stall on copying them.
          assert.strictEqual(checkpoints.latest()?.log, report.log)
        } else {
          // Past 4 × 400 pages: the connection checkpoints what it can, whatever is left.
          assert.isUndefined(checkpoints.latest())
        }
      } finally {
        reader.exec("COMMIT")
        await checkpoints.stop()
        reader.close()
        db.close()
      }
    }
  })

  it("a worker that cannot run hands checkpoints back to the connection, and says why", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "genway-checkpoints-"))
    const file = path.join(dir, "t.db")
    const db = open(file)
    let warn: (message: string) => void = () => {}
    const warned = new Promise<string>((resolve) => (warn = resolve))
    // The worker's own connection needs a file that exists: this one does not.
    const checkpoints = Checkpoints.start(path.join(dir, "missing.db"), db, (m) => warn(m), { intervalMs: hour, restartPages: 100, tailPages: 10 })
    assert.strictEqual(autocheckpoint(db), 0)
    const message = await warned
    assert.match(message, /SQLite checkpoints run on the event loop again: the checkpoint worker (failed|exited)/)
    assert.strictEqual(autocheckpoint(db), 1000)
    assert.isFalse(checkpoints.running())
    assert.strictEqual((await checkpoints.now()).log, -1)
    db.close()
  })

  it("stopping the worker hands checkpoints back to the connection", async () => {
    const file = fileOf()
    const db = open(file)
    const checkpoints = Checkpoints.start(file, db, () => {}, { intervalMs: hour, restartPages: 100, tailPages: 10 })
    assert.strictEqual(autocheckpoint(db), 0)
    await checkpoints.stop()
    assert.isFalse(checkpoints.running())
    assert.strictEqual(autocheckpoint(db), 1000)
    assert.strictEqual((await checkpoints.now()).log, -1)
    db.close()
  })

  it("closing the layer in a process with nothing else to do waits for the worker, then ends normally", () => {
    // Waiting on a worker that does not hold the process open would leave the close unsettled:
    // Node ends such a process with code 13 before its database is closed.
    const script = [
      "import * as Effect from 'effect/Effect'",
      "import * as Layer from 'effect/Layer'",
      "import * as SqlClient from '@effect/sql/SqlClient'",
      "import * as Sqlite from './src/platform/Sqlite.ts'",
      "await Effect.runPromise(Effect.scoped(Effect.gen(function*() {",
      `  const context = yield* Layer.build(Sqlite.layer(${JSON.stringify(fileOf())}))`,
      "  yield* Effect.provide(Effect.flatMap(SqlClient.SqlClient, (sql) => sql`SELECT 1`), context)",
      "})))",
      "console.log('closed')"
    ].join("\n")
    const child = spawnSync(process.execPath, ["--import", require.resolve("tsx/esm"), "--input-type=module", "-e", script], {
      cwd: path.join(here, ".."),
      encoding: "utf8"
    })
    assert.strictEqual(child.status, 0, child.stderr)
    assert.strictEqual(child.stdout.trim(), "closed")
  })

  it.effect("the gateway's SQLite layer runs the worker; an in-memory database has none", () =>
    Effect.gen(function*() {
      const onFile = yield* Effect.flatMap(SqlClient.SqlClient, (sql) => sql<{ wal_autocheckpoint: number }>`PRAGMA wal_autocheckpoint`).pipe(
        Effect.provide(Sqlite.layer(fileOf()))
      )
      assert.strictEqual(onFile[0]!.wal_autocheckpoint, 0)
      const inMemory = yield* Effect.flatMap(SqlClient.SqlClient, (sql) => sql<{ wal_autocheckpoint: number }>`PRAGMA wal_autocheckpoint`).pipe(
        Effect.provide(Sqlite.layer(":memory:"))
      )
      assert.strictEqual(inMemory[0]!.wal_autocheckpoint, 1000)
    }))
})

/**
 * The real `genway` process, as a new user meets it: starting, failing to start (a port in use, a
 * data directory in use, a malformed models file), stopping with Ctrl-C, and the CLI's mistakes —
 * each one a clear line, never a stack trace. Wall-clock waits are bounded polls.
 */
import { assert, describe, it } from "@effect/vitest"
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { freePort, tempDir } from "./harness.js"
import { bin, until } from "./processes.js"

const token = "process-test-token"

interface Run {
  readonly child: ReturnType<typeof spawn>
  readonly output: () => string
  readonly exit: Promise<number | null>
}

const run = (args: ReadonlyArray<string>, env: Record<string, string>, nodeArgs: ReadonlyArray<string> = []): Run => {
  const child = spawn(process.execPath, [...nodeArgs, bin, ...args], {
    env: { ...process.env, GATEWAY_DATABASE_URL: "", GATEWAY_API_KEYS: token, HOST: "127.0.0.1", NO_COLOR: "", ...env },
    stdio: ["ignore", "pipe", "pipe"]
  })
  let output = ""
  child.stdout!.on("data", (d) => (output += d))
  child.stderr!.on("data", (d) => (output += d))
  // "close": the process has exited and its stdout and stderr have been read to the end.
  const exit = new Promise<number | null>((resolve) => child.once("close", (code) => resolve(code)))
  return { child, output: () => output, exit }
}


/** No stack frame, no source path, no JSON dump of an error. */
const assertNoStack = (text: string) => {
  assert.notMatch(text, /^\s+at /m, text)
  assert.notMatch(text, /\.ts:\d+/, text)
  assert.notInclude(text, `{"_tag"`, text)
}

describe("genway serve", () => {
  it("refuses a port in use and a data directory in use; stops on SIGINT with exit 0", { timeout: 240_000 }, async () => {
    const dataDir = tempDir()
    const port = await freePort()
    const first = run(["serve"], { GATEWAY_DATA_DIR: dataDir, PORT: String(port) })
    await until("the first gateway", () => fetch(`http://127.0.0.1:${port}/healthz`).then((r) => (r.ok ? true : undefined)))
    assert.isTrue(fs.existsSync(path.join(dataDir, "genway.lock")))

    const otherPort = await freePort()
    const samePort = run(["serve"], { GATEWAY_DATA_DIR: tempDir(), PORT: String(port) })
    const sameDir = run(["serve"], { GATEWAY_DATA_DIR: dataDir, PORT: String(otherPort) })
    assert.strictEqual(await samePort.exit, 1)
    assert.include(samePort.output(), `port ${port} is in use`)
    assertNoStack(samePort.output())
    assert.strictEqual(await sameDir.exit, 1)
    assert.include(sameDir.output(), `is using the data directory ${dataDir}`)
    assertNoStack(sameDir.output())
    // The refused process left the running one alone.
    assert.strictEqual((await fetch(`http://127.0.0.1:${port}/healthz`)).status, 200)

    first.child.kill("SIGINT")
    assert.strictEqual(await first.exit, 0)
    assert.match(first.output(), /stopped/)
    assertNoStack(first.output())
    assert.isFalse(fs.existsSync(path.join(dataDir, "genway.lock")))
  })

  it("sets the heap policy: 50 % growth and 64 MB of room by default, GATEWAY_HEAP_ROOM_MB=0 the percent alone, GATEWAY_HEAP_GROWING_PERCENT=0 V8's rule, node's own flag wins", { timeout: 240_000 }, async () => {
    // One gateway at a time, each stopped whatever happens to it.
    const heapLine = async (env: Record<string, string>, nodeArgs: ReadonlyArray<string> = []) => {
      const r = run(["serve"], { GATEWAY_DATA_DIR: tempDir(), PORT: String(await freePort()), ...env }, nodeArgs)
      try {
        await until("the gateway's heap line", async () => (r.output().includes("heap: ") || r.child.exitCode !== null ? true : undefined))
        r.child.kill("SIGINT")
        assert.strictEqual(await r.exit, 0, r.output())
        return r.output().split("\n").find((l) => l.includes("heap: ")) ?? r.output()
      } finally {
        r.child.kill("SIGKILL")
      }
    }
    assert.include(
      await heapLine({}),
      "heap: a full collection once the old generation grows 50 % past its live size; while full collections come less than 2 s apart, not before it reaches 64 MB (GATEWAY_HEAP_GROWING_PERCENT, GATEWAY_HEAP_ROOM_MB)"
    )
    assert.include(await heapLine({ GATEWAY_HEAP_ROOM_MB: "0" }), "heap: a full collection once the old generation grows 50 % past its live size (GATEWAY_HEAP_GROWING_PERCENT)")
    assert.include(await heapLine({ GATEWAY_HEAP_GROWING_PERCENT: "" }), "grows 50 % past its live size")
    assert.include(await heapLine({ GATEWAY_HEAP_GROWING_PERCENT: "0" }), "heap: V8's own growing rule (GATEWAY_HEAP_GROWING_PERCENT=0)")
    assert.include(await heapLine({}, ["--heap-growing-percent=20"]), "heap: node's --heap-growing-percent=20 (GATEWAY_HEAP_GROWING_PERCENT not applied)")
  })

  it("a malformed models file is one line naming the entry, the field and the expectation", { timeout: 120_000 }, async () => {
    const dir = tempDir()
    const file = path.join(dir, "models.json")
    fs.writeFileSync(file, JSON.stringify({ "vendor-b/vid2.5-t2v-preview": { poll: { every: ["1 second"] } } }))
    const r = run(["serve"], { GATEWAY_DATA_DIR: dir, PORT: String(await freePort()), GATEWAY_MODELS_FILE: file })
    assert.strictEqual(await r.exit, 1)
    const lines = r.output().split("\n").filter((l) => l.includes("GATEWAY_MODELS_FILE"))
    assert.strictEqual(lines.length, 1, r.output())
    assert.include(lines[0], `entry "vendor-b/vid2.5-t2v-preview", field poll.every must be a list of two durations`)
    assertNoStack(r.output())
  })
})

describe("genway CLI", () => {
  it("mistakes are one line and exit 1; help is plain text when piped and lists subcommands", { timeout: 120_000 }, async () => {
    const env = { GATEWAY_DATA_DIR: tempDir() }
    const [bogus, revoke, help] = [run(["keys", "bogus"], env), run(["keys", "revoke", "key_nope"], env), run(["keys", "--help"], env)]
    assert.strictEqual(await bogus.exit, 1)
    assert.include(bogus.output(), `unknown command "genway keys bogus"; use one of: genway keys create, genway keys list, genway keys update, genway keys rotate, genway keys revoke`)
    assertNoStack(bogus.output())
    assert.strictEqual(await revoke.exit, 1)
    assert.include(revoke.output(), "genway: no active key key_nope")
    assert.include(revoke.output(), `database: SQLite ${path.join(env.GATEWAY_DATA_DIR, "genway.db")}`)
    assertNoStack(revoke.output())
    assert.strictEqual(await help.exit, 0)
    assert.notInclude(help.output(), "\x1b[")
    assert.include(help.output(), "keys create, keys list, keys update, keys rotate, keys revoke")
  })
})

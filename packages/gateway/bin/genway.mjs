#!/usr/bin/env node
// The `genway` command. It runs the compiled gateway (one module in the package's build cache, see
// build.mjs), building it first when it is missing or older than its inputs, in this process: no
// second process, no TypeScript compiler in memory. `GENWAY_FROM_SOURCE=1` runs the TypeScript sources through tsx
// instead (development: stack traces point into the sources); the child handles Ctrl-C and this
// wrapper passes its exit code on.
import { spawn } from "node:child_process"
import { createRequire } from "node:module"
import * as os from "node:os"
import { fileURLToPath, pathToFileURL } from "node:url"

if (process.env.GENWAY_FROM_SOURCE === "1") {
  const require = createRequire(import.meta.url)
  const main = fileURLToPath(new URL("../src/main.ts", import.meta.url))
  // Node's own options reach the gateway's process (a heap flag, say), but not the inspector's: two
  // processes cannot listen on one debugging port.
  const nodeOptions = process.execArgv.filter((a) => !/^--inspect/.test(a))
  const child = spawn(process.execPath, [...nodeOptions, "--import", require.resolve("tsx/esm"), main, ...process.argv.slice(2)], {
    stdio: "inherit"
  })
  for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => child.kill(signal))
  child.on("exit", (code, signal) => process.exit(code ?? (signal === null ? 1 : 128 + (os.constants.signals[signal] ?? 0))))
} else {
  const { ensureBuilt } = await import("./build.mjs")
  let compiled
  try {
    compiled = await ensureBuilt()
  } catch (error) {
    // One line, as the gateway's own start-up failures (esbuild has printed a compile error above it).
    console.error(`genway: ${error instanceof Error ? error.message.split("\n")[0] : String(error)}`)
    process.exit(1)
  }
  await import(pathToFileURL(compiled).href)
}

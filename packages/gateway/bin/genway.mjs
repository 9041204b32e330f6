#!/usr/bin/env node
// Runs the gateway CLI from source through tsx, so no build step is needed. The child handles
// Ctrl-C (a graceful stop); this wrapper only waits and passes its exit code on.
import { spawn } from "node:child_process"
import { createRequire } from "node:module"
import { fileURLToPath } from "node:url"

const require = createRequire(import.meta.url)
const main = fileURLToPath(new URL("../src/main.ts", import.meta.url))
const child = spawn(process.execPath, ["--import", require.resolve("tsx/esm"), main, ...process.argv.slice(2)], {
  stdio: "inherit"
})
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => child.kill(signal))
child.on("exit", (code, signal) => process.exit(code ?? (signal === null ? 1 : 128 + 2)))

#!/usr/bin/env node
// Runs the gateway CLI from source through tsx, so no build step is needed.
import { spawnSync } from "node:child_process"
import { createRequire } from "node:module"
import { fileURLToPath } from "node:url"

const require = createRequire(import.meta.url)
const main = fileURLToPath(new URL("../src/main.ts", import.meta.url))
const result = spawnSync(process.execPath, ["--import", require.resolve("tsx/esm"), main, ...process.argv.slice(2)], {
  stdio: "inherit"
})
process.exit(result.status ?? 1)

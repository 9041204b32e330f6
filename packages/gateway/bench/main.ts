/** Running a bench script on its own: `npx tsx bench/<script>.ts …` prints its result as one JSON line. */
import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as path from "node:path"
import { pathToFileURL } from "node:url"

/** Whether the module at `url` is the script node was started with. */
export const isMain = (url: string): boolean => process.argv[1] !== undefined && url === pathToFileURL(process.argv[1]).href

/** Prints the result as JSON and exits 0, or prints the error and exits 1. */
export const printAndExit = (result: Promise<unknown>): void => {
  result.then(
    (value) => {
      console.log(JSON.stringify(value))
      process.exit(0)
    },
    (error) => {
      console.error(error)
      process.exit(1)
    }
  )
}

/**
 * The node arguments that run `genway <args>` of the gateway package in `gatewayDir` as one process,
 * as deployed: the compiled gateway (`dist/genway.mjs`, built first when stale) through its `bin`.
 * A checkout without the compiled form (an earlier build given as `BENCH_BASELINE_DIR`), or
 * `GENWAY_FROM_SOURCE=1`, runs the TypeScript sources through tsx, still in one process, so CPU
 * and memory read from its pid are the gateway's own.
 */
export const genwayArgs = async (gatewayDir: string, args: ReadonlyArray<string>): Promise<Array<string>> => {
  const build = path.join(gatewayDir, "bin", "build.mjs")
  if (process.env.GENWAY_FROM_SOURCE !== "1" && fs.existsSync(build)) {
    const { ensureBuilt } = (await import(pathToFileURL(build).href)) as { ensureBuilt: () => Promise<string> }
    return [await ensureBuilt(), ...args]
  }
  const tsx = createRequire(path.join(gatewayDir, "package.json")).resolve("tsx/esm")
  return ["--import", tsx, path.join(gatewayDir, "src", "main.ts"), ...args]
}

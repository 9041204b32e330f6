/**
 * `pnpm bench`: runs the benchmarks and prints their numbers as JSON lines. Pass names to run a
 * subset: `pnpm bench creates workers`.
 */
import * as Tasks from "./tasks.js"

const all: Record<string, () => Promise<unknown>> = {
  creates: () => Tasks.creates(),
  "creates-only": () => Tasks.creates(10_000, 32, false),
  workers: () => Tasks.workers(),
  big: () => Tasks.bigBodies(),
  ttfb: async () => (await import("./ttfb.js")).run()
}

const wanted = process.argv.slice(2).filter((a) => a in all)
for (const name of wanted.length > 0 ? wanted : Object.keys(all)) {
  try {
    console.log(JSON.stringify(await all[name]!()))
  } catch (e) {
    console.log(JSON.stringify({ bench: name, error: String(e) }))
  }
}
process.exit(0)

/**
 * `pnpm bench`: the side-by-side benchmark of DESIGN.md §7 (bench/side.ts), printed as tables
 * with the ratios; `pnpm bench --quick` is the same with shorter phases (without mirror);
 * `pnpm bench e2 polls` runs parts of it (e2, create, e1, polls, mirror). The older single
 * benchmarks print JSON lines: `pnpm bench creates workers`.
 */
// The gateway's modules load only for the benchmarks that run it in this process.
const tasks = () => import("./tasks.js")

const all: Record<string, () => Promise<unknown>> = {
  creates: async () => (await tasks()).creates(),
  "creates-only": async () => (await tasks()).creates(10_000, 32, false),
  workers: async () => (await tasks()).workers(Number(process.env.BENCH_WORKERS_COUNT ?? 10_000), Number(process.env.BENCH_WORKERS_SECONDS ?? 30)),
  big: async () => (await tasks()).bigBodies(),
  ttfb: async () => (await import("./ttfb.js")).run()
}

const args = process.argv.slice(2)
const wanted = args.filter((a) => a in all)
if (wanted.length === 0) {
  const { run } = await import("./side.js")
  const only = args.filter((a) => ["e2", "create", "e1", "polls", "mirror"].includes(a))
  console.log(await run({ quick: args.includes("--quick"), only }))
  process.exit(0)
}
for (const name of wanted) {
  try {
    console.log(JSON.stringify(await all[name]!()))
  } catch (e) {
    console.log(JSON.stringify({ bench: name, error: String(e) }))
  }
}
process.exit(0)

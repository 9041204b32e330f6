/**
 * `genway usage [--from --to --group-by model|key|day|tenant --tenant T] [--csv]`: the usage ledger
 * (DESIGN.md §10) read from the database like the server does, all tenants unless `--tenant`;
 * a table, or CSV with a header row.
 */
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as Clock from "effect/Clock"
import * as Console from "effect/Console"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Usage from "../ledger/Usage.js"
import * as Config from "../platform/Config.js"
import * as Database from "../platform/Database.js"
import * as Shared from "./Shared.js"

/** A mistake in the command line; printed as its message alone. */
export class UsageCliError extends Data.TaggedError("UsageCliError")<{ readonly message: string }> {
  constructor(args: { readonly message: string }) {
    super(args)
    this.stack = `Error: ${args.message}`
  }
}

const columns = [
  "seconds", "images", "input_tokens", "output_tokens", "cost_usd", "reserved_usd", "completed", "failed", "canceled", "requests"
] as const

const cells = (t: Usage.Totals): Array<string> => [
  String(t.units.seconds), String(t.units.images), String(t.units.input_tokens), String(t.units.output_tokens),
  String(t.cost_usd), String(t.reserved_usd),
  String(t.counts.completed), String(t.counts.failed), String(t.counts.canceled), String(t.counts.requests)
]

const csvCell = (s: string) => (/[",\n\r]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s)

/** The rows of a report: one per group (or one `total` row without grouping). */
const rows = (report: Usage.Report): Array<Array<string>> =>
  report.groups !== undefined ? report.groups.map((g) => [g.key, ...cells(g)]) : [["total", ...cells(report.total)]]

/** A report as CSV: a header row, then one row per group (or the total). */
export const toCsv = (report: Usage.Report, groupBy: string | undefined): string =>
  [[groupBy ?? "scope", ...columns], ...rows(report)].map((r) => r.map(csvCell).join(",")).join("\n") + "\n"

/** A report as an aligned table, with a total line under groups. */
export const toTable = (report: Usage.Report, groupBy: string | undefined): string => {
  const body = rows(report)
  if (report.groups !== undefined) body.push(["TOTAL", ...cells(report.total)])
  const all = [[groupBy ?? "scope", ...columns], ...body]
  const widths = all[0]!.map((_, i) => Math.max(...all.map((r) => r[i]!.length)))
  return `${report.from} .. ${report.to} (USD)\n` + all.map((r) => r.map((c, i) => c.padEnd(widths[i]!)).join("  ").trimEnd()).join("\n") + "\n"
}

const text = (name: string, description: string) => Options.text(name).pipe(Options.optional, Options.withDescription(description))

const usageLayer = Database.layer.pipe(Layer.provideMerge(Shared.announceDatabase), Layer.provideMerge(Config.layer))

export const command = Command.make(
  "usage",
  {
    from: text("from", "start, an ISO 8601 date or time (UTC); default the start of this month"),
    to: text("to", "end, an ISO 8601 date (inclusive) or time (exclusive); default the end of this month"),
    groupBy: Options.choice("group-by", ["model", "key", "day", "tenant"]).pipe(Options.optional, Options.withDescription("one row per model, key, day or tenant")),
    tenant: text("tenant", "one tenant only (default: all tenants)"),
    csv: Options.boolean("csv").pipe(Options.withDescription("print CSV with a header row"))
  },
  (flags) =>
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const span = Usage.window(Option.getOrUndefined(flags.from), Option.getOrUndefined(flags.to), now)
      if (Either.isLeft(span)) return yield* new UsageCliError({ message: `--${span.left.param} ${span.left.message}` })
      const groupBy = Option.getOrUndefined(flags.groupBy)
      const report = yield* Usage.report({ ...span.right, tenant: Option.getOrUndefined(flags.tenant), groupBy })
      yield* Console.log((flags.csv ? toCsv(report, groupBy) : toTable(report, groupBy)).trimEnd())
    }).pipe(Effect.provide(usageLayer))
).pipe(Command.withDescription("Usage and cost from the ledger: all tenants by default; a table, or CSV with --csv."))

/**
 * Entry point of the `genway` command.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as Effect from "effect/Effect"
import * as Cli from "./cli/Cli.js"
import * as Report from "./cli/Report.js"

// Failures are printed by `Report` (one line each); Ctrl-C interrupts, shuts down and exits 0.
Report.onRepeatedSignals()
Cli.run(process.argv).pipe(
  Report.report,
  Report.withPlainConsole,
  Effect.provide(NodeContext.layer),
  NodeRuntime.runMain({ disableErrorReporting: true })
)

// vendor-d's emulator in a process of its own (the E1 time-to-first-byte phase): an upstream is
// never in its client's process, and one that is answers without a single cross-process wake-up,
// which no gateway can match (bench/JOURNAL.md, "E1 against a floor"). Prints
// `{"port", "baseUrl", "apiKey"}` on its first line; serves until killed.
import { Emulator } from "@genway/adapter-vendor-d/testing"
import * as Effect from "effect/Effect"

const streamDelayMs = Number(process.env.EMULATOR_STREAM_DELAY_MS ?? "5")

Effect.runFork(Effect.scoped(Effect.gen(function*() {
  const emulator = yield* Emulator.make({ streamDelayMs })
  console.log(JSON.stringify({ port: Number(new URL(emulator.baseUrl).port), baseUrl: emulator.baseUrl, apiKey: emulator.apiKey }))
  return yield* Effect.never
})))

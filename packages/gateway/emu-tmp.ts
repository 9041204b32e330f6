import { Emulator } from "@genway/adapter-vendor-d/testing"
import * as Effect from "effect/Effect"
Effect.runFork(Effect.scoped(Effect.gen(function*() {
  const e = yield* Emulator.make({ streamDelayMs: Number(process.env.DELAY ?? 0) })
  console.log(JSON.stringify({ baseUrl: e.baseUrl, apiKey: e.apiKey }))
  yield* Effect.never
})))

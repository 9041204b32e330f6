import { FetchHttpClient } from "@effect/platform"
import { it } from "@effect/vitest"
import { ConfigCases, ContractCases } from "@genway/adapter-kit/testing"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { manifest } from "../src/index.js"
import { Emulator } from "../src/testing/index.js"
import { t2v, task } from "./fixtures.js"

const setup = Effect.gen(function*() {
  const emulator = yield* Emulator.make()
  const built = yield* ConfigCases.read(manifest.tasks!, { VENDOR_C_BASE_URL: emulator.baseUrl, VENDOR_C_ACCESS_KEY: emulator.accessKey, VENDOR_C_SECRET_KEY: emulator.secretKey })
  return {
    adapter: Option.getOrThrow(built),
    inject: (kind: "submit" | "poll", fault: Emulator.Fault, times?: number) => emulator.inject(kind, fault, times),
    acceptedSubmits: emulator.acceptedSubmits,
    hidden: [emulator.accessKey, emulator.secretKey, emulator.baseUrl, new URL(emulator.baseUrl).host]
  }
}).pipe(Effect.provide(FetchHttpClient.layer))

for (
  const c of ContractCases.cases<Emulator.Fault>({
    setup,
    task: () => task(t2v, { prompt: "a kite" }),
    faults: {
      rateLimited: (seconds) => ({ _tag: "RateLimited", retryAfterSeconds: seconds }),
      unavailable: { _tag: "Unavailable" },
      malformedJson: { _tag: "MalformedJson" },
      unknownState: { _tag: "ReportStatus" },
      refuse: (message) => ({ _tag: "HttpError", status: 400, code: 1201, message }),
      failTask: (message) => ({ _tag: "FailTask", message })
    }
  })
) it.scoped(`vendor-c contract: ${c.name}`, () => c.run)

import { FetchHttpClient } from "@effect/platform"
import { it } from "@effect/vitest"
import { ConfigCases, ContractCases } from "@genway/adapter-kit/testing"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { manifest } from "../src/index.js"
import { Emulator } from "../src/testing/index.js"
import { spark, task } from "./fixtures.js"

const setup = Effect.gen(function*() {
  const emulator = yield* Emulator.make()
  const built = yield* ConfigCases.read(manifest.tasks!, { VENDOR_E_BASE_URL: emulator.baseUrl, VENDOR_E_API_KEY: emulator.apiKey })
  return {
    adapter: Option.getOrThrow(built),
    inject: (kind: "submit" | "poll", fault: Emulator.Fault, times?: number) => emulator.inject(kind, fault, times),
    acceptedSubmits: emulator.acceptedSubmits,
    hidden: [emulator.apiKey, emulator.baseUrl, new URL(emulator.baseUrl).host]
  }
}).pipe(Effect.provide(FetchHttpClient.layer))

for (
  const c of ContractCases.cases<Emulator.Fault>({
    setup,
    task: () => task(spark, { prompt: "a lake" }),
    faults: {
      rateLimited: (seconds) => ({ _tag: "RateLimited", retryAfterSeconds: seconds }),
      unavailable: { _tag: "Unavailable" },
      malformedJson: { _tag: "MalformedJson" },
      unknownState: { _tag: "ReportStatus" },
      refuse: (detail) => ({ _tag: "HttpError", status: 400, detail, param: "prompt" }),
      failTask: (detail) => ({ _tag: "FailTask", detail })
    }
  })
) it.scoped(`vendor-e contract: ${c.name}`, () => c.run)

import { it } from "@effect/vitest"
import { ContractCases } from "@genway/adapter-kit/testing"
import { manifest } from "../src/index.js"
import { Emulator } from "../src/testing/index.js"
import { spark, task } from "./fixtures.js"

/** vendor-e as the gateway builds it: its manifest, from its variables, against the emulator. */
const setup = ContractCases.subject<Emulator.Fault, Emulator.Emulator>(Emulator.make(), manifest.tasks!, (e) => ({ VENDOR_E_BASE_URL: e.baseUrl, VENDOR_E_API_KEY: e.apiKey }))

for (
  const c of ContractCases.cases<Emulator.Fault>({
    setup,
    task: () => task(spark, { prompt: "a lake" }),
    faults: {
      rateLimited: (seconds) => ({ _tag: "RateLimited", retryAfterSeconds: seconds }),
      unavailable: { _tag: "Unavailable" },
      unavailableFor: (seconds) => ({ _tag: "Unavailable", retryAfterSeconds: seconds }),
      serverError: { _tag: "HttpError", status: 500, detail: "oops" },
      malformedJson: { _tag: "MalformedJson" },
      unknownState: { _tag: "ReportStatus" },
      refuse: (detail) => ({ _tag: "HttpError", status: 400, detail, param: "prompt" }),
      failTask: (detail) => ({ _tag: "FailTask", detail }),
      drop: (afterAccept) => ({ _tag: "Drop", afterAccept })
    }
  })
) it.scoped(`vendor-e contract: ${c.name}`, () => c.run, 30_000)

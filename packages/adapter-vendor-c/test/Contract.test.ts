import { it } from "@effect/vitest"
import { ContractCases } from "@genway/adapter-kit/testing"
import { manifest } from "../src/index.js"
import { Emulator } from "../src/testing/index.js"
import { t2v, task } from "./fixtures.js"

/** vendor-c as the gateway builds it: its manifest, from its variables, against the emulator. */
const setup = ContractCases.subject<Emulator.Fault, Emulator.Emulator>(Emulator.make(), manifest.tasks!, (e) => ({ VENDOR_C_BASE_URL: e.baseUrl, VENDOR_C_ACCESS_KEY: e.accessKey, VENDOR_C_SECRET_KEY: e.secretKey }))

for (
  const c of ContractCases.cases<Emulator.Fault>({
    setup,
    task: () => task(t2v, { prompt: "a kite" }),
    faults: {
      rateLimited: (seconds) => ({ _tag: "RateLimited", retryAfterSeconds: seconds }),
      unavailable: { _tag: "Unavailable" },
      unavailableFor: (seconds) => ({ _tag: "Unavailable", retryAfterSeconds: seconds }),
      serverError: { _tag: "HttpError", status: 500, code: 1000, message: "oops" },
      malformedJson: { _tag: "MalformedJson" },
      unknownState: { _tag: "ReportStatus" },
      refuse: (message) => ({ _tag: "HttpError", status: 400, code: 1201, message }),
      failTask: (message) => ({ _tag: "FailTask", message }),
      drop: (afterAccept) => ({ _tag: "Drop", afterAccept })
    }
  })
) it.scoped(`vendor-c contract: ${c.name}`, () => c.run, 30_000)

import { it } from "@effect/vitest"
import { ContractCases } from "@genway/adapter-kit/testing"
import { manifest } from "../src/index.js"
import { Emulator } from "../src/testing/index.js"
import { task } from "./fixtures.js"

/** vendor-d as the gateway builds it: its manifest, from its variables, against the emulator. */
const setup = ContractCases.subject<Emulator.Fault, Emulator.Emulator>(Emulator.make(), manifest.tasks!, (e) => ({ VENDOR_D_BASE_URL: e.baseUrl, VENDOR_D_API_KEY: e.apiKey }))

for (
  const c of ContractCases.cases<Emulator.Fault>({
    setup,
    task: () => task({ prompt: "a kite" }),
    faults: {
      rateLimited: (seconds) => ({ _tag: "RateLimited", retryDelaySeconds: seconds }),
      unavailable: { _tag: "Unavailable" },
      serverError: { _tag: "HttpError", status: 500, statusName: "INTERNAL", message: "oops" },
      malformedJson: { _tag: "MalformedJson" },
      unknownState: { _tag: "UnknownStatus" },
      refuse: (message) => ({ _tag: "HttpError", status: 400, statusName: "INVALID_ARGUMENT", message }),
      failTask: (message) => ({ _tag: "FailTask", message }),
      drop: (afterAccept) => ({ _tag: "Drop", afterAccept })
    }
  })
) it.scoped(`vendor-d contract: ${c.name}`, () => c.run, 30_000)

/**
 * vendor-e models (G3, G8). Protocol "task-info": the vendor speaks SPEC.md's own task protocol,
 * so the flat body is forwarded unchanged and no field mapping is needed.
 */
import type { ModelEntry } from "@genway/core"
import * as Schema from "effect/Schema"
import * as F from "../Fields.js"
import * as Docs from "./docs.js"
import { SMALL_BODY, videoPoll } from "./shared.js"

/**
 * Create body of G3 and G8, as vendor-e takes it (UPSTREAMS.md). Genway's decision: SPEC.md
 * shows no create body for these models.
 */
const sparkRequest = F.described(Schema.Struct({
  prompt: F.requiredText(2000),
  negative_prompt: Schema.optional(F.text(500)),
  size: Schema.optional(F.oneOf("1920*1080", "1080*1920", "1440*1440", "1632*1248", "1248*1632")),
  duration: Schema.optional(F.intOneOf(5, 10, 15)),
  shot_type: Schema.optional(F.oneOf("single", "multi")),
  audio: F.optionalNullable(F.bool),
  audio_url: F.optionalNullable(F.url),
  prompt_extend: Schema.optional(F.bool),
  seed: Schema.optional(F.seed)
}), Docs.spark, Docs.sparkExample)

const sparkEntry = (model: string, endpoint: string): ModelEntry.ModelEntry<typeof sparkRequest.Type> => ({
  id: `vendor-e/${model}`,
  vendor: "vendor-e",
  kind: "task",
  model,
  endpoints: [endpoint],
  summary: "Text-to-video task",
  path: `/vendors/vendor-e/v1/${model}/generation`,
  request: sparkRequest,
  rules: [],
  images: [],
  result: "videos",
  upstream: { protocol: "task-info", operation: "generation", model, path: "/vendors/vendor-e/v1/{model}/generation" },
  poll: videoPoll,
  retention: null,
  mirror: true,
  stage: "ga",
  createIncludesStatus: false,
  maxBodyBytes: SMALL_BODY,
  billing: { unit: "seconds", field: "duration", default: 5 }
})

/** G3: text-to-video. The create body is Genway's decision (SPEC.md shows only the retrieval). */
export const vid25T2vSpark = sparkEntry("vid2.5-t2v-spark", "G3")

/** G8: text-to-video. The create body is Genway's decision (SPEC.md shows only the retrieval). */
export const vid26T2vSpark = sparkEntry("vid2.6-t2v-spark", "G8")

/** Every vendor-e entry, in SPEC.md order. */
export const vendorE: ReadonlyArray<ModelEntry.ModelEntry> = [vid25T2vSpark, vid26T2vSpark]

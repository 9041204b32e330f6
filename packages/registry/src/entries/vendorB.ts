/**
 * vendor-b models (SPEC.md §4.4–4.7, G4–G6). Protocol "async-task": the adapter nests the body
 * into `input`/`parameters` as each entry's `upstream` mapping says.
 */
import type { ModelEntry } from "@genway/core"
import * as Schema from "effect/Schema"
import * as F from "../Fields.js"
import { SMALL_BODY, videoPoll } from "./shared.js"

/** E4: text-to-video (SPEC.md §4.5). */
export const vid25T2vPreview: ModelEntry.ModelEntry = {
  id: "vendor-b/vid2.5-t2v-preview",
  vendor: "vendor-b",
  kind: "task",
  model: "vid2.5-t2v-preview",
  endpoints: ["E4"],
  summary: "Text-to-video task",
  path: "/vendors/vendor-b/v1/vid2.5-t2v-preview/generation",
  request: Schema.Struct({
    prompt: F.requiredText(2000),
    negative_prompt: Schema.optional(F.text(500)),
    audio: F.optionalNullable(F.bool),
    audio_url: F.optionalNullable(F.url),
    size: Schema.optional(
      F.oneOf(
        "832*480", "480*832", "624*624",
        "1280*720", "720*1280", "960*960", "1088*832", "832*1088",
        "1920*1080", "1080*1920", "1440*1440", "1632*1248", "1248*1632"
      )
    ),
    duration: Schema.optional(F.intOneOf(5, 10)),
    prompt_extend: Schema.optional(F.bool),
    seed: Schema.optional(F.seed)
  }),
  rules: [],
  images: [],
  result: "videos",
  upstream: {
    protocol: "async-task",
    operation: "video-synthesis",
    model: "vid2.5-t2v-preview",
    input: ["prompt", "negative_prompt", "audio_url"],
    parameters: ["size", "duration", "prompt_extend", "seed", "audio"]
  },
  poll: videoPoll,
  retention: null,
  mirror: true,
  stage: "preview",
  createIncludesStatus: false,
  maxBodyBytes: SMALL_BODY
}

/** Every vendor-b entry. */
export const vendorB: ReadonlyArray<ModelEntry.ModelEntry> = [vid25T2vPreview]

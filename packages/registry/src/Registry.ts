/**
 * The registry: every model as a data entry, looked up by path or model name, with per-deployment
 * overrides (upstream model id, enabled, poll cadence, retention) applied on top.
 */
import type { ModelEntry } from "@genway/core"
import * as Context from "effect/Context"
import * as Layer from "effect/Layer"
import { reel, responses } from "./entries/vendorA.js"
import {
  vid21Kf2vPlus,
  vid21VacePlus,
  vid22I2vPlus,
  vid25I2vPreview,
  vid25T2vPreview,
  vid26T2i,
  vid2Image
} from "./entries/vendorB.js"
import { clipV25TurboTextToVideo, clipV26ImageToVideo } from "./entries/vendorC.js"
import { film, film31Fast, imageModel25FlashImagePreview } from "./entries/vendorD.js"
import { vid25T2vSpark, vid26T2vSpark } from "./entries/vendorE.js"

/** Every entry Genway ships, in SPEC.md order (E1–E8, then G1–G8). */
export const entries: ReadonlyArray<ModelEntry.ModelEntry> = [
  imageModel25FlashImagePreview, // E1
  responses, // E2
  vid21VacePlus, // E3
  vid25T2vPreview, // E4
  vid25I2vPreview, // E5
  vid22I2vPlus, // E6
  reel, // E7
  clipV26ImageToVideo, // E8
  film31Fast, // G1
  film, // G2
  vid25T2vSpark, // G3
  vid26T2i, // G4
  vid21Kf2vPlus, // G5
  vid2Image, // G6
  clipV25TurboTextToVideo, // G7
  vid26T2vSpark // G8
]

/** A deployment's changes to one entry (from `GATEWAY_MODELS_FILE`). */
export interface EntryOverride {
  readonly upstreamModel?: string
  readonly enabled?: boolean
  readonly poll?: Partial<ModelEntry.PollPolicy>
  readonly retention?: string | null
  readonly mirror?: boolean
}

/** Applies overrides by entry id; disabled entries are dropped. Unknown ids are reported. */
export const applyOverrides = (
  base: ReadonlyArray<ModelEntry.ModelEntry>,
  overrides: Readonly<Record<string, EntryOverride>>
): { readonly entries: ReadonlyArray<ModelEntry.ModelEntry>; readonly unknown: ReadonlyArray<string> } => {
  const ids = new Set(base.map((e) => e.id))
  const unknown = Object.keys(overrides).filter((id) => !ids.has(id))
  const out: Array<ModelEntry.ModelEntry> = []
  for (const entry of base) {
    const o = overrides[entry.id]
    if (o === undefined) {
      out.push(entry)
      continue
    }
    if (o.enabled === false) continue
    out.push({
      ...entry,
      upstream: o.upstreamModel !== undefined ? { ...entry.upstream, model: o.upstreamModel } : entry.upstream,
      poll: o.poll !== undefined ? { ...entry.poll, ...o.poll } : entry.poll,
      retention: o.retention !== undefined ? o.retention as ModelEntry.ModelEntry["retention"] : entry.retention,
      mirror: o.mirror ?? entry.mirror
    })
  }
  return { entries: out, unknown }
}

/** The entries in force for this process. */
export class Registry extends Context.Tag("@genway/registry/Registry")<
  Registry,
  { readonly entries: ReadonlyArray<ModelEntry.ModelEntry> }
>() {}

/** A registry of the given entries. */
export const layer = (list: ReadonlyArray<ModelEntry.ModelEntry> = entries) => Layer.succeed(Registry, { entries: list })

/** Finds an entry by its id. */
export const byId = (list: ReadonlyArray<ModelEntry.ModelEntry>, id: string) => list.find((e) => e.id === id)

/**
 * Finds an entry by its path. Paths shared by several models (`/v1/chat/completions`) return the
 * first; pick among them with `byModel`.
 */
export const byPath = (list: ReadonlyArray<ModelEntry.ModelEntry>, path: string) => list.find((e) => e.path === path)

/** Finds the entry at `path` whose public model name is `model` (the body's `model` of E1). */
export const byModel = (list: ReadonlyArray<ModelEntry.ModelEntry>, path: string, model: string) =>
  list.find((e) => e.path === path && e.model === model)

/** Finds the entry serving one spec endpoint id (`E4`, `G1`). */
export const byEndpoint = (list: ReadonlyArray<ModelEntry.ModelEntry>, endpoint: string) =>
  list.find((e) => e.endpoints.includes(endpoint))

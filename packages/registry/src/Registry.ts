/**
 * The registry: every model as a data entry, looked up by path or model name, with per-deployment
 * overrides (upstream model id, enabled, poll cadence, retention) applied on top.
 */
import type { ModelEntry } from "@genway/core"
import * as Context from "effect/Context"
import * as Layer from "effect/Layer"
import { vendorA } from "./entries/vendorA.js"
import { vendorB } from "./entries/vendorB.js"
import { vendorC } from "./entries/vendorC.js"
import { vendorD } from "./entries/vendorD.js"
import { vendorE } from "./entries/vendorE.js"

/** Order of an entry in SPEC.md: E1–E8, then G1–G8 (by its first endpoint id). */
const specOrder = (entry: ModelEntry.ModelEntry): number => {
  const m = /^([EG])(\d+)$/.exec(entry.endpoints[0] ?? "")
  return m === null ? Number.MAX_SAFE_INTEGER : (m[1] === "E" ? 0 : 1000) + Number(m[2])
}

/**
 * Every entry Genway ships, in SPEC.md order (E1–E8, then G1–G8), built from the per-vendor
 * arrays: adding a model is adding it to its vendor's array.
 */
export const entries: ReadonlyArray<ModelEntry.ModelEntry> = [...vendorA, ...vendorB, ...vendorC, ...vendorD, ...vendorE]
  .sort((a, b) => specOrder(a) - specOrder(b))

/** A deployment's changes to one entry (from `GATEWAY_MODELS_FILE`). */
export interface EntryOverride {
  readonly upstreamModel?: string
  readonly enabled?: boolean
  readonly poll?: Partial<ModelEntry.PollPolicy>
  readonly retention?: string | null
  readonly mirror?: boolean
  readonly price?: ModelEntry.Price
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
      mirror: o.mirror ?? entry.mirror,
      ...(o.price !== undefined ? { price: o.price } : {})
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

/** The entries by id, for lookups repeated per task or row. */
export const indexById = (list: ReadonlyArray<ModelEntry.ModelEntry>): ReadonlyMap<string, ModelEntry.ModelEntry> =>
  new Map(list.map((e) => [e.id, e]))

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

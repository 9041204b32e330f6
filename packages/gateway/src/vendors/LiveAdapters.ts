/**
 * The live task adapters whose `VENDOR_*` variables are set. A vendor with none set is left to the
 * sandbox; a vendor with some but not all set stops startup with the variable's name.
 */
import type * as HttpClient from "@effect/platform/HttpClient"
import * as VendorA from "@genway/adapter-vendor-a"
import * as VendorB from "@genway/adapter-vendor-b"
import * as VendorC from "@genway/adapter-vendor-c"
import * as VendorD from "@genway/adapter-vendor-d"
import * as VendorE from "@genway/adapter-vendor-e"
import type { VendorAdapter } from "@genway/core"
import type * as ConfigError from "effect/ConfigError"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"

const candidates = [
  VendorA.Adapter.fromConfig(),
  VendorB.Adapter.fromConfig(),
  VendorC.Adapter.fromConfig(),
  VendorD.Adapter.fromConfig(),
  VendorE.Adapter.fromConfig()
]

/** Live adapters from the environment, by vendor. */
export const fromEnvironment: Effect.Effect<
  ReadonlyMap<string, VendorAdapter.VendorAdapter>,
  ConfigError.ConfigError,
  HttpClient.HttpClient
> = Effect.map(
  Effect.all(candidates as ReadonlyArray<Effect.Effect<Option.Option<VendorAdapter.VendorAdapter>, ConfigError.ConfigError, HttpClient.HttpClient>>),
  (found) => new Map(found.flatMap((a) => Option.isSome(a) ? [[a.value.vendor, a.value] as const] : []))
)

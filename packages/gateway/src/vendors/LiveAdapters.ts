/**
 * The live task adapters whose `VENDOR_*` variables are set. A vendor with none set is left to the
 * sandbox; a vendor with some but not all set stops startup with the variable's name.
 */
import type * as HttpClient from "@effect/platform/HttpClient"
import type { VendorAdapter, VendorManifest } from "@genway/core"
import type * as ConfigError from "effect/ConfigError"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as List from "./List.js"

/** Live adapters of the vendors given, by vendor. */
export const fromManifests = (
  manifests: ReadonlyArray<VendorManifest.VendorManifest<HttpClient.HttpClient>>
): Effect.Effect<ReadonlyMap<string, VendorAdapter.VendorAdapter>, ConfigError.ConfigError, HttpClient.HttpClient> =>
  Effect.map(
    Effect.all(manifests.flatMap((m) => (m.tasks === undefined ? [] : [m.tasks]))),
    (found) => new Map(found.flatMap((a) => Option.isSome(a) ? [[a.value.vendor, a.value] as const] : []))
  )

/** Live adapters from the environment, by vendor. */
export const fromEnvironment: Effect.Effect<
  ReadonlyMap<string, VendorAdapter.VendorAdapter>,
  ConfigError.ConfigError,
  HttpClient.HttpClient
> = fromManifests(List.manifests)

/**
 * The vendors of this gateway: the one place that names the adapter packages. Adding a vendor is a
 * package exporting a `manifest` and one line here (plus its model entries in the registry).
 */
import type * as HttpClient from "@effect/platform/HttpClient"
import type { VendorManifest } from "@genway/core"
import * as VendorA from "@genway/adapter-vendor-a"
import * as VendorB from "@genway/adapter-vendor-b"
import * as VendorC from "@genway/adapter-vendor-c"
import * as VendorD from "@genway/adapter-vendor-d"
import * as VendorE from "@genway/adapter-vendor-e"

/** Every vendor the gateway ships. */
export const manifests: ReadonlyArray<VendorManifest.VendorManifest<HttpClient.HttpClient>> = [
  VendorA.manifest,
  VendorB.manifest,
  VendorC.manifest,
  VendorD.manifest,
  VendorE.manifest
]

/** The ids of `manifests`. */
export const ids: ReadonlyArray<string> = manifests.map((m) => m.id)

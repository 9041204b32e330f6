/** vendor-e as the gateway sees it: one task adapter. */
import type { Manifest as Kit } from "@genway/adapter-kit"
import * as Adapter from "./Adapter.js"

/** vendor-e's manifest. */
export const manifest: Kit.VendorManifest = {
  id: "vendor-e",
  tasks: Adapter.fromConfig()
}

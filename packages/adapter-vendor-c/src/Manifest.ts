/** vendor-c as the gateway sees it: one task adapter. */
import type { Manifest as Kit } from "@genway/adapter-kit"
import * as Adapter from "./Adapter.js"

/** vendor-c's manifest. */
export const manifest: Kit.VendorManifest = {
  id: "vendor-c",
  tasks: Adapter.fromConfig()
}

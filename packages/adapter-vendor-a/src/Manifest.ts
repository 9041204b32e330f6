/** vendor-a as the gateway sees it: the "videos" task adapter and the model responses surface (E2). */
import type { Manifest as Kit } from "@genway/adapter-kit"
import * as Adapter from "./Adapter.js"
import * as Responses from "./Responses.js"
import * as ResponsesSandbox from "./ResponsesSandbox.js"

/** vendor-a's manifest. */
export const manifest: Kit.VendorManifest = {
  id: "vendor-a",
  tasks: Adapter.fromConfig(),
  responses: { live: Responses.fromConfig(), sandbox: ResponsesSandbox }
}

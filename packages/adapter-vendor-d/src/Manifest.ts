/** vendor-d as the gateway sees it: the "long-running" task adapter and the chat surface (E1). */
import type { Manifest as Kit } from "@genway/adapter-kit"
import * as Adapter from "./Adapter.js"
import * as Chat from "./Chat.js"
import * as ChatSandbox from "./ChatSandbox.js"

/** vendor-d's manifest. */
export const manifest: Kit.VendorManifest = {
  id: "vendor-d",
  tasks: Adapter.fromConfig(),
  chat: { protocol: Chat.protocol, live: Chat.fromConfig(), sandbox: ChatSandbox.sandbox }
}

/** The live vendor-d task adapter (`make`, `fromConfig`). */
export * as Adapter from "./Adapter.js"
/** The live vendor-d chat upstream for E1 (`make`, `fromConfig`). */
export * as Chat from "./Chat.js"
/** vendor-d's settings: `VENDOR_D_BASE_URL`, `VENDOR_D_API_KEY`. */
export * as Config from "./Config.js"
/** The sandboxed chat upstream (E1), with vendor-d's token counts. */
export * as ChatSandbox from "./ChatSandbox.js"
/** vendor-d as one value: the task adapter and the chat surface (live and sandbox). */
export { manifest } from "./Manifest.js"

/** The live vendor-d task adapter (`make`, `fromConfig`). */
export * as Adapter from "./Adapter.js"
/** The live vendor-d chat upstream for E1 (`make`, `fromConfig`). */
export * as Chat from "./Chat.js"
/** vendor-d's settings: `VENDOR_D_BASE_URL`, `VENDOR_D_API_KEY`. */
export * as Config from "./Config.js"

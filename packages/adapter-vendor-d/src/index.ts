/** The live vendor-d task adapter (`make`, `fromConfig`). */
export * as Adapter from "./Adapter.js"
/** vendor-d's settings: `VENDOR_D_BASE_URL`, `VENDOR_D_API_KEY`. */
export * as Config from "./Config.js"

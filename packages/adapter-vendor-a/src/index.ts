/** The live vendor-a task adapter (`make`, `fromConfig`). */
export * as Adapter from "./Adapter.js"
/** vendor-a's settings: `VENDOR_A_BASE_URL`, `VENDOR_A_API_KEY`. */
export * as Config from "./Config.js"
/** The live vendor-a model responses upstream (E2). */
export * as Responses from "./Responses.js"
/** The sandboxed model responses upstream (E2), in vendor-a's shapes. */
export * as ResponsesSandbox from "./ResponsesSandbox.js"
/** vendor-a as one value: the task adapter and the model responses surface (live and sandbox). */
export { manifest } from "./Manifest.js"

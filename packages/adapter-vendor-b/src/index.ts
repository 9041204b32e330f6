/** The live vendor-b adapter (protocol "async-task"): `make(config)` and the nested body mapping. */
export * as Adapter from "./Adapter.js"
/** vendor-b's environment configuration (`VENDOR_B_BASE_URL`, `VENDOR_B_API_KEY`). */
export * as Config from "./Config.js"
/** vendor-b as one value: its task adapter. */
export { manifest } from "./Manifest.js"

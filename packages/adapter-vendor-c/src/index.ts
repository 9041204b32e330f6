/** The live vendor-c adapter (protocol "jwt-task"): `make(config)`, self-signed tokens, reconcile by external id. */
export * as Adapter from "./Adapter.js"
/** vendor-c's environment configuration (`VENDOR_C_BASE_URL`, `VENDOR_C_ACCESS_KEY`, `VENDOR_C_SECRET_KEY`). */
export * as Config from "./Config.js"
/** vendor-c as one value: its task adapter. */
export { manifest } from "./Manifest.js"

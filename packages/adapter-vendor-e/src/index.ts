/** The live vendor-e adapter (protocol "task-info", SPEC.md's own task surface): `make(config)`. */
export * as Adapter from "./Adapter.js"
/** vendor-e's environment configuration (`VENDOR_E_BASE_URL`, `VENDOR_E_API_KEY`). */
export * as Config from "./Config.js"
/** vendor-e as one value: its task adapter. */
export { manifest } from "./Manifest.js"

/** HTTP exchanges, transport failure classification, retry hints, result downloads, secret scrubbing. */
export * as Http from "./Http.js"
/** Task errors, refusals, retries and unknown task states, built alike by every adapter. */
export * as Outcome from "./Outcome.js"
/** Routing of tasks to the protocol their entry names. */
export * as Protocols from "./Protocols.js"
/** A vendor's variables as one all-or-none group, and the live-or-sandboxed switch. */
export * as VendorConfig from "./VendorConfig.js"

/** HTTP exchanges, transport failure classification, retry hints, result downloads, secret scrubbing. */
export * as Http from "./Http.js"
/** Task errors, refusals, retries and unknown task states, built alike by every adapter. */
export * as Outcome from "./Outcome.js"
/** Routing of tasks to the protocol their entry names. */
export * as Protocols from "./Protocols.js"
/** A vendor's variables as one all-or-none group, and the live-or-sandboxed switch. */
export * as VendorConfig from "./VendorConfig.js"
/** A vendor as one value (id, task/chat/responses surfaces, sandboxes); live surfaces scrubbed. */
export * as Manifest from "./Manifest.js"
/** Removal of secrets and base URLs from every vendor text, wrapped around each live surface. */
export * as Scrub from "./Scrub.js"
/** The one reading of an entry's `upstream` field lists (input/parameters/rename) and path. */
export * as Mapping from "./Mapping.js"

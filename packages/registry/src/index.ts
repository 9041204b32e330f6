/** The registry of model entries: the list, lookups and deployment overrides. */
export * as Registry from "./Registry.js"
/** Field builders for request schemas (bounds with field-naming messages). */
export * as Fields from "./Fields.js"
/** Request validation against an entry: schema, image checks, cross-field rules. */
export * as Validate from "./Validate.js"
/** The HTTP API contract and OpenAPI document derived from the entries. */
export * as Api from "./Api.js"
/** Values entries share: image rules, poll cadences, body limits. */
export * as Shared from "./entries/shared.js"
/** vendor-a entries: model responses (E2) and the video task (E7). */
export * as VendorA from "./entries/vendorA.js"
/** vendor-b entries: E3–E6, G4–G6. */
export * as VendorB from "./entries/vendorB.js"
/** vendor-c entries: E8, G7. */
export * as VendorC from "./entries/vendorC.js"
/** vendor-d entries: chat image generation (E1), G1, G2. */
export * as VendorD from "./entries/vendorD.js"
/** vendor-e entries: G3, G8. */
export * as VendorE from "./entries/vendorE.js"

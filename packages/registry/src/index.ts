/** The registry of model entries. */
export * as Registry from "./Registry.js"
/** Field builders for request schemas. */
export * as Fields from "./Fields.js"
/** Request validation against an entry. */
export * as Validate from "./Validate.js"

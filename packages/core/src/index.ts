/** Wire schemas of the task surface. */
export * as TaskInfo from "./TaskInfo.js"
/** The task state machine. */
export * as TaskState from "./TaskState.js"
/** Error envelopes and validation issues. */
export * as Errors from "./Errors.js"
/** Model entries: models as data. */
export * as ModelEntry from "./ModelEntry.js"
/** The vendor adapter contract. */
export * as VendorAdapter from "./VendorAdapter.js"
/** Image sniffing and URL checks. */
export * as Media from "./Media.js"
/** Parse errors as field-naming issues. */
export * as Validation from "./Validation.js"
/** Small real media for sandboxes and emulators. */
export * as SampleMedia from "./SampleMedia.js"
/** Chat completion wire schemas (E1). */
export * as Chat from "./Chat.js"
/** Model response wire schemas (E2). */
export * as Responses from "./Responses.js"
/** A vendor as one value: id, surfaces built from its variables, sandboxes. */
export * as VendorManifest from "./VendorManifest.js"
/** Time limits an HTTP client enforces itself (adapter-kit's `Http.within`, the gateway's upstream client). */
export * as CallLimit from "./CallLimit.js"
/** When a plain Node timer may stand for a wait on Effect's clock. */
export * as LiveTimer from "./LiveTimer.js"

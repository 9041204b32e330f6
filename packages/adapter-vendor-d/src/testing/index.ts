/** An in-process vendor-d upstream (protocol "long-running") for integration tests. */
export * as Emulator from "./Emulator.js"

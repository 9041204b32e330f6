/** An in-process vendor-a upstream (protocol "videos") for integration tests. */
export * as Emulator from "./Emulator.js"

/** An in-process vendor-a upstream (protocols "videos" and "responses") for integration tests. */
export * as Emulator from "./Emulator.js"

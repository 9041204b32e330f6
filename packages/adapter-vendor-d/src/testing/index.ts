/** An in-process vendor-d upstream (protocols "long-running" and "generate-content") for tests and benchmarks. */
export * as Emulator from "./Emulator.js"

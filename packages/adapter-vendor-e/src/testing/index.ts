/** An in-process vendor-e emulator (SPEC.md's task protocol) for integration tests, faults on demand. */
export * as Emulator from "./Emulator.js"

/** An in-process vendor-b emulator for integration tests (real HTTP on 127.0.0.1, faults on demand). */
export * as Emulator from "./Emulator.js"

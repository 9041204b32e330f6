/** An in-process vendor-c emulator for integration tests (real HTTP on 127.0.0.1, JWT checks, faults on demand). */
export * as Emulator from "./Emulator.js"

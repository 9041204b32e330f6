/**
 * Real `genway serve` processes for the crash and CLI tests: waiting for a condition (bounded) and
 * for a process to exit.
 */
import type { ChildProcess } from "node:child_process"

/** Polls `f` every 100 ms until it yields a value (errors count as "not yet"); fails after `timeoutMs`. */
export const until = async <A>(what: string, f: () => Promise<A | undefined>, timeoutMs = 90_000): Promise<A> => {
  const end = Date.now() + timeoutMs
  while (Date.now() < end) {
    const a = await f().catch(() => undefined)
    if (a !== undefined) return a
    await new Promise((r) => setTimeout(r, 100))
  }
  throw new Error(`timed out waiting for ${what}`)
}

/** Resolves when the process has exited. */
export const exited = (child: ChildProcess) => new Promise<void>((resolve) => child.once("exit", () => resolve()))

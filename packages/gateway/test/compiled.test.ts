/**
 * The compiled gateway (bin/build.mjs) is ASCII text. V8 keeps a module's source for as long as the
 * module is loaded, one byte per character when every character is Latin-1 and two bytes otherwise:
 * one `…` in a comment esbuild keeps (inside an object literal, say) or in a raw template doubles
 * the 1.9 MB it holds. esbuild escapes other characters in strings itself; comments and
 * `String.raw` texts are written as they are in the sources.
 */
import { describe, expect, it } from "@effect/vitest"
import * as fs from "node:fs"

describe("the compiled gateway", () => {
  it("is ASCII text, so V8 holds its source at one byte per character", async () => {
    // @ts-expect-error: a plain JavaScript module of the package, without type declarations
    const { ensureBuilt } = (await import("../bin/build.mjs")) as { ensureBuilt: () => Promise<string> }
    const text = fs.readFileSync(await ensureBuilt(), "utf8")
    expect(text.length).toBeGreaterThan(100_000)
    const offending = text.split("\n").flatMap((line, i) =>
      /[^\x00-\x7f]/.test(line) ? [`line ${i + 1}: ${line.trim().slice(0, 120)}`] : []
    )
    // Where this fails: write the character as a `\u` escape in a raw text, or plainly in a comment.
    expect(offending).toEqual([])
  })
})

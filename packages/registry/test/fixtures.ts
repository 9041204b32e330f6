/**
 * Test helpers: tiny synthetic images (only the header bytes `image-size` reads) and shortcuts to
 * validate a body against an entry by its spec endpoint id.
 */
import type { Errors, ModelEntry } from "@genway/core"
import * as Either from "effect/Either"
import * as Registry from "../src/Registry.js"
import * as Validate from "../src/Validate.js"

/** The entry serving a spec endpoint id; throws when there is none. */
export const entry = (endpoint: string): ModelEntry.ModelEntry => {
  const found = Registry.byEndpoint(Registry.entries, endpoint)
  if (found === undefined) throw new Error(`no entry for ${endpoint}`)
  return found
}

/** The issues of validating `body` against an endpoint's entry (empty when valid). */
export const issuesOf = (endpoint: string, body: unknown): ReadonlyArray<Errors.Issue> => {
  const result = Validate.validate(entry(endpoint), body)
  return Either.isLeft(result) ? result.left : []
}

/** The issue naming `param`, if any. */
export const issueAt = (issues: ReadonlyArray<Errors.Issue>, param: string) => issues.find((i) => i.param === param)

const u32 = (n: number) => [(n >>> 24) & 0xff, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff]
const u16 = (n: number) => [(n >>> 8) & 0xff, n & 0xff]

/**
 * A PNG header: signature and IHDR chunk (33 bytes). Colour type 2 is RGB, 6 is RGBA. The CRC is
 * left zero: nothing on the validation path checks it.
 */
export const png = (width: number, height: number, options: { readonly alpha?: boolean } = {}): Uint8Array =>
  Uint8Array.from([
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a,
    ...u32(13), 0x49, 0x48, 0x44, 0x52,
    ...u32(width), ...u32(height), 8, options.alpha === true ? 6 : 2, 0, 0, 0,
    0, 0, 0, 0
  ])

/** A JPEG header: SOI, a JFIF APP0 segment, and an SOF0 frame header with the size (30 bytes). */
export const jpeg = (width: number, height: number): Uint8Array =>
  Uint8Array.from([
    0xff, 0xd8,
    0xff, 0xe0, ...u16(16), 0x4a, 0x46, 0x49, 0x46, 0x00, 1, 1, 0, 0, 1, 0, 1, 0, 0,
    0xff, 0xc0, ...u16(17), 8, ...u16(height), ...u16(width), 3
  ])

/** A GIF header (a format no entry accepts), padded to 12 bytes. */
export const gif = (width: number, height: number): Uint8Array =>
  Uint8Array.from([0x47, 0x49, 0x46, 0x38, 0x39, 0x61, width & 0xff, width >> 8, height & 0xff, height >> 8, 0, 0])

/** Raw Base64 of some bytes. */
export const base64 = (bytes: Uint8Array): string => Buffer.from(bytes).toString("base64")

/** A data URL of some bytes. */
export const dataUrl = (mediaType: string, bytes: Uint8Array): string => `data:${mediaType};base64,${base64(bytes)}`

/**
 * Raw Base64 of a header followed by zero bytes, so that it decodes to more than `bytes` bytes.
 * The header length must be a multiple of 3 for the padding to line up (PNG and JPEG headers are).
 */
export const oversized = (header: Uint8Array, bytes: number): string => {
  const chars = Math.ceil((bytes + 1 - header.length) / 3) * 4
  return base64(header) + "A".repeat(chars)
}

/** An URL for image fields that only have their shape checked. */
export const imageUrl = "https://media.example.com/frame.png"

/** The smallest body each endpoint accepts. */
export const minimalBodies: Record<string, unknown> = {
  E1: { model: "image-model-2.5-flash-image-preview", messages: [{ role: "user", content: "a red fox in snow" }] },
  E2: { model: "deployment-1" },
  E3: { model: "vid2.1-vace-plus", function: "image_reference", prompt: "a cat", ref_images_url: [imageUrl] },
  E4: { prompt: "a cat" },
  E5: { prompt: "a cat", image: imageUrl },
  E6: { prompt: "a cat", image: imageUrl },
  E7: { prompt: "a cat" },
  E8: { image: imageUrl },
  G1: { prompt: "a cat" },
  G2: { prompt: "a cat" },
  G3: { prompt: "a cat" },
  G4: { prompt: "a cat" },
  G5: { first_frame_url: imageUrl, last_frame_url: imageUrl },
  G6: { prompt: "a cat" },
  G7: { prompt: "a cat" },
  G8: { prompt: "a cat" }
}

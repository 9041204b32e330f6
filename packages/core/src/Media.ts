/**
 * Media checks on request inputs: image references are classified (URL, data URL, raw Base64) and
 * Base64 images are sniffed from their first bytes with `image-size` — format, pixel size, decoded
 * byte count — without decoding the whole payload.
 */
import { imageSize } from "image-size"
import { issue, type Issue } from "./Errors.js"

/** Image formats the specification names. */
export type ImageFormat = "jpeg" | "png" | "bmp" | "tiff" | "webp" | "gif"

/** The one MIME table: media type of each image format. */
export const mimeTypes: Readonly<Record<ImageFormat, string>> = {
  jpeg: "image/jpeg",
  png: "image/png",
  bmp: "image/bmp",
  tiff: "image/tiff",
  webp: "image/webp",
  gif: "image/gif"
}

/** File extension of each media type the gateway stores. */
export const extensions: Readonly<Record<string, string>> = {
  "video/mp4": "mp4",
  "image/png": "png",
  "image/jpeg": "jpg",
  "image/webp": "webp"
}

/** The file extension for a content type (`bin` when unknown; parameters and case ignored). */
export const extensionFor = (contentType: string): string => extensions[contentType.split(";")[0]!.trim().toLowerCase()] ?? "bin"

/** How one image field of a request is checked. `field` may end in `[]` for an array of images. */
export interface ImageRule {
  readonly field: string
  /** Which encodings the field takes. */
  readonly accept: {
    readonly url: boolean
    readonly dataUrl: boolean
    readonly rawBase64: boolean
  }
  readonly formats: ReadonlyArray<ImageFormat>
  /** Media types allowed in a data URL's header, when narrower than `formats`. */
  readonly dataUrlMediaTypes?: ReadonlyArray<string>
  readonly maxBytes: number
  readonly minSide?: number
  readonly maxSide?: number
  /** Bounds of width / height. */
  readonly minAspect?: number
  readonly maxAspect?: number
  /** PNG inputs must not carry an alpha channel. */
  readonly opaque?: boolean
}

/** What the sniffer learned about one inline image. */
export interface ImageFacts {
  readonly format: ImageFormat
  readonly width: number
  readonly height: number
  readonly bytes: number
}

/** A classified image reference. */
export type ImageRef =
  | { readonly _tag: "Url"; readonly url: string }
  | { readonly _tag: "DataUrl"; readonly mediaType: string; readonly base64: string }
  | { readonly _tag: "Base64"; readonly base64: string }

const dataUrlPattern = /^data:([a-zA-Z0-9.+-]+\/[a-zA-Z0-9.+-]+)(?:;[^,;]*)*;base64,/
const base64Body = /^[A-Za-z0-9+/]*={0,2}$/

/** Classifies a string as an URL, a Base64 data URL or raw Base64; `undefined` when it is none. */
export const classifyImageRef = (value: string): ImageRef | undefined => {
  if (value.startsWith("data:")) {
    const m = dataUrlPattern.exec(value)
    if (m === null) return undefined
    return { _tag: "DataUrl", mediaType: m[1]!.toLowerCase(), base64: value.slice(m[0].length) }
  }
  if (/^[a-zA-Z][a-zA-Z0-9+.-]*:\/\//.test(value)) return { _tag: "Url", url: value }
  if (value.length >= 16 && base64Body.test(value)) return { _tag: "Base64", base64: value }
  return undefined
}

/** Checks an URL's shape and scheme only: the gateway never fetches client URLs to validate them. */
export const checkUrl = (value: string, param: string): Issue | undefined => {
  let url: URL
  try {
    url = new URL(value)
  } catch {
    return issue(param, "must be a valid absolute URL")
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return issue(param, "must be an http or https URL")
  // eslint-disable-next-line no-control-regex
  if (!/^[\x21-\x7e]*$/.test(value)) return issue(param, "must be an ASCII URL without spaces")
  return undefined
}

/** Decoded byte length of a Base64 string, computed from its length. */
export const base64DecodedLength = (base64: string): number => {
  const padding = base64.endsWith("==") ? 2 : base64.endsWith("=") ? 1 : 0
  return Math.floor((base64.length * 3) / 4) - padding
}

const normaliseFormat = (type: string | undefined): ImageFormat | undefined => {
  switch (type) {
    case "jpg":
    case "jpeg":
      return "jpeg"
    case "png":
    case "bmp":
    case "tiff":
    case "webp":
    case "gif":
      return type
    default:
      return undefined
  }
}

const pngHasAlpha = (head: Uint8Array): boolean => {
  // IHDR colour type at byte 25: 4 (grey + alpha) or 6 (RGBA). A tRNS chunk is not looked for.
  const colourType = head[25]
  return colourType === 4 || colourType === 6
}

/**
 * Sniffs a Base64 image: decodes growing prefixes (64 KiB, 1 MiB, all) until `image-size` can
 * read the header. JPEG frame headers may sit behind large EXIF blocks, hence the retries.
 */
export const sniffBase64Image = (base64: string): (ImageFacts & { readonly alpha: boolean }) | undefined => {
  const bytes = base64DecodedLength(base64)
  for (const chars of [87_384, 1_398_104, base64.length]) {
    const slice = base64.slice(0, Math.min(chars, base64.length) - (Math.min(chars, base64.length) % 4))
    const head = Buffer.from(slice, "base64")
    try {
      const size = imageSize(head)
      const format = normaliseFormat(size.type)
      if (format === undefined) return undefined
      const [width, height] = size.orientation !== undefined && size.orientation >= 5
        ? [size.height, size.width]
        : [size.width, size.height]
      return { format, width, height, bytes, alpha: format === "png" && pngHasAlpha(head) }
    } catch {
      if (chars >= base64.length) return undefined
    }
  }
  return undefined
}

const mediaTypeFormat: Record<string, ImageFormat> = {
  "image/jpeg": "jpeg",
  "image/jpg": "jpeg",
  "image/png": "png",
  "image/bmp": "bmp",
  "image/tiff": "tiff",
  "image/webp": "webp",
  "image/gif": "gif"
}

const megabytes = (n: number) => `${Math.round((n / 1_000_000) * 10) / 10} MB`

/** Result of checking one image value against its rule. */
export interface ImageCheck {
  readonly issues: ReadonlyArray<Issue>
  readonly facts?: ImageFacts
}

/** Checks one image value (URL or inline Base64) against its rule. */
export const checkImage = (value: string, rule: ImageRule, param: string): ImageCheck => {
  const ref = classifyImageRef(value)
  const expected = [
    rule.accept.url ? "an http(s) URL" : undefined,
    rule.accept.dataUrl ? "a Base64 data URL (data:<media_type>;base64,<data>)" : undefined,
    rule.accept.rawBase64 ? "raw Base64 data without a data-URL prefix" : undefined
  ].filter((s) => s !== undefined).join(" or ")
  if (ref === undefined) return { issues: [issue(param, `must be ${expected}`)] }
  if (ref._tag === "Url") {
    if (!rule.accept.url) return { issues: [issue(param, `must be ${expected}; image addresses are not accepted`)] }
    const bad = checkUrl(ref.url, param)
    return { issues: bad ? [bad] : [] }
  }
  if (ref._tag === "DataUrl" && !rule.accept.dataUrl) {
    return { issues: [issue(param, `must be ${expected}; remove the data-URL prefix`)] }
  }
  if (ref._tag === "Base64" && !rule.accept.rawBase64) return { issues: [issue(param, `must be ${expected}`)] }
  if (ref._tag === "DataUrl") {
    const allowedTypes = rule.dataUrlMediaTypes
    if (allowedTypes !== undefined && !allowedTypes.includes(ref.mediaType)) {
      return { issues: [issue(param, `media type ${ref.mediaType} is not accepted; use ${allowedTypes.join(", ")}`)] }
    }
  }
  if (!base64Body.test(ref.base64)) return { issues: [issue(param, "is not valid Base64")] }
  const bytes = base64DecodedLength(ref.base64)
  if (bytes > rule.maxBytes) {
    return { issues: [issue(param, `image is ${megabytes(bytes)}; at most ${megabytes(rule.maxBytes)} is accepted`)] }
  }
  const sniffed = sniffBase64Image(ref.base64)
  if (sniffed === undefined || !rule.formats.includes(sniffed.format)) {
    return { issues: [issue(param, `image format must be one of ${rule.formats.join(", ")}`)] }
  }
  if (ref._tag === "DataUrl") {
    const declared = mediaTypeFormat[ref.mediaType]
    if (declared !== sniffed.format) {
      return { issues: [issue(param, `data URL says ${ref.mediaType} but the data is ${sniffed.format}`)] }
    }
  }
  const { width, height } = sniffed
  const facts: ImageFacts = { format: sniffed.format, width, height, bytes }
  const issues: Array<Issue> = []
  if (rule.minSide !== undefined && Math.min(width, height) < rule.minSide) {
    issues.push(issue(param, `image is ${width}x${height} px; each side must be at least ${rule.minSide} px`))
  } else if (rule.maxSide !== undefined && Math.max(width, height) > rule.maxSide) {
    issues.push(issue(param, `image is ${width}x${height} px; each side must be at most ${rule.maxSide} px`))
  }
  const aspect = width / height
  if (
    (rule.minAspect !== undefined && aspect < rule.minAspect - 1e-9) ||
    (rule.maxAspect !== undefined && aspect > rule.maxAspect + 1e-9)
  ) {
    issues.push(issue(param, `image aspect ratio ${width}:${height} is outside the accepted range`))
  }
  if (rule.opaque === true && sniffed.alpha) issues.push(issue(param, "PNG images must not have transparency"))
  return { issues, facts }
}

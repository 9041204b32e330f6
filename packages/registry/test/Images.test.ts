/**
 * Image checks of the entries, on tiny synthetic images: encodings each field takes, formats,
 * pixel sizes, aspect ratios, the 10 MB limit.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Either from "effect/Either"
import * as Validate from "../src/Validate.js"
import { base64, dataUrl, entry, gif, imageUrl, issuesOf, jpeg, oversized, png } from "./fixtures.js"

const TEN_MB = 10_000_000

/** The single issue of a body, asserting there is exactly one, at `param`. */
const onlyIssue = (endpoint: string, body: unknown, param: string) => {
  const issues = issuesOf(endpoint, body)
  assert.deepStrictEqual(issues.map((i) => i.param), [param], JSON.stringify(issues))
  return issues[0]!.message
}

describe("E5/E6 frames (URL or Base64, JPEG/PNG/BMP/WEBP, 360–2000 px, opaque, 10 MB)", () => {
  const e5 = (image: string) => ({ prompt: "p", image })

  it("accepts URLs, data URLs and raw Base64 within bounds, and reports what was sniffed", () => {
    assert.deepStrictEqual(issuesOf("E5", e5(imageUrl)), [])
    assert.deepStrictEqual(issuesOf("E5", e5(dataUrl("image/png", png(360, 2000)))), [])
    assert.deepStrictEqual(issuesOf("E5", e5(base64(jpeg(1280, 720)))), [])
    const valid = Validate.validate(entry("E5"), e5(base64(jpeg(1280, 720))))
    assert.isTrue(Either.isRight(valid))
    if (Either.isRight(valid)) {
      assert.deepStrictEqual(valid.right.images.get("image"), { format: "jpeg", width: 1280, height: 720, bytes: 30 })
    }
  })

  it("rejects a format not allowed", () => {
    assert.include(onlyIssue("E5", e5(base64(gif(500, 500))), "image"), "format must be one of")
  })

  it("rejects too small and too large sides", () => {
    assert.include(onlyIssue("E5", e5(base64(png(359, 500))), "image"), "at least 360 px")
    assert.include(onlyIssue("E5", e5(base64(png(2001, 1000))), "image"), "at most 2000 px")
  })

  it("rejects PNG transparency", () => {
    assert.include(onlyIssue("E5", e5(base64(png(500, 500, { alpha: true }))), "image"), "transparency")
  })

  it("rejects more than 10 MB without decoding it", () => {
    assert.include(onlyIssue("E5", e5(oversized(png(500, 500), TEN_MB)), "image"), "at most 10 MB")
    assert.deepStrictEqual(issuesOf("E5", e5(oversized(png(500, 500), TEN_MB - 100))), [])
  })

  it("rejects a data URL whose media type contradicts the data, and non-Base64", () => {
    assert.include(onlyIssue("E5", e5(dataUrl("image/jpeg", png(500, 500))), "image"), "says image/jpeg")
    assert.include(onlyIssue("E5", e5("data:image/png;base64,***"), "image"), "Base64")
    assert.include(onlyIssue("E5", e5("just words"), "image"), "must be")
  })

  it("checks E6's last frame too", () => {
    assert.include(onlyIssue("E6", { prompt: "p", image: imageUrl, last_frame: base64(png(100, 100)) }, "last_frame"), "at least 360")
  })

  it("checks G5's first and last frames", () => {
    const frame = base64(png(800, 600))
    assert.deepStrictEqual(issuesOf("G5", { first_frame_url: frame, last_frame_url: imageUrl }), [])
    assert.include(onlyIssue("G5", { first_frame_url: frame, last_frame_url: base64(gif(800, 600)) }, "last_frame_url"), "format")
  })
})

describe("E3 reference images (URL or data URL, JPG/PNG/BMP/TIFF/WEBP, 360–2000 px, 10 MB)", () => {
  const e3 = (...ref_images_url: Array<string>) => ({
    model: "vid2.1-vace-plus",
    function: "image_reference",
    prompt: "p",
    ref_images_url,
    ...(ref_images_url.length > 1 ? { obj_or_bg: ref_images_url.map(() => "obj") } : {})
  })

  it("names the faulty element", () => {
    assert.deepStrictEqual(issuesOf("E3", e3(imageUrl, dataUrl("image/png", png(400, 400)))), [])
    assert.include(onlyIssue("E3", e3(imageUrl, dataUrl("image/png", png(200, 400))), "ref_images_url[1]"), "at least 360")
    assert.include(onlyIssue("E3", e3(dataUrl("image/gif", gif(400, 400))), "ref_images_url[0]"), "format")
    assert.include(
      onlyIssue("E3", e3(imageUrl, imageUrl, `data:image/jpeg;base64,${oversized(jpeg(400, 400), TEN_MB)}`), "ref_images_url[2]"),
      "10 MB"
    )
  })

  it("accepts raw Base64 as well; rejects non-ASCII URLs", () => {
    assert.deepStrictEqual(issuesOf("E3", e3(base64(png(400, 400)))), [])
    assert.include(onlyIssue("E3", e3("https://media.example.com/ä.png"), "ref_images_url[0]"), "ASCII")
  })
})

describe("E7 first frame (URL, data URL or raw Base64 of image/jpeg, image/png, image/webp; 10 MB)", () => {
  it("accepts the listed media types only, inline as a data URL or raw Base64", () => {
    assert.deepStrictEqual(issuesOf("E7", { prompt: "p", image: dataUrl("image/jpeg", jpeg(1280, 720)) }), [])
    assert.include(onlyIssue("E7", { prompt: "p", image: dataUrl("image/gif", gif(1280, 720)) }, "image"), "image/gif is not accepted")
    assert.deepStrictEqual(issuesOf("E7", { prompt: "p", image: base64(png(1280, 720)) }), [])
  })

  it("rejects more than 10 MB", () => {
    assert.include(onlyIssue("E7", { prompt: "p", image: `data:image/png;base64,${oversized(png(1280, 720), TEN_MB)}` }, "image"), "10 MB")
  })

  it("rejects a size mismatch", () => {
    assert.include(onlyIssue("E7", { prompt: "p", image: dataUrl("image/png", png(1024, 576)) }, "image"), "must be exactly 1280x720")
  })
})

describe("E8 frames and masks (URL, raw Base64 or data URL, JPEG/PNG, ≥300 px, aspect 1:2.5–2.5:1, 10 MB)", () => {
  it("accepts raw Base64 and URLs", () => {
    assert.deepStrictEqual(issuesOf("E8", { image: base64(jpeg(300, 750)), image_tail: imageUrl }), [])
    assert.deepStrictEqual(issuesOf("E8", { image: base64(png(750, 300)) }), [])
  })

  it("accepts a data URL too (the adapter strips the prefix for the vendor)", () => {
    assert.deepStrictEqual(issuesOf("E8", { image: dataUrl("image/png", png(500, 500)) }), [])
    assert.include(onlyIssue("E8", { image: dataUrl("image/gif", gif(500, 500)) }, "image"), "format")
  })

  it("rejects formats, small sides, bad aspect ratios and more than 10 MB", () => {
    assert.include(onlyIssue("E8", { image: base64(gif(500, 500)) }, "image"), "format must be one of jpeg, png")
    assert.include(onlyIssue("E8", { image: base64(png(299, 500)) }, "image"), "at least 300 px")
    assert.include(onlyIssue("E8", { image: base64(jpeg(1000, 300)) }, "image"), "aspect ratio")
    assert.include(onlyIssue("E8", { image: base64(jpeg(300, 800)) }, "image"), "aspect ratio")
    assert.include(onlyIssue("E8", { image: oversized(jpeg(500, 500), TEN_MB) }, "image"), "10 MB")
  })

  it("checks image_tail, static_mask and every dynamic mask", () => {
    assert.include(onlyIssue("E8", { image_tail: base64(png(100, 100)) }, "image_tail"), "at least 300")
    assert.include(onlyIssue("E8", { image: imageUrl, static_mask: dataUrl("image/png", png(500, 200)) }, "static_mask"), "at least 300")
    const masks = [{ mask: imageUrl, trajectories: [] }, { mask: base64(gif(500, 500)), trajectories: [] }]
    assert.include(onlyIssue("E8", { image: imageUrl, dynamic_masks: masks }, "dynamic_masks[1].mask"), "format")
  })
})

describe("G1/G2 frames (data URL or raw Base64; JPEG/PNG/WEBP; 10 MB)", () => {
  it("accepts inline encodings and rejects addresses, other formats and more than 10 MB", () => {
    assert.deepStrictEqual(issuesOf("G1", { prompt: "p", image: base64(png(1280, 720)), last_frame: dataUrl("image/jpeg", jpeg(1280, 720)) }), [])
    assert.include(onlyIssue("G2", { prompt: "p", image: base64(gif(10, 10)) }, "image"), "format")
    assert.include(onlyIssue("G2", { prompt: "p", image: base64(png(10, 10)), last_frame: oversized(png(10, 10), TEN_MB) }, "last_frame"), "10 MB")
    assert.include(onlyIssue("G1", { prompt: "p", image: imageUrl }, "image"), "addresses are not accepted")
  })
})

describe("E1 input images (data URL or raw Base64; JPEG/PNG/WEBP; 10 MB)", () => {
  const body = (...urls: Array<string>) => ({
    model: "image-model-2.5-flash-image-preview",
    messages: [
      { role: "system", content: "draw" },
      { role: "user", content: urls.map((url) => ({ type: "image_url", image_url: { url } })) }
    ]
  })

  it("accepts data URLs and raw Base64, and names the faulty part otherwise", () => {
    assert.deepStrictEqual(issuesOf("E1", body(dataUrl("image/png", png(64, 64)), dataUrl("image/jpeg", jpeg(64, 64)))), [])
    assert.include(onlyIssue("E1", body(dataUrl("image/png", png(64, 64)), imageUrl), "messages[1].content[1].image_url.url"), "not accepted")
    assert.deepStrictEqual(issuesOf("E1", body(base64(png(64, 64)))), [])
    assert.include(onlyIssue("E1", body(dataUrl("image/gif", gif(64, 64))), "messages[1].content[0].image_url.url"), "format")
    assert.include(
      onlyIssue("E1", body(`data:image/png;base64,${oversized(png(64, 64), TEN_MB)}`), "messages[1].content[0].image_url.url"),
      "10 MB"
    )
  })
})

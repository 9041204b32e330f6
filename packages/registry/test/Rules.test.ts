/**
 * Cross-field rules: each with a passing and a failing case.
 */
import { assert, describe, it } from "@effect/vitest"
import { base64, dataUrl, imageUrl, issueAt, issuesOf, png } from "./fixtures.js"

const params = (endpoint: string, body: unknown) => issuesOf(endpoint, body).map((i) => i.param)
const passes = (endpoint: string, body: unknown) => assert.deepStrictEqual(issuesOf(endpoint, body), [])
const video = "https://media.example.com/in.mp4"
const vace = (fn: string, fields: Record<string, unknown> = {}) => ({ model: "vid2.1-vace-plus", function: fn, ...fields })

describe("E3 rules", () => {
  it("image_reference needs prompt and ref_images_url", () => {
    passes("E3", vace("image_reference", { prompt: "a cat", ref_images_url: [imageUrl] }))
    assert.deepStrictEqual(params("E3", vace("image_reference")), ["prompt", "ref_images_url"])
    assert.deepStrictEqual(params("E3", vace("image_reference", { prompt: "", ref_images_url: [imageUrl] })), ["prompt"])
    assert.include(
      issueAt(issuesOf("E3", vace("image_reference", { ref_images_url: [imageUrl] })), "prompt")!.message,
      `is required for function "image_reference"`
    )
  })

  it("image_reference needs obj_or_bg for several images, one label per image", () => {
    const two = { prompt: "p", ref_images_url: [imageUrl, imageUrl] }
    passes("E3", vace("image_reference", { ...two, obj_or_bg: ["obj", "bg"] }))
    passes("E3", vace("image_reference", { prompt: "p", ref_images_url: [imageUrl] }))
    passes("E3", vace("image_reference", { prompt: "p", ref_images_url: [imageUrl], obj_or_bg: ["bg"] }))
    assert.include(issueAt(issuesOf("E3", vace("image_reference", two)), "obj_or_bg")!.message, "more than one image")
    assert.include(
      issueAt(issuesOf("E3", vace("image_reference", { ...two, obj_or_bg: ["obj"] })), "obj_or_bg")!.message,
      "one label per image"
    )
    assert.deepStrictEqual(
      params("E3", vace("image_reference", { prompt: "p", ref_images_url: [imageUrl], obj_or_bg: ["obj", "bg"] })),
      ["obj_or_bg"]
    )
  })

  it("video_repainting needs video_url and control_condition", () => {
    passes("E3", vace("video_repainting", { video_url: video, control_condition: "depth", strength: 0.5 }))
    assert.deepStrictEqual(params("E3", vace("video_repainting")), ["video_url", "control_condition"])
  })

  it("video_edit needs video_url and exactly one mask", () => {
    passes("E3", vace("video_edit", { video_url: video, mask_image_url: imageUrl, mask_type: "fixed" }))
    passes("E3", vace("video_edit", { video_url: video, mask_video_url: video, mask_type: "tracking" }))
    assert.deepStrictEqual(params("E3", vace("video_edit", { video_url: video })), ["mask_image_url"])
    assert.deepStrictEqual(params("E3", vace("video_edit", { mask_image_url: imageUrl })), ["video_url"])
    assert.deepStrictEqual(
      params("E3", vace("video_edit", { video_url: video, mask_image_url: imageUrl, mask_video_url: video })),
      ["mask_video_url"]
    )
  })

  it("video_extension needs prompt, and control_condition with a guidance video", () => {
    passes("E3", vace("video_extension", { prompt: "p", first_frame_url: imageUrl, duration: 5 }))
    passes("E3", vace("video_extension", { prompt: "p", first_clip_url: video, control_condition: "posebody" }))
    assert.deepStrictEqual(params("E3", vace("video_extension", { first_frame_url: imageUrl })), ["prompt"])
    assert.deepStrictEqual(params("E3", vace("video_extension", { prompt: "p", last_clip_url: video })), ["control_condition"])
    assert.deepStrictEqual(params("E3", vace("video_extension", { prompt: "p", first_clip_url: video })), ["control_condition"])
  })

  it("video_outpainting needs video_url", () => {
    passes("E3", vace("video_outpainting", { video_url: video, left_scale: 1.5, right_scale: 1.5 }))
    assert.deepStrictEqual(params("E3", vace("video_outpainting", { top_scale: 1.2 })), ["video_url"])
  })

  it("rejects fields of another function by name", () => {
    const repaint = issuesOf("E3", vace("video_repainting", { video_url: video, control_condition: "depth", ref_images_url: [imageUrl] }))
    assert.deepStrictEqual(repaint, [{ param: "ref_images_url", message: `is not accepted by function "video_repainting"` }])
    assert.deepStrictEqual(params("E3", vace("image_reference", { prompt: "p", ref_images_url: [imageUrl], strength: 0.5 })), ["strength"])
    assert.deepStrictEqual(params("E3", vace("video_outpainting", { video_url: video, duration: 5 })), ["duration"])
    assert.deepStrictEqual(params("E3", vace("video_edit", { video_url: video, mask_image_url: imageUrl, size: "960*960" })), ["size"])
    // Common fields and explicit nulls are fine everywhere.
    passes("E3", vace("video_outpainting", { video_url: video, seed: 1, prompt_extend: false, negative_prompt: "n", duration: null }))
  })
})

describe("E7 rules", () => {
  it("an inline image must have the pixel size of `size` (default 1280x720)", () => {
    passes("E7", { prompt: "p", image: dataUrl("image/png", png(1280, 720)) })
    passes("E7", { prompt: "p", image: dataUrl("image/png", png(720, 1280)), size: "720x1280" })
    passes("E7", { prompt: "p", image: imageUrl, size: "720x1280" })
    const wrong = issuesOf("E7", { prompt: "p", image: dataUrl("image/png", png(720, 1280)) })
    assert.deepStrictEqual(wrong.map((i) => i.param), ["image"])
    assert.include(wrong[0]!.message, "1280x720")
    assert.deepStrictEqual(params("E7", { prompt: "p", image: dataUrl("image/png", png(1280, 720)), size: "720x1280" }), ["image"])
  })
})

describe("E8 rules", () => {
  it("1: at least one of image and image_tail", () => {
    passes("E8", { image_tail: imageUrl })
    passes("E8", { image: imageUrl, image_tail: imageUrl })
    assert.deepStrictEqual(params("E8", { prompt: "p" }), ["image"])
    assert.deepStrictEqual(params("E8", { image: "", image_tail: null }), ["image"])
  })

  it("2: image with image_tail excludes static_mask and dynamic_masks", () => {
    const both = { image: imageUrl, image_tail: imageUrl }
    passes("E8", { image: imageUrl, static_mask: imageUrl, dynamic_masks: [{ mask: imageUrl, trajectories: [] }] })
    passes("E8", { ...both, dynamic_masks: [], static_mask: null })
    assert.deepStrictEqual(params("E8", { ...both, static_mask: imageUrl }), ["static_mask"])
    assert.deepStrictEqual(params("E8", { ...both, dynamic_masks: [{ mask: imageUrl, trajectories: [{ x: 0, y: 0 }] }] }), ["dynamic_masks"])
  })

  it("3: a non-empty voice_list needs sound on", () => {
    passes("E8", { image: imageUrl, voice_list: [{ voice_id: "v" }], sound: "on" })
    passes("E8", { image: imageUrl, voice_list: [] })
    assert.deepStrictEqual(params("E8", { image: imageUrl, voice_list: [{ voice_id: "v" }] }), ["sound"])
    assert.deepStrictEqual(params("E8", { image: imageUrl, voice_list: [{ voice_id: "v" }], sound: "off" }), ["sound"])
  })

  it("4: voice markers select existing voice_list entries", () => {
    const voices = { image: imageUrl, sound: "on", voice_list: [{ voice_id: "a" }, { voice_id: "b" }] }
    passes("E8", { ...voices, prompt: "<<<voice_1>>> greets <<<voice_2>>>" })
    passes("E8", { image: imageUrl, prompt: "no markers, <<voice_9>> is not one" })
    assert.deepStrictEqual(params("E8", { ...voices, prompt: "<<<voice_3>>> speaks" }), ["prompt"])
    assert.deepStrictEqual(params("E8", { ...voices, prompt: "<<<voice_0>>> speaks" }), ["prompt"])
    assert.include(issueAt(issuesOf("E8", { image: imageUrl, prompt: "<<<voice_1>>>" }), "prompt")!.message, "voice_list is empty")
  })

  it("static_mask has the aspect ratio of image", () => {
    passes("E8", { image: base64(png(1000, 500)), static_mask: base64(png(600, 300)) })
    assert.deepStrictEqual(params("E8", { image: base64(png(1000, 500)), static_mask: base64(png(500, 500)) }), ["static_mask"])
  })
})

describe("G1/G2 rules", () => {
  it("last_frame needs image", () => {
    const frame = base64(png(64, 64))
    passes("G1", { prompt: "p", image: frame, last_frame: frame })
    assert.deepStrictEqual(params("G2", { prompt: "p", last_frame: frame }), ["image"])
  })
})

describe("E1 rules", () => {
  it("input images are data URLs; an address is named by its part", () => {
    const body = (url: string) => ({
      model: "image-model-2.5-flash-image-preview",
      messages: [{ role: "user", content: [{ type: "text", text: "edit" }, { type: "image_url", image_url: { url } }] }]
    })
    passes("E1", body(dataUrl("image/png", png(10, 10))))
    const issues = issuesOf("E1", body(imageUrl))
    assert.deepStrictEqual(issues.map((i) => i.param), ["messages[0].content[1].image_url.url"])
    assert.include(issues[0]!.message, "addresses are not accepted")
  })
})

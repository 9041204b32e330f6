import { assert, describe, it } from "@effect/vitest"
import { Media, SampleMedia, TaskState } from "../src/index.js"

const b64 = (bytes: Uint8Array) => Buffer.from(bytes).toString("base64")

const rule: Media.ImageRule = {
  field: "image",
  accept: { url: true, dataUrl: true, rawBase64: true },
  formats: ["png", "jpeg"],
  maxBytes: 10_000_000,
  minSide: 360,
  maxSide: 2000
}

describe("Media", () => {
  it("classifies URLs, data URLs and raw Base64", () => {
    assert.strictEqual(Media.classifyImageRef("https://x.example/a.png")?._tag, "Url")
    assert.strictEqual(Media.classifyImageRef("data:image/png;base64,AAAA")?._tag, "DataUrl")
    assert.strictEqual(Media.classifyImageRef(b64(SampleMedia.png(4, 4)))?._tag, "Base64")
    assert.isUndefined(Media.classifyImageRef("not an image"))
  })

  it("sniffs format and pixel size from the first bytes", () => {
    const checked = Media.checkImage(`data:image/png;base64,${b64(SampleMedia.png(640, 400))}`, rule, "image")
    assert.deepStrictEqual(checked.issues, [])
    assert.strictEqual(checked.facts?.format, "png")
    assert.strictEqual(checked.facts?.width, 640)
    assert.strictEqual(checked.facts?.height, 400)
  })

  it("rejects small images, wrong formats, mismatched data URL types and oversize payloads, naming the field", () => {
    const small = Media.checkImage(b64(SampleMedia.png(100, 500)), rule, "image")
    assert.match(small.issues[0]!.message, /at least 360/)
    const mp4 = Media.checkImage(b64(SampleMedia.mp4()), rule, "image")
    assert.match(mp4.issues[0]!.message, /format/)
    const lying = Media.checkImage(`data:image/jpeg;base64,${b64(SampleMedia.png(400, 400))}`, rule, "image")
    assert.match(lying.issues[0]!.message, /says image\/jpeg/)
    const huge = b64(SampleMedia.png(400, 400)) + "A".repeat(14_000_000)
    const big = Media.checkImage(huge.slice(0, huge.length - (huge.length % 4)), rule, "image")
    assert.match(big.issues[0]!.message, /at most 10 MB/)
    assert.strictEqual(big.issues[0]!.param, "image")
  })

  it("refuses an encoding the rule does not accept", () => {
    const noUrl = Media.checkImage("https://x.example/a.png", { ...rule, accept: { url: false, dataUrl: true, rawBase64: false } }, "p")
    assert.match(noUrl.issues[0]!.message, /addresses are not accepted/)
    const noPrefix = Media.checkImage(`data:image/png;base64,${b64(SampleMedia.png(400, 400))}`, {
      ...rule,
      accept: { url: true, dataUrl: false, rawBase64: true }
    }, "p")
    assert.match(noPrefix.issues[0]!.message, /remove the data-URL prefix/)
  })
})

describe("TaskState", () => {
  it("allows forward moves only and never leaves a terminal state", () => {
    assert.isTrue(TaskState.canTransition("pending", "processing"))
    assert.isTrue(TaskState.canTransition("processing", "completed"))
    assert.isFalse(TaskState.canTransition("processing", "pending"))
    assert.isFalse(TaskState.canTransition("completed", "failed"))
    assert.isFalse(TaskState.canTransition("failed", "completed"))
  })
})

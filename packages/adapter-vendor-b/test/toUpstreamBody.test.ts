import { assert, describe, it } from "@effect/vitest"
import { SampleMedia } from "@genway/core"
import { Adapter } from "../src/index.js"
import { i2v, t2i, t2v } from "./fixtures.js"

describe("toUpstreamBody", () => {
  it("nests fields into input and parameters as the entry lists them, dropping empty values", () => {
    const body = Adapter.toUpstreamBody(
      t2v,
      { prompt: "a cat", negative_prompt: "blur", audio_url: null, size: "1280*720", duration: 5, seed: 7, audio: false, extra: 1 },
      "real-model-id"
    )
    assert.deepStrictEqual(body, {
      model: "real-model-id",
      input: { prompt: "a cat", negative_prompt: "blur" },
      parameters: { size: "1280*720", duration: 5, seed: 7, audio: false }
    })
  })

  it("renames fields and turns raw Base64 images into data URLs; URLs pass unchanged", () => {
    const b64 = Buffer.from(SampleMedia.png(400, 400)).toString("base64")
    const body = Adapter.toUpstreamBody(
      i2v,
      { prompt: "move", image: b64, last_frame: "https://img.example/last.png", resolution: "1080P" },
      "m"
    )
    assert.deepStrictEqual(body.input, {
      prompt: "move",
      img_url: `data:image/png;base64,${b64}`,
      last_frame_url: "https://img.example/last.png"
    })
    assert.deepStrictEqual(body.parameters, { resolution: "1080P" })
  })

  it("keeps data URLs as they are", () => {
    const dataUrl = `data:image/png;base64,${Buffer.from(SampleMedia.png(400, 400)).toString("base64")}`
    assert.strictEqual(Adapter.toUpstreamBody(i2v, { prompt: "p", image: dataUrl }, "m").input["img_url"], dataUrl)
  })

  it("sends the prompt as one user message for image generation", () => {
    const body = Adapter.toUpstreamBody(t2i, { prompt: "a red fox", size: "1280*1280", n: 2, negative_prompt: "text" }, "m")
    assert.deepStrictEqual(body, {
      model: "m",
      input: { messages: [{ role: "user", content: [{ text: "a red fox" }] }] },
      parameters: { size: "1280*1280", n: 2, negative_prompt: "text" }
    })
  })

  it("without an input list sends every other field to input, except the gateway's model field", () => {
    const entry = { ...t2v, upstream: { protocol: "async-task", operation: "video-synthesis", model: "m", parameters: ["seed"] } }
    const body = Adapter.toUpstreamBody(entry, { model: "vid2.1-vace-plus", function: "image_reference", prompt: "p", seed: 1 }, "m")
    assert.deepStrictEqual(body.input, { function: "image_reference", prompt: "p" })
    assert.deepStrictEqual(body.parameters, { seed: 1 })
  })
})

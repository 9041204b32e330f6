/**
 * Every bound of SPEC.md §4.2–4.9 and §8 (and of the G-entries' bodies), violated once per
 * endpoint: the body must be rejected with an issue naming the field.
 */
import { assert, describe, it } from "@effect/vitest"
import { imageUrl, issueAt, issuesOf, minimalBodies } from "./fixtures.js"

const long = (n: number) => "x".repeat(n)
const marker = "UNIQUE-VALUE-MARKER-"

/** `[endpoint, param, changes to the minimal body, expected message (substring)]`. */
type Case = readonly [string, string, Record<string, unknown>, string?]

const e3 = { model: "vid2.1-vace-plus", function: "image_reference", prompt: "a cat", ref_images_url: [imageUrl] }

const cases: ReadonlyArray<Case> = [
  // E1 (§4.2)
  ["E1", "model", { model: undefined }, "is missing"],
  ["E1", "messages", { messages: [] }, "at least 1"],
  ["E1", "messages", { messages: "hi" }, "must be an array"],
  ["E1", "messages[0].role", { messages: [{ role: "tool", content: "x" }] }, `"system", "user", "assistant"`],
  ["E1", "messages[0].content", { messages: [{ role: "user", content: 5 }] }, "string or an array"],
  ["E1", "messages[0].content[0]", { messages: [{ role: "user", content: [{ type: "audio" }] }] }, `"text" or "image_url"`],
  ["E1", "messages[0].content[0].text", { messages: [{ role: "user", content: [{ type: "text", text: 1 }] }] }, "must be a string"],
  ["E1", "messages[0].content[0].image_url", { messages: [{ role: "user", content: [{ type: "image_url" }] }] }, "is missing"],
  ["E1", "stream", { stream: "yes" }, "true or false"],
  ["E1", "temperature", { temperature: 2.5 }, "between 0 and 2"],
  ["E1", "top_p", { top_p: 1.5 }, "between 0 and 1"],
  ["E1", "n", { n: 0 }, "at least 1"],
  ["E1", "max_tokens", { max_tokens: 0 }, "at least 1"],
  // E2 (§4.3)
  ["E2", "model", { model: undefined }, "is missing"],
  ["E2", "input", { input: 5 }, "string or an array of message objects"],
  ["E2", "input[0]", { input: ["hi"] }, "must be an object"],
  ["E2", "instructions", { instructions: 5 }],
  ["E2", "previous_response_id", { previous_response_id: 5 }],
  ["E2", "prompt", { prompt: "template" }, "must be an object"],
  ["E2", "max_output_tokens", { max_output_tokens: 0 }, "at least 1"],
  ["E2", "max_output_tokens", { max_output_tokens: 1.5 }, "integer"],
  ["E2", "max_tool_calls", { max_tool_calls: -1 }, "at least 0"],
  ["E2", "temperature", { temperature: 2.01 }, "between 0 and 2"],
  ["E2", "temperature", { temperature: -0.1 }, "between 0 and 2"],
  ["E2", "top_p", { top_p: 1.01 }, "between 0 and 1"],
  ["E2", "top_logprobs", { top_logprobs: 21 }, "between 0 and 20"],
  ["E2", "top_logprobs", { top_logprobs: 2.5 }, "integer"],
  ["E2", "parallel_tool_calls", { parallel_tool_calls: "yes" }, "true or false"],
  ["E2", "stream", { stream: 1 }, "true or false"],
  ["E2", "background", { background: "no" }, "true or false"],
  ["E2", "store", { store: 0 }, "true or false"],
  ["E2", "text", { text: null }, "must be an object"],
  ["E2", "tools", { tools: {} }, "must be an array"],
  ["E2", "tools[0]", { tools: [1] }, "must be an object"],
  ["E2", "tool_choice", { tool_choice: "sometimes" }, `"none", "auto", "required"`],
  ["E2", "reasoning", { reasoning: [] }, "must be an object"],
  ["E2", "truncation", { truncation: "middle" }, `"auto", "disabled"`],
  ["E2", "metadata", { metadata: Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, "v"])) }, "at most 16"],
  ["E2", "metadata", { metadata: { [long(65)]: "v" } }, "keys must be at most 64"],
  ["E2", "metadata", { metadata: { k: long(513) } }, "at most 512"],
  ["E2", "metadata", { metadata: { k: 1 } }, "values must be strings"],
  ["E2", "user", { user: 1 }],
  ["E2", "include[0]", { include: [1] }, "must be a string"],
  ["E2", "include", { include: "x" }, "must be an array"],
  // E3 (§4.4, §8)
  ["E3", "model", { ...e3, model: "vid2.1-vace" }, `"vid2.1-vace-plus"`],
  ["E3", "function", { ...e3, function: "video_magic" }, "image_reference"],
  ["E3", "prompt", { ...e3, prompt: long(801) }, "at most 800 characters"],
  ["E3", "negative_prompt", { ...e3, negative_prompt: long(501) }, "at most 500 characters"],
  ["E3", "seed", { ...e3, seed: -1 }, "between 0 and 2147483647"],
  ["E3", "seed", { ...e3, seed: 2147483648 }, "between 0 and 2147483647"],
  ["E3", "ref_images_url", { ...e3, ref_images_url: [] }, "at least 1"],
  ["E3", "ref_images_url", { ...e3, ref_images_url: [imageUrl, imageUrl, imageUrl, imageUrl] }, "at most 3"],
  ["E3", "obj_or_bg[0]", { ...e3, obj_or_bg: ["fg"] }, `"obj", "bg"`],
  ["E3", "size", { ...e3, size: "1920*1080" }, `"1280*720"`],
  ["E3", "duration", { ...e3, duration: 10 }, "must be one of 5"],
  ["E3", "prompt_extend", { ...e3, prompt_extend: "yes" }, "true or false"],
  ["E3", "video_url", { ...e3, function: "video_outpainting", video_url: "not a url" }, "http(s) URL"],
  ["E3", "control_condition", { ...e3, control_condition: "edges" }, "posebodyface"],
  ["E3", "strength", { ...e3, strength: 1.01 }, "between 0 and 1"],
  ["E3", "strength", { ...e3, strength: -0.01 }, "between 0 and 1"],
  ["E3", "mask_type", { ...e3, mask_type: "moving" }, `"tracking", "fixed"`],
  ["E3", "mask_image_url", { ...e3, mask_image_url: "ftp://x/y.png" }, "http(s) URL"],
  ["E3", "top_scale", { ...e3, top_scale: 2.5 }, "between 1 and 2"],
  ["E3", "bottom_scale", { ...e3, bottom_scale: 0.9 }, "between 1 and 2"],
  ["E3", "left_scale", { ...e3, left_scale: 3 }, "between 1 and 2"],
  ["E3", "right_scale", { ...e3, right_scale: 0 }, "between 1 and 2"],
  ["E3", "first_clip_url", { ...e3, first_clip_url: "clip.mp4" }, "http(s) URL"],
  // E4 (§4.5, §8)
  ["E4", "prompt", { prompt: undefined }, "is missing"],
  ["E4", "prompt", { prompt: "" }, "must not be empty"],
  ["E4", "prompt", { prompt: long(2001) }, "at most 2000 characters"],
  ["E4", "negative_prompt", { negative_prompt: long(501) }, "at most 500 characters"],
  ["E4", "audio", { audio: "on" }, "true or false"],
  ["E4", "audio_url", { audio_url: "audio.mp3" }, "http(s) URL"],
  ["E4", "size", { size: "1280x720" }, `"1280*720"`],
  ["E4", "duration", { duration: 8 }, "5, 10"],
  ["E4", "duration", { duration: "5" }, "sent as a number"],
  ["E4", "prompt_extend", { prompt_extend: 1 }, "true or false"],
  ["E4", "seed", { seed: 2147483648 }, "between 0 and 2147483647"],
  ["E4", "seed", { seed: 1.5 }, "integer"],
  // E5 (§4.6, §8)
  ["E5", "prompt", { prompt: long(2001) }, "at most 2000 characters"],
  ["E5", "image", { image: undefined }, "is missing"],
  ["E5", "image", { image: "" }, "must not be empty"],
  ["E5", "negative_prompt", { negative_prompt: long(501) }, "at most 500 characters"],
  ["E5", "audio", { audio: "yes" }, "true or false"],
  ["E5", "audio_url", { audio_url: "file:///a.wav" }, "http(s) URL"],
  ["E5", "resolution", { resolution: "4K" }, `"480P", "720P", "1080P"`],
  ["E5", "duration", { duration: 15 }, "5, 10"],
  ["E5", "seed", { seed: -5 }, "between 0 and 2147483647"],
  // E6 (§4.7, §8)
  ["E6", "prompt", { prompt: long(801) }, "at most 800 characters"],
  ["E6", "negative_prompt", { negative_prompt: long(501) }, "at most 500 characters"],
  ["E6", "last_frame", { last_frame: 5 }, "must be a string"],
  ["E6", "resolution", { resolution: "2K" }, `"480P"`],
  ["E6", "duration", { duration: 10 }, "must be one of 5"],
  ["E6", "seed", { seed: 2147483648 }, "between 0 and 2147483647"],
  // E7 (§4.8, §8)
  ["E7", "prompt", { prompt: long(2001) }, "at most 2000 characters"],
  ["E7", "model", { model: "reel-1" }, `"reel-2"`],
  ["E7", "seconds", { seconds: "6" }, `"4", "8", "12"`],
  ["E7", "seconds", { seconds: 8 }, "sent as a string"],
  ["E7", "size", { size: "1920x1080" }, `"720x1280", "1280x720"`],
  ["E7", "image", { image: 1 }, "must be a string"],
  // E8 (§4.9, §8)
  ["E8", "prompt", { prompt: long(2501) }, "at most 2500 characters"],
  ["E8", "negative_prompt", { negative_prompt: long(2501) }, "at most 2500 characters"],
  ["E8", "voice_list", { voice_list: [{ voice_id: "a" }, { voice_id: "b" }, { voice_id: "c" }], sound: "on" }, "at most 2"],
  ["E8", "voice_list[0].voice_id", { voice_list: [{ voice_id: "" }], sound: "on" }, "must not be empty"],
  ["E8", "sound", { sound: "loud" }, `"on", "off"`],
  ["E8", "mode", { mode: "max" }, `"std", "pro"`],
  ["E8", "dynamic_masks", { dynamic_masks: Array.from({ length: 7 }, () => ({ mask: imageUrl, trajectories: [] })) }, "at most 6"],
  ["E8", "dynamic_masks[0].trajectories[0].x", { dynamic_masks: [{ mask: imageUrl, trajectories: [{ x: 1.5, y: 1 }] }] }, "integer"],
  ["E8", "dynamic_masks[0].mask", { dynamic_masks: [{ trajectories: [] }] }, "is missing"],
  ["E8", "duration", { duration: 15 }, "5, 10"],
  ["E8", "image_tail", { image_tail: 7 }, "must be a string"],
  // G1, G2
  ["G1", "prompt", { prompt: long(2001) }, "at most 2000 characters"],
  ["G1", "negative_prompt", { negative_prompt: long(501) }, "at most 500 characters"],
  ["G1", "aspect_ratio", { aspect_ratio: "1:1" }, `"16:9", "9:16"`],
  ["G1", "duration", { duration: 5 }, "4, 6, 8"],
  ["G1", "resolution", { resolution: "480P" }, `"720P", "1080P"`],
  ["G2", "prompt", { prompt: "" }, "must not be empty"],
  ["G2", "duration", { duration: 10 }, "4, 6, 8"],
  // G3, G8
  ["G3", "prompt", { prompt: long(2001) }, "at most 2000 characters"],
  ["G3", "negative_prompt", { negative_prompt: long(501) }, "at most 500 characters"],
  ["G3", "size", { size: "1280*720" }, `"1920*1080"`],
  ["G3", "duration", { duration: 20 }, "5, 10, 15"],
  ["G3", "shot_type", { shot_type: "triple" }, `"single", "multi"`],
  ["G3", "audio_url", { audio_url: "nope" }, "http(s) URL"],
  ["G3", "seed", { seed: -1 }, "between 0 and 2147483647"],
  ["G8", "duration", { duration: 7 }, "5, 10, 15"],
  // G4, G6
  ["G4", "prompt", { prompt: long(2001) }, "at most 2000 characters"],
  ["G4", "negative_prompt", { negative_prompt: long(501) }, "at most 500 characters"],
  ["G4", "size", { size: "1280x1280" }, `"1280*1280"`],
  ["G4", "n", { n: 0 }, "between 1 and 4"],
  ["G4", "n", { n: 5 }, "between 1 and 4"],
  ["G4", "seed", { seed: 2147483648 }, "between 0 and 2147483647"],
  ["G6", "n", { n: 5 }, "between 1 and 4"],
  ["G6", "prompt", { prompt: undefined }, "is missing"],
  // G5
  ["G5", "first_frame_url", { first_frame_url: undefined }, "is missing"],
  ["G5", "last_frame_url", { last_frame_url: undefined }, "is missing"],
  ["G5", "prompt", { prompt: long(801) }, "at most 800 characters"],
  ["G5", "resolution", { resolution: "4K" }, `"480P"`],
  ["G5", "seed", { seed: -1 }, "between 0 and 2147483647"],
  // G7
  ["G7", "prompt", { prompt: long(2501) }, "at most 2500 characters"],
  ["G7", "negative_prompt", { negative_prompt: long(2501) }, "at most 2500 characters"],
  ["G7", "mode", { mode: "turbo" }, `"std", "pro"`],
  ["G7", "aspect_ratio", { aspect_ratio: "4:3" }, `"16:9", "9:16", "1:1"`],
  ["G7", "duration", { duration: 15 }, "5, 10"]
]

const withChanges = (endpoint: string, changes: Record<string, unknown>) => {
  const body: Record<string, unknown> = { ...(minimalBodies[endpoint] as Record<string, unknown>), ...changes }
  for (const [k, v] of Object.entries(changes)) if (v === undefined) delete body[k]
  return body
}

describe("bounds", () => {
  for (const [endpoint, param, changes, message] of cases) {
    it(`${endpoint} ${param}: ${JSON.stringify(changes).slice(0, 60)}`, () => {
      const issues = issuesOf(endpoint, withChanges(endpoint, changes))
      const found = issueAt(issues, param)
      assert.isDefined(found, `expected an issue at ${param}, got ${JSON.stringify(issues)}`)
      if (message !== undefined) assert.include(found!.message, message)
    })
  }

  it("never echo a rejected value", () => {
    const value = marker + long(100)
    const probes: ReadonlyArray<readonly [string, Record<string, unknown>]> = [
      ["E4", { size: value }],
      ["E4", { prompt: 5, negative_prompt: value + long(500) }],
      ["E7", { seconds: value }],
      ["E1", { messages: [{ role: value, content: value }] }],
      ["E2", { tool_choice: value, metadata: { [value]: value } }],
      ["E3", { ...e3, function: value, video_url: value }]
    ]
    for (const [endpoint, changes] of probes) {
      const issues = issuesOf(endpoint, withChanges(endpoint, changes))
      assert.isAbove(issues.length, 0)
      for (const i of issues) {
        assert.notInclude(i.message, marker, `${endpoint}: ${i.message}`)
        assert.notInclude(i.param, marker, `${endpoint}: ${i.param}`)
      }
    }
  })

  it("report every faulty field at once", () => {
    const issues = issuesOf("E4", { prompt: long(2001), seed: -1, duration: 7 })
    assert.deepStrictEqual(issues.map((i) => i.param).sort(), ["duration", "prompt", "seed"])
  })
})

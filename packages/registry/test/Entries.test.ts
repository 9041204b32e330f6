import { ModelEntry } from "@genway/core"
import { assert, describe, it } from "@effect/vitest"
import * as Duration from "effect/Duration"
import * as Registry from "../src/Registry.js"
import { base64, dataUrl, entry, imageUrl, issuesOf, minimalBodies, png } from "./fixtures.js"

const specOrder = ["E1", "E2", "E3", "E4", "E5", "E6", "E7", "E8", "G1", "G2", "G3", "G4", "G5", "G6", "G7", "G8"]

/** SPEC.md §4.1 paths: the create path of task entries (retrieval path without `/{task_id}`). */
const specPaths: Record<string, string> = {
  E1: "/v1/chat/completions",
  E2: "/vendors/vendor-a/v1/responses",
  E3: "/vendors/vendor-b/v1/vid2.1-vace-plus/generation",
  E4: "/vendors/vendor-b/v1/vid2.5-t2v-preview/generation",
  E5: "/vendors/vendor-b/v1/vid2.5-i2v-preview/generation",
  E6: "/vendors/vendor-b/v1/vid2.2-i2v-plus/generation",
  E7: "/vendors/vendor-a/v1/reel/generation",
  E8: "/vendors/vendor-c/v1/clip-v2.6/image-to-video/generation",
  G1: "/vendors/vendor-d/v1/film-3.1-fast/generation",
  G2: "/vendors/vendor-d/v1/film/generation",
  G3: "/vendors/vendor-e/v1/vid2.5-t2v-spark/generation",
  G4: "/vendors/vendor-b/v1/vid2.6-t2i/generation",
  G5: "/vendors/vendor-b/v1/vid2.1-kf2v-plus/generation",
  G6: "/vendors/vendor-b/v1/vid2/image/generation",
  G7: "/vendors/vendor-c/v1/clip-v2.5-turbo/text-to-video/generation",
  G8: "/vendors/vendor-e/v1/vid2.6-t2v-spark/generation"
}

/** Bodies using every field with a valid value, so nothing valid is rejected. */
const fullBodies: ReadonlyArray<readonly [string, unknown]> = [
  ["E1", {
    model: "image-model-2.5-flash-image-preview",
    stream: true,
    messages: [
      { role: "system", content: "You draw." },
      { role: "user", content: [{ type: "text", text: "make it blue" }, { type: "image_url", image_url: { url: dataUrl("image/png", png(64, 64)) } }] }
    ],
    n: 1,
    temperature: 1,
    top_p: 0.9,
    max_tokens: 100,
    max_completion_tokens: 100,
    stream_options: { include_usage: true },
    user: "u-1",
    modalities: ["text", "image"]
  }],
  ["E2", {
    model: "deployment-1",
    input: [{ role: "user", content: "hi" }],
    instructions: null,
    previous_response_id: "resp_1",
    prompt: { id: "pmpt_1", variables: { a: "b" } },
    max_output_tokens: 1,
    max_tool_calls: 3,
    temperature: 2,
    top_p: 0,
    top_logprobs: 20,
    parallel_tool_calls: true,
    stream: false,
    background: null,
    store: true,
    text: { format: { type: "text" } },
    tools: [{ type: "web_search" }],
    tool_choice: { type: "function", name: "f" },
    reasoning: { effort: "low" },
    truncation: "auto",
    metadata: Object.fromEntries(Array.from({ length: 16 }, (_, i) => [`k${i}`.padEnd(64, "k"), "v".repeat(512)])),
    user: "u-1",
    include: ["file_search_call.results"]
  }],
  ["E2", { model: "deployment-1", input: "hello", tool_choice: "required", tools: null, include: null, truncation: null }],
  ["E3", {
    model: "vid2.1-vace-plus",
    function: "image_reference",
    prompt: "x".repeat(800),
    negative_prompt: "x".repeat(500),
    seed: 2147483647,
    prompt_extend: false,
    ref_images_url: [imageUrl, imageUrl, imageUrl],
    obj_or_bg: ["obj", "obj", "bg"],
    size: "1088*832",
    duration: 5
  }],
  ["E3", {
    model: "vid2.1-vace-plus",
    function: "video_outpainting",
    video_url: "https://media.example.com/in.mp4",
    top_scale: 1,
    bottom_scale: 2,
    left_scale: 1.5,
    right_scale: 1.2
  }],
  ["E4", {
    prompt: "x".repeat(2000),
    negative_prompt: "x".repeat(500),
    audio: null,
    audio_url: "https://media.example.com/a.mp3",
    size: "1632*1248",
    duration: 10,
    prompt_extend: true,
    seed: 0
  }],
  ["E5", {
    prompt: "x".repeat(2000),
    image: imageUrl,
    negative_prompt: "x".repeat(500),
    audio: false,
    audio_url: null,
    resolution: "1080P",
    duration: 5,
    prompt_extend: true,
    seed: 1
  }],
  ["E6", {
    prompt: "x".repeat(800),
    image: imageUrl,
    last_frame: imageUrl,
    negative_prompt: "x".repeat(500),
    resolution: "720P",
    duration: 5,
    prompt_extend: false,
    seed: 2
  }],
  ["E7", { prompt: "x".repeat(2000), model: "reel-2", image: imageUrl, seconds: "12", size: "720x1280" }],
  ["E8", {
    image: imageUrl,
    prompt: "<<<voice_1>>> says hello to <<<voice_2>>>",
    negative_prompt: "x".repeat(2500),
    voice_list: [{ voice_id: "v1" }, { voice_id: "v2" }],
    sound: "on",
    mode: "pro",
    static_mask: imageUrl,
    dynamic_masks: Array.from({ length: 6 }, () => ({ mask: imageUrl, trajectories: [{ x: 1, y: 2 }, { x: 3, y: 4 }] })),
    duration: 10
  }],
  ["G1", {
    prompt: "x".repeat(2000),
    image: base64(png(64, 64)),
    last_frame: base64(png(64, 64)),
    aspect_ratio: "9:16",
    duration: 8,
    resolution: "1080P",
    negative_prompt: "x".repeat(500)
  }],
  ["G3", {
    prompt: "x".repeat(2000),
    negative_prompt: "x".repeat(500),
    size: "1248*1632",
    duration: 15,
    shot_type: "multi",
    audio: true,
    audio_url: null,
    prompt_extend: true,
    seed: 7
  }],
  ["G4", { prompt: "x".repeat(2000), negative_prompt: "x".repeat(500), size: "1024*1024", n: 4, prompt_extend: false, seed: 3 }],
  ["G5", { first_frame_url: imageUrl, last_frame_url: imageUrl, prompt: "x".repeat(800), resolution: "480P", prompt_extend: true, seed: 4 }],
  ["G7", { prompt: "x".repeat(2500), negative_prompt: "x".repeat(2500), mode: "pro", aspect_ratio: "1:1", duration: 10 }]
]

describe("entries", () => {
  it("cover SPEC.md §4.1 in order, with its paths", () => {
    assert.deepStrictEqual(Registry.entries.map((e) => e.endpoints.join(",")), specOrder)
    for (const e of Registry.entries) assert.strictEqual(e.path, specPaths[e.endpoints[0]!], e.id)
  })

  it("have unique ids and paths", () => {
    assert.strictEqual(new Set(Registry.entries.map((e) => e.id)).size, Registry.entries.length)
    assert.strictEqual(new Set(Registry.entries.map((e) => e.path)).size, Registry.entries.length)
  })

  it("name their vendor in their id and task path", () => {
    for (const e of Registry.entries) {
      assert.isTrue(e.id.startsWith(`${e.vendor}/`), e.id)
      if (e.kind === "task") assert.isTrue(e.path.startsWith(`/vendors/${e.vendor}/v1/${e.model}/`), e.id)
    }
  })

  it("give every task entry a result kind, per SPEC.md §4.10", () => {
    const images = new Set(["G4", "G6"])
    for (const e of Registry.entries) {
      if (e.kind !== "task") {
        assert.isUndefined(e.result, e.id)
        continue
      }
      assert.isTrue(ModelEntry.isTaskEntry(e), e.id)
      assert.strictEqual(e.result, images.has(e.endpoints[0]!) ? "images" : "videos", e.id)
      assert.isTrue(e.mirror, e.id)
    }
  })

  it("have retentions that parse as durations: 2 days for G1 and G2, none elsewhere", () => {
    for (const e of Registry.entries) {
      if (e.retention !== null) assert.isTrue(Duration.isDuration(Duration.decode(e.retention)), e.id)
      const expected = e.endpoints.includes("G1") || e.endpoints.includes("G2") ? Duration.days(2) : null
      assert.deepStrictEqual(e.retention === null ? null : Duration.decode(e.retention), expected, e.id)
    }
  })

  it("have poll cadences that parse, are ordered and end before the deadline", () => {
    for (const e of Registry.entries) {
      const [low, high] = e.poll.every.map(Duration.decode)
      assert.isTrue(Duration.lessThanOrEqualTo(low!, high!), e.id)
      assert.isTrue(Duration.lessThan(high!, Duration.decode(e.poll.deadline)), e.id)
      assert.isTrue(Duration.lessThan(Duration.decode(e.poll.initial), Duration.decode(e.poll.deadline)), e.id)
    }
    assert.deepStrictEqual(entry("G1").poll.every.map(Duration.decode), [Duration.seconds(5), Duration.seconds(10)])
    assert.deepStrictEqual(entry("G2").poll.every.map(Duration.decode), [Duration.seconds(10), Duration.seconds(15)])
  })

  it("mark stages: preview by name, beta for E7, ga otherwise", () => {
    for (const e of Registry.entries) {
      const expected = e.endpoints.includes("E7") ? "beta" : e.model.includes("preview") ? "preview" : "ga"
      assert.strictEqual(e.stage, expected, e.id)
    }
  })

  it("carry status on create only for E7 and E8", () => {
    for (const e of Registry.entries) {
      assert.strictEqual(e.createIncludesStatus, e.endpoints.includes("E7") || e.endpoints.includes("E8"), e.id)
    }
  })

  it("map to the protocols of UPSTREAMS.md", () => {
    const protocols = Object.fromEntries(Registry.entries.map((e) => [e.endpoints[0]!, `${e.upstream.protocol}:${e.upstream.operation}`]))
    assert.deepStrictEqual(protocols, {
      E1: "generate-content:generateContent",
      E2: "responses:responses",
      E3: "async-task:video-synthesis",
      E4: "async-task:video-synthesis",
      E5: "async-task:video-synthesis",
      E6: "async-task:video-synthesis",
      E7: "videos:videos",
      E8: "jwt-task:image2video",
      G1: "long-running:predictLongRunning",
      G2: "long-running:predictLongRunning",
      G3: "task-info:generation",
      G4: "async-task:image-generation",
      G5: "async-task:image2video",
      G6: "async-task:image-generation",
      G7: "jwt-task:text2video",
      G8: "task-info:generation"
    })
    assert.deepStrictEqual(entry("E5").upstream.rename, { image: "img_url" })
    assert.deepStrictEqual(entry("E6").upstream.rename, { image: "img_url", last_frame: "last_frame_url" })
  })

  it("list only body fields in their upstream mappings", () => {
    for (const e of Registry.entries) {
      const fields = new Set(Object.keys((e.request as unknown as { fields?: object }).fields ?? {}))
      for (const name of [...(e.upstream.input ?? []), ...(e.upstream.parameters ?? []), ...Object.keys(e.upstream.rename ?? {})]) {
        assert.isTrue(fields.has(name), `${e.id}: ${name}`)
      }
    }
  })

  it("accept a minimal body for every entry", () => {
    for (const id of specOrder) assert.deepStrictEqual(issuesOf(id, minimalBodies[id]), [], id)
  })

  it("accept bodies using every field", () => {
    for (const [id, body] of fullBodies) assert.deepStrictEqual(issuesOf(id, body), [], id)
  })

  it("reject a body that is not a JSON object", () => {
    assert.deepStrictEqual(issuesOf("E4", ["a"]), [{ param: "body", message: "the request body must be a JSON object" }])
    assert.strictEqual(issuesOf("E4", null)[0]?.param, "body")
  })

  it("reject unknown fields by name on every entry", () => {
    for (const id of specOrder) {
      const issues = issuesOf(id, { ...(minimalBodies[id] as object), sead: 1 })
      assert.deepStrictEqual(issues.map((i) => i.param), ["sead"], id)
    }
  })

  it("look entries up by path, model and endpoint", () => {
    assert.strictEqual(Registry.byPath(Registry.entries, "/v1/chat/completions")?.endpoints[0], "E1")
    assert.strictEqual(
      Registry.byModel(Registry.entries, "/v1/chat/completions", "image-model-2.5-flash-image-preview")?.id,
      "vendor-d/image-model-2.5-flash-image-preview"
    )
    assert.isUndefined(Registry.byModel(Registry.entries, "/v1/chat/completions", "other"))
    assert.strictEqual(Registry.byId(Registry.entries, "vendor-b/vid2/image")?.endpoints[0], "G6")
  })

  it("apply deployment overrides", () => {
    const { entries, unknown } = Registry.applyOverrides(Registry.entries, {
      "vendor-d/film": { upstreamModel: "real-film-id", poll: { deadline: "1 hour" }, retention: "1 day" },
      "vendor-b/vid2/image": { enabled: false },
      "nope/nothing": {}
    })
    assert.deepStrictEqual(unknown, ["nope/nothing"])
    assert.strictEqual(entries.length, Registry.entries.length - 1)
    const film = Registry.byId(entries, "vendor-d/film")!
    assert.strictEqual(film.upstream.model, "real-film-id")
    assert.strictEqual(film.poll.deadline, "1 hour")
    assert.deepStrictEqual(film.poll.every, entry("G2").poll.every)
    assert.strictEqual(film.retention, "1 day")
  })
})

describe("indexById", () => {
  it("finds every entry by its id, as byId does", () => {
    const index = Registry.indexById(Registry.entries)
    assert.strictEqual(index.size, Registry.entries.length)
    for (const e of Registry.entries) assert.strictEqual(index.get(e.id), Registry.byId(Registry.entries, e.id))
    assert.isUndefined(index.get("vendor-x/none"))
  })
})

/**
 * What each request field means (SPEC.md §4, UPSTREAMS.md) and one valid example body per request
 * schema. The vendor files attach them to their schemas with `Fields.described`, so the OpenAPI
 * document, `/docs` and `/playground` show them. Kept apart from the schemas so bounds and meanings
 * can change independently.
 */
import type { FieldDoc } from "../Fields.js"

type Docs = Readonly<Record<string, FieldDoc>>

// ---------------------------------------------------------------------------------------------
// Fields many task models share
// ---------------------------------------------------------------------------------------------

const prompt = "What to generate, in plain language: subject, action, setting, style, camera movement."
const negativePrompt = "What the result should avoid, e.g. \"blurry, low quality, watermark, text\"."
const seed =
  "Random seed. The same seed with the same request gives a similar result; omit it for a fresh random one each time."
const promptExtend: FieldDoc = {
  description:
    "Let the model rewrite and enrich the prompt before generating. Usually improves short prompts; adds a little latency. Turn off to have the prompt used exactly as written.",
  default: true
}
const promptExtendPlain =
  "Let the model rewrite and enrich the prompt before generating. Usually improves short prompts; adds a little latency. Turn off to have the prompt used exactly as written."
const audio: FieldDoc = {
  description:
    "Generate a synchronized soundtrack automatically (default true); false makes the video silent. Ignored when audio_url is given.",
  default: true
}
const audioUrl =
  "Public URL of your own audio track (WAV or MP3, 3 to 30 s, at most 15 MB); overrides audio. Shorter audio leaves the rest of the video silent, longer audio is cut. Fetched by the vendor, not by Genway."
const firstFrame =
  "The first frame of the video: a public image URL or Base64 data (raw or as a data URL). JPEG, PNG without transparency, BMP or WEBP; 360 to 2000 px on each side; at most 10 MB."

// ---------------------------------------------------------------------------------------------
// E1: chat completions (vendor-d)
// ---------------------------------------------------------------------------------------------

export const chat: Docs = {
  model: "The model to use: image-model-2.5-flash-image-preview (as listed by GET /v1/models).",
  stream: {
    description:
      "false (default): one JSON chat completion. true: server-sent events, one chat.completion.chunk per part, then a usage chunk and data: [DONE].",
    default: false
  },
  messages:
    "The conversation, oldest first. Each message has a role and a content that is a string or an array of parts: text parts {type: \"text\", text} and image parts {type: \"image_url\", image_url: {url}}. Input images must be Base64 data URLs (data:image/png;base64,…), never addresses. The generated image comes back as an image_url part whose url is Base64 data.",
  n: "Number of choices to generate (accepted for client compatibility; the vendor returns one).",
  temperature: "Sampling temperature, 0 to 2: higher is more varied, lower is more deterministic.",
  top_p: "Nucleus sampling, 0 to 1: only the most likely tokens whose probabilities add up to top_p are considered.",
  max_tokens: "Upper bound of generated tokens (older name of max_completion_tokens).",
  max_completion_tokens: "Upper bound of generated tokens, the image included.",
  stream_options: "With stream true: {include_usage: true} asks for the final usage chunk (always sent by this model).",
  user: "An identifier of your end user, for abuse monitoring; not shown to anyone else.",
  modalities: "Output modalities requested, e.g. [\"image\", \"text\"]; accepted for client compatibility."
}

/** `stream_options` of E1. */
export const streamOptions: Docs = { include_usage: "Ask for a final chunk with token usage (this model always sends it)." }

/** Meaning of a chat message's own fields (the parts are described on their schemas). */
export const chatMessage: Docs = {
  role: "Who wrote the message: system (instructions), user (your request) or assistant (an earlier answer).",
  content: "A string, or an array of text and image_url parts (see below).",
  name: "Optional name of the author, to tell participants of the same role apart."
}

/** A text part of a message's content. */
export const textPart: Docs = { type: "Always \"text\".", text: "The text: your request, or instructions about the image to make." }

/** An image part of a message's content. */
export const imagePart: Docs = {
  type: "Always \"image_url\".",
  image_url: "The image, as {url}."
}

/** The `image_url` object of an image part. */
export const imageUrl: Docs = {
  url:
    "In a request: a data URL, data:<media type>;base64,<data> (JPEG, PNG or WEBP, at most 10 MB); addresses are refused. In the answer: the generated image as Base64 data without a data-URL prefix."
}

export const chatExample = {
  model: "image-model-2.5-flash-image-preview",
  stream: false,
  messages: [{ role: "user", content: [{ type: "text", text: "A watercolor lighthouse on a cliff at sunset" }] }]
}

// ---------------------------------------------------------------------------------------------
// E2: model responses (vendor-a)
// ---------------------------------------------------------------------------------------------

export const responses: Docs = {
  model: "The model deployment to use (your deployment's name, forwarded to the vendor).",
  input: "The input: a string, or an array of message objects ({role, content}) and earlier output items.",
  instructions: "A system (developer) message put before the input; not carried over by previous_response_id.",
  previous_response_id: "Continue the conversation of this earlier stored response instead of resending it.",
  prompt: "A reference to a stored prompt template and its variables: {id, version?, variables?}.",
  max_output_tokens: "Upper bound of generated tokens, reasoning tokens included (at least 1).",
  max_tool_calls: "Upper bound of built-in tool calls over the whole response.",
  temperature: "Sampling temperature, 0 to 2: higher is more varied, lower is more deterministic.",
  top_p: "Nucleus sampling, 0 to 1; change this or temperature, not both.",
  top_logprobs: "Number of most likely tokens (0 to 20) to return with their log probabilities at each position.",
  parallel_tool_calls: "Whether the model may call several tools at once.",
  stream: {
    description: "true: the response is streamed as server-sent events (response.output_text.delta, …, response.completed).",
    default: false
  },
  background: {
    description:
      "true: run in the background and answer at once with status queued or in_progress; fetch it later with GET <this path>/{response_id}.",
    default: false
  },
  store: "Keep the response so it can be retrieved later or continued with previous_response_id.",
  text: "Output format: {format: {type: \"text\"}} or structured JSON output {format: {type: \"json_schema\", …}}.",
  tools: "Tools the model may call: built-in tools (code interpreter, file search, web search, image generation), MCP servers, your own functions.",
  tool_choice: "\"none\", \"auto\" (default), \"required\", or an object naming one tool to call.",
  reasoning: "Reasoning models only: {effort: \"low\" | \"medium\" | \"high\", summary?}.",
  truncation: "\"auto\": drop the oldest input items when the context window overflows; \"disabled\" (default): fail instead.",
  metadata: "Your own key-value labels, stored with the response: at most 16 pairs, keys up to 64 and values up to 512 characters.",
  user: "An identifier of your end user, for abuse monitoring.",
  include: "Extra output data to include, e.g. \"code_interpreter_call.outputs\" or \"file_search_call.results\"."
}

export const responsesExample = { model: "responses", input: "Write a haiku about a gateway." }

// ---------------------------------------------------------------------------------------------
// E3: video editing (vendor-b)
// ---------------------------------------------------------------------------------------------

export const vace: Docs = {
  model: "Always vid2.1-vace-plus.",
  function:
    "What to do: image_reference (a video from 1 to 3 reference images), video_repainting (re-render a video following its pose, depth or outlines), video_edit (regenerate the masked area of a video), video_extension (continue a clip or fill between frames), video_outpainting (extend the frame outwards). Each function takes its own fields below; others are refused by name.",
  prompt: "What the result should show. Required for image_reference and video_extension; at most 800 characters.",
  negative_prompt: negativePrompt,
  seed,
  prompt_extend: promptExtend,
  ref_images_url:
    "image_reference: 1 to 3 public image URLs (JPEG, PNG, BMP, TIFF, WEBP; 360 to 2000 px; at most 10 MB; ASCII URL) of the subjects or background to use.",
  obj_or_bg:
    "image_reference: one label per image of ref_images_url, in order: obj (a subject) or bg (the background). Required with more than one image; a single image defaults to [\"obj\"].",
  size: { description: "image_reference: output size, width*height (720P tier).", default: "1280*720" },
  duration: "image_reference, video_extension: length in seconds; only 5.",
  video_url:
    "video_repainting, video_edit, video_outpainting: public URL of the input video (MP4, at most 50 MB, at least 16 fps, at most 5 s).",
  control_condition:
    "video_repainting (required), video_extension (with a guidance clip): what to follow from the input video: posebodyface (pose, body and face), posebody, depth, or scribble (outlines).",
  strength: { description: "video_repainting: how strongly the control condition constrains the result, 0.0 to 1.0.", default: 1 },
  mask_image_url: "video_edit: public URL of a mask image; white marks the area to regenerate. Give this or mask_video_url.",
  mask_video_url: "video_edit: public URL of a mask video, one mask per frame. Give this or mask_image_url.",
  mask_type: "video_edit: tracking (the mask follows the masked object's motion) or fixed (the mask stays where it is).",
  first_frame_url: "video_extension: public URL of an image to start from.",
  last_frame_url: "video_extension: public URL of an image to end on.",
  first_clip_url: "video_extension: public URL of a clip to continue from (needs control_condition).",
  last_clip_url: "video_extension: public URL of a clip to lead into (needs control_condition).",
  top_scale: "video_outpainting: how far to extend the frame upwards, as a factor of its height, 1.0 to 2.0.",
  bottom_scale: "video_outpainting: how far to extend the frame downwards, 1.0 to 2.0.",
  left_scale: "video_outpainting: how far to extend the frame to the left, as a factor of its width, 1.0 to 2.0.",
  right_scale: "video_outpainting: how far to extend the frame to the right, 1.0 to 2.0."
}

export const vaceExample = {
  model: "vid2.1-vace-plus",
  function: "image_reference",
  prompt: "The dog from the photo runs across a sunny beach",
  ref_images_url: ["https://example.com/dog.png"],
  obj_or_bg: ["obj"]
}

// ---------------------------------------------------------------------------------------------
// E4–E6, G5 (vendor-b video), G4/G6 (vendor-b images)
// ---------------------------------------------------------------------------------------------

export const t2v: Docs = {
  prompt: `${prompt} At most 2000 characters.`,
  negative_prompt: negativePrompt,
  audio,
  audio_url: audioUrl,
  size: {
    description:
      "Output size, width*height. 480P tier: 832*480, 480*832, 624*624; 720P: 1280*720, 720*1280, 960*960, 1088*832, 832*1088; 1080P: 1920*1080, 1080*1920, 1440*1440, 1632*1248, 1248*1632. Larger sizes cost more and take longer.",
    default: "1280*720"
  },
  duration: "Length in seconds: 5 or 10 (24 fps).",
  prompt_extend: promptExtend,
  seed
}

export const t2vExample = { prompt: "A red fox trotting through fresh snow at dawn, cinematic", duration: 5 }

export const i2v: Docs = {
  prompt: `How the picture should move and what happens. At most 2000 characters.`,
  image: firstFrame,
  negative_prompt: negativePrompt,
  audio,
  audio_url: audioUrl,
  resolution: { description: "Output resolution tier; the aspect ratio follows the image.", default: "720P" },
  duration: "Length in seconds: 5 or 10 (24 fps).",
  prompt_extend: promptExtend,
  seed
}

export const i2vExample = { prompt: "The cat slowly turns its head and blinks", image: "https://example.com/cat.png" }

export const i2vPlus: Docs = {
  prompt: "How the picture should move and what happens. At most 800 characters.",
  image: firstFrame,
  last_frame: "Optional last frame to end on, with the same rules as image.",
  negative_prompt: negativePrompt,
  resolution: {
    description: "Output resolution tier; the aspect ratio follows the image. (SPEC.md lists 480P and 1080P; its example's 720P is accepted too.)",
    default: "1080P"
  },
  duration: "Length in seconds: only 5 (30 fps).",
  prompt_extend: promptExtend,
  seed
}

export const i2vPlusExample = { prompt: "Waves roll onto the shore", image: "https://example.com/beach.png", resolution: "480P" }

export const t2i: Docs = {
  prompt: `What the image should show. At most 2000 characters.`,
  negative_prompt: negativePrompt,
  size: "Output size, width*height.",
  n: "Number of images to generate, 1 to 4.",
  prompt_extend: promptExtendPlain,
  seed
}

export const t2iExample = { prompt: "A flat illustration of a paper boat on a blue pond", size: "1024*1024", n: 1 }

export const kf2v: Docs = {
  first_frame_url: firstFrame,
  last_frame_url: "The last frame of the video; same rules as first_frame_url. The model interpolates between the two.",
  prompt: "What happens between the two frames. At most 800 characters.",
  resolution: "Output resolution tier.",
  prompt_extend: promptExtendPlain,
  seed
}

export const kf2vExample = {
  first_frame_url: "https://example.com/bud.png",
  last_frame_url: "https://example.com/flower.png",
  prompt: "The bud opens into a flower"
}

// ---------------------------------------------------------------------------------------------
// E7: vendor-a video
// ---------------------------------------------------------------------------------------------

export const reel: Docs = {
  prompt: `${prompt} At most 2000 characters. Content must suit audiences under 18; no real people, copyrighted characters or music.`,
  model: { description: "Only reel-2.", default: "reel-2" },
  image:
    "Optional first frame: a public URL or a data URL (data:image/png;base64,…) of a JPEG, PNG or WEBP image, at most 10 MB. Its pixel size must be exactly size. Images of human faces are refused by the vendor.",
  seconds: { description: "Length in seconds, sent as a string: \"4\", \"8\" or \"12\".", default: "8" },
  size: { description: "Output size, widthxheight: 720x1280 (portrait 9:16) or 1280x720 (landscape 16:9).", default: "1280x720" }
}

export const reelExample = { prompt: "A paper airplane glides over a city at dusk", seconds: "4", size: "1280x720" }

// ---------------------------------------------------------------------------------------------
// E8, G7: vendor-c
// ---------------------------------------------------------------------------------------------

export const clip: Docs = {
  image:
    "First frame: a public URL, or raw Base64 without a data-URL prefix. JPEG or PNG, at most 10 MB, each side at least 300 px, aspect ratio between 1:2.5 and 2.5:1. Required unless image_tail is given.",
  image_tail: "Last frame to end on: a public URL or raw Base64 (no data-URL prefix), same rules as image. Cannot be combined with masks when image is also given.",
  prompt:
    "What happens, at most 2500 characters. <<<voice_1>>> and <<<voice_2>>> mark lines spoken with the voices of voice_list.",
  negative_prompt: "What the result should avoid, at most 2500 characters.",
  voice_list:
    "Up to 2 voices, [{voice_id}], from the vendor's custom voice interface; <<<voice_N>>> in the prompt selects the N-th. Needs sound \"on\" and is billed as voice generation.",
  sound: { description: "\"on\" to generate sound (required with voices), \"off\" for a silent video.", default: "off" },
  mode: { description: "std: standard, cost-effective; pro: higher quality, slower and dearer.", default: "std" },
  static_mask:
    "Motion brush: a mask image (URL or raw Base64) marking the area that must stay still; same aspect ratio as image.",
  dynamic_masks:
    "Motion brush: up to 6 {mask, trajectories} pairs; each mask marks an area and its trajectory [{x, y}, …] (pixels of image) is the path that area follows.",
  duration: { description: "Length in seconds: 5 or 10.", default: 5 }
}

/** An entry of E8's voice_list. */
export const voice: Docs = { voice_id: "A voice id from the vendor's custom voice interface (not its lip-sync interface)." }

/** An entry of E8's dynamic_masks. */
export const dynamicMask: Docs = {
  mask: "Mask image (URL or raw Base64) marking the area to move; same rules as image.",
  trajectories: "The path the masked area follows: points [{x, y}, …] in pixels of image, in order."
}

/** A point of a trajectory. */
export const point: Docs = { x: "Horizontal position in pixels, from the left edge of image.", y: "Vertical position in pixels, from the top edge of image." }

export const clipExample = { image: "https://example.com/portrait.jpg", prompt: "She smiles and waves", mode: "std", duration: 5 }

export const clipT2v: Docs = {
  prompt: `${prompt} At most 2500 characters.`,
  negative_prompt: "What the result should avoid, at most 2500 characters.",
  mode: "std: standard, cost-effective; pro: higher quality, slower and dearer.",
  aspect_ratio: "Frame shape: 16:9 landscape, 9:16 portrait or 1:1 square.",
  duration: "Length in seconds: 5 or 10."
}

export const clipT2vExample = { prompt: "A hot air balloon rises over misty hills", aspect_ratio: "16:9" }

// ---------------------------------------------------------------------------------------------
// G1, G2: vendor-d video
// ---------------------------------------------------------------------------------------------

export const film: Docs = {
  prompt: `${prompt} At most 2000 characters.`,
  image:
    "Optional first frame, inline only: Base64 data (raw or a data URL) of a JPEG, PNG or WEBP image, at most 10 MB. Addresses are refused.",
  last_frame: "Optional last frame to end on, inline like image; needs image.",
  aspect_ratio: "Frame shape: 16:9 landscape or 9:16 portrait.",
  duration: "Length in seconds: 4, 6 or 8.",
  resolution: "Output resolution.",
  negative_prompt: negativePrompt
}

export const filmExample = { prompt: "Timelapse of clouds over a mountain lake", aspect_ratio: "16:9", duration: 8 }

// ---------------------------------------------------------------------------------------------
// G3, G8: vendor-e
// ---------------------------------------------------------------------------------------------

export const spark: Docs = {
  prompt: `${prompt} At most 2000 characters.`,
  negative_prompt: negativePrompt,
  size: "Output size, width*height (1080P tier).",
  duration: "Length in seconds: 5, 10 or 15.",
  shot_type: "single: one continuous shot; multi: the model may cut between several shots to tell the prompt's story.",
  audio: "Generate a synchronized soundtrack automatically; false makes the video silent. Ignored when audio_url is given.",
  audio_url: audioUrl,
  prompt_extend: promptExtendPlain,
  seed
}

export const sparkExample = { prompt: "A chef tosses noodles in a wok, steam rising", duration: 5, shot_type: "single" }

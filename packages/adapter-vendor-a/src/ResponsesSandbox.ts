/**
 * The sandboxed model responses upstream (E2): what vendor-a does without credentials. The text is
 * generated from the input, deterministically (the same request gets the same words), tokens are
 * counted as words, `max_output_tokens` cuts the text and makes the response `incomplete`, and a
 * stream carries the vendor's full event sequence so the official clients' stream helpers work.
 * Nothing here does I/O. It is the `sandbox` of vendor-a's manifest.
 */
import { Responses } from "@genway/core"
import { createHash, randomBytes } from "node:crypto"

/** A new response id in the vendor's shape. */
export const newId = (): string => `resp_${randomBytes(24).toString("hex")}`


const words = (text: string) => text.split(/\s+/).filter((w) => w.length > 0)

const vocabulary = [
  "amber", "harbor", "lantern", "meadow", "quartz", "river", "signal", "tidal", "velvet", "willow",
  "copper", "drift", "ember", "fable", "glacier", "horizon", "island", "juniper", "kestrel", "lumen",
  "marble", "nectar", "orbit", "prism", "quiet", "ripple", "summit", "thistle", "umber", "vista"
]

/** The sandbox's answer to an input: says it is a sandbox, echoes the input's start, then words chosen by its hash. */
export const answerFor = (input: string, instructions: string): string => {
  const digest = createHash("sha256").update(instructions).update("\u0000").update(input).digest()
  const count = 8 + (digest[0]! % 9)
  const chosen = Array.from({ length: count }, (_, i) => vocabulary[digest[i + 1]! % vocabulary.length]!)
  const excerpt = input.trim().replace(/\s+/g, " ")
  const quoted = excerpt.length > 80 ? `${excerpt.slice(0, 77)}...` : excerpt
  const opening = quoted === "" ? "This is a sandboxed response to an empty input." : `This is a sandboxed response to "${quoted}".`
  const sentence = chosen.join(" ")
  return `${opening} ${sentence.charAt(0).toUpperCase()}${sentence.slice(1)}.`
}

const str = (v: unknown): string => (typeof v === "string" ? v : "")

/**
 * The finished response to `body`: `completed`, or `incomplete` when `max_output_tokens` cut it.
 * `createdAtMs` is the creation time; `model` the model reported.
 */
export const respond = (body: Readonly<Record<string, unknown>>, id: string, createdAtMs: number): Responses.ResponseObject => {
  const input = Responses.inputText(body["input"])
  const instructions = str(body["instructions"])
  const full = answerFor(input, instructions)
  const limit = typeof body["max_output_tokens"] === "number" ? body["max_output_tokens"] : undefined
  const fullWords = words(full)
  const cut = limit !== undefined && fullWords.length > limit
  const text = cut ? fullWords.slice(0, limit).join(" ") : full
  const inputTokens = words(input).length + words(instructions).length
  const outputTokens = cut ? limit! : fullWords.length
  const status = cut ? "incomplete" : "completed"
  return {
    id,
    object: "response",
    created_at: Math.floor(createdAtMs / 1000),
    status,
    background: body["background"] === true,
    error: null,
    incomplete_details: cut ? { reason: "max_output_tokens" } : null,
    instructions: body["instructions"] ?? null,
    max_output_tokens: body["max_output_tokens"] ?? null,
    max_tool_calls: body["max_tool_calls"] ?? null,
    model: str(body["model"]),
    output: [messageItem(id, status, text)],
    output_text: text,
    parallel_tool_calls: body["parallel_tool_calls"] ?? true,
    previous_response_id: body["previous_response_id"] ?? null,
    reasoning: body["reasoning"] ?? { effort: null, summary: null },
    store: body["store"] ?? true,
    temperature: body["temperature"] ?? 1,
    text: body["text"] ?? { format: { type: "text" } },
    tool_choice: body["tool_choice"] ?? "auto",
    tools: body["tools"] ?? [],
    top_logprobs: body["top_logprobs"] ?? 0,
    top_p: body["top_p"] ?? 1,
    truncation: body["truncation"] ?? "disabled",
    usage: {
      input_tokens: inputTokens,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens: outputTokens,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: inputTokens + outputTokens,
      prompt_tokens: inputTokens,
      completion_tokens: outputTokens,
      prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
      completion_tokens_details: {
        reasoning_tokens: 0,
        audio_tokens: 0,
        accepted_prediction_tokens: 0,
        rejected_prediction_tokens: 0
      }
    },
    user: body["user"] ?? null,
    metadata: body["metadata"] ?? {}
  }
}

const messageItem = (responseId: string, status: string, text: string | undefined) => ({
  id: `msg_${responseId.slice("resp_".length)}`,
  type: "message" as const,
  status,
  role: "assistant" as const,
  content: text === undefined ? [] : [{ type: "output_text" as const, text, annotations: [] }]
})

/** The response before it finished: `queued` or `in_progress`, without output or usage. */
export const unfinished = (final: Responses.ResponseObject, status: "queued" | "in_progress"): Responses.ResponseObject => ({
  ...final,
  status,
  incomplete_details: null,
  output: [],
  output_text: "",
  usage: null
})

/** Every event of the streamed `final`, in the vendor's order, numbered from 0. */
export const events = (final: Responses.ResponseObject): ReadonlyArray<Responses.ResponseEvent> => {
  let sequence = 0
  const event = (type: string, fields: Record<string, unknown>): Responses.ResponseEvent => ({ type, sequence_number: sequence++, ...fields })
  const text = Responses.outputTextOf(final)
  const item = messageItem(final.id, "in_progress", undefined)
  const at = { item_id: item.id, output_index: 0, content_index: 0 }
  const part = { type: "output_text", text: "", annotations: [] }
  const deltas = text.split(/(?<=\s)/).filter((d) => d.length > 0)
  const terminal = final.status === "incomplete" ? "response.incomplete" : "response.completed"
  return [
    event("response.created", { response: unfinished(final, final["background"] === true ? "queued" : "in_progress") }),
    event("response.in_progress", { response: unfinished(final, "in_progress") }),
    event("response.output_item.added", { output_index: 0, item }),
    event("response.content_part.added", { ...at, part }),
    ...deltas.map((delta) => event("response.output_text.delta", { ...at, delta, logprobs: [] })),
    event("response.output_text.done", { ...at, text, logprobs: [] }),
    event("response.content_part.done", { ...at, part: { ...part, text } }),
    event("response.output_item.done", { output_index: 0, item: messageItem(final.id, final.status, text) }),
    event(terminal, { response: final })
  ]
}

import * as SqlClient from "@effect/sql/SqlClient"
import { Emulator } from "@genway/adapter-vendor-a/testing"
import { Registry } from "@genway/registry"
import { assert, describe, it, layer } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as TestClock from "effect/TestClock"
import OpenAI, { type APIError } from "openai"
import { ResponsesSandbox } from "@genway/adapter-vendor-a"

const { answerFor } = ResponsesSandbox
import * as AnswerRows from "../src/platform/AnswerRows.js"
import * as ResponsesService from "../src/responses/Service.js"
import * as Harness from "./harness.js"
import * as R from "./responsesHarness.js"

const model = "text-model-1"

const expectedOrder = (deltas: number, terminal = "response.completed") => [
  "response.created",
  "response.in_progress",
  "response.output_item.added",
  "response.content_part.added",
  ...Array.from({ length: deltas }, () => "response.output_text.delta"),
  "response.output_text.done",
  "response.content_part.done",
  "response.output_item.done",
  terminal
]

/** Every event of a streamed create, read with the official client. */
const streamed = (client: OpenAI, params: Omit<OpenAI.Responses.ResponseCreateParamsStreaming, "stream">) =>
  R.call(async () => {
    const stream = await client.responses.create({ ...params, stream: true })
    const events: Array<OpenAI.Responses.ResponseStreamEvent> = []
    for await (const event of stream) events.push(event)
    return events
  })

const deltaText = (events: ReadonlyArray<OpenAI.Responses.ResponseStreamEvent>) =>
  events.flatMap((e) => (e.type === "response.output_text.delta" ? [e.delta] : [])).join("")

describe("E2 sandbox", () => {
  layer(R.sandboxLayer())((it) => {
    it.effect("create: the §2.6 object with output_text, deterministic from the input, marked as sandboxed", () =>
      Effect.gen(function*() {
        const client = yield* R.client()
        const { data, response } = yield* R.call(() => client.responses.create({ model, input: "Tell me about kites" }).withResponse())
        assert.strictEqual(response.status, 200)
        assert.strictEqual(response.headers.get("x-genway-sandbox"), "true")
        assert.match(data.id, /^resp_/)
        assert.strictEqual(data.object, "response")
        assert.strictEqual(data.status, "completed")
        assert.strictEqual(data.model, model)
        assert.strictEqual(data.output_text, answerFor("Tell me about kites", ""))
        assert.isAbove(data.usage!.output_tokens, 0)
        const again = yield* R.call(() => client.responses.create({ model, input: "Tell me about kites" }))
        assert.strictEqual(again.output_text, data.output_text)
        assert.notStrictEqual(again.id, data.id)

        // On the wire, not only in the client: output_text and SPEC's usage fields.
        const raw = yield* Harness.send(Harness.post(R.e2, { model, input: [{ role: "user", content: "Tell me about kites" }] }))
        assert.strictEqual(raw.json.output_text, data.output_text)
        assert.deepStrictEqual(raw.json.output[0].content[0], { type: "output_text", text: data.output_text, annotations: [] })
        assert.strictEqual(raw.json.output[0].role, "assistant")
        assert.strictEqual(raw.json.usage.total_tokens, raw.json.usage.prompt_tokens + raw.json.usage.completion_tokens)
        assert.isNumber(raw.json.usage.completion_tokens_details.reasoning_tokens)
      }))

    it.effect("stream: the full event sequence in order, numbered, ending with the terminal event; the stream helper works", () =>
      Effect.gen(function*() {
        const client = yield* R.client()
        const events = yield* streamed(client, { model, input: "stream me a story" })
        const text = answerFor("stream me a story", "")
        assert.deepStrictEqual(events.map((e) => e.type), expectedOrder(text.split(" ").length))
        assert.deepStrictEqual(events.map((e) => e.sequence_number), events.map((_, i) => i))
        assert.strictEqual(deltaText(events), text)
        const last = events.at(-1)!
        assert.strictEqual(last.type === "response.completed" && last.response.output_text, text)

        const final = yield* R.call(() => client.responses.stream({ model, input: "stream me a story" }).finalResponse())
        assert.strictEqual(final.status, "completed")
        assert.strictEqual(final.output_text, text)

        const raw = yield* Harness.send(Harness.post(R.e2, { model, input: "x", stream: true }))
        assert.match(raw.headers["content-type"]!, /^text\/event-stream/)
        assert.strictEqual(raw.headers["x-genway-sandbox"], "true")
        assert.match(raw.text, /^event: response\.created\ndata: \{"type":"response\.created","sequence_number":0,/)
      }))

    it.effect("max_output_tokens cuts the text: the response is incomplete, and so is the stream's terminal event", () =>
      Effect.gen(function*() {
        const client = yield* R.client()
        const cut = yield* R.call(() => client.responses.create({ model, input: "long", max_output_tokens: 3 }))
        assert.strictEqual(cut.status, "incomplete")
        assert.deepStrictEqual(cut.incomplete_details, { reason: "max_output_tokens" })
        assert.strictEqual(cut.output_text.split(" ").length, 3)
        const events = yield* streamed(client, { model, input: "long", max_output_tokens: 3 })
        assert.deepStrictEqual(events.map((e) => e.type), expectedOrder(3, "response.incomplete"))
      }))

    it.effect("background: queued at once, in_progress, then completed — read back, and finished by the poller alone", () =>
      Effect.gen(function*() {
        const client = yield* R.client()
        const queued = yield* R.call(() => client.responses.create({ model, input: "in the background", background: true }))
        assert.strictEqual(queued.status, "queued")
        assert.strictEqual((yield* R.call(() => client.responses.retrieve(queued.id))).status, "queued")
        yield* TestClock.adjust("100 millis")
        assert.strictEqual((yield* R.call(() => client.responses.retrieve(queued.id))).status, "in_progress")
        yield* TestClock.adjust("900 millis")
        const done = yield* R.call(() => client.responses.retrieve(queued.id))
        assert.strictEqual(done.status, "completed")
        assert.strictEqual(done.output_text, answerFor("in the background", ""))

        const other = yield* R.call(() => client.responses.create({ model, input: "nobody reads me", background: true }))
        yield* TestClock.adjust("1 second")
        assert.strictEqual(yield* R.poll, 1)
        const raw = yield* Harness.send(Harness.get(`${R.e2}/${other.id}`))
        assert.strictEqual(raw.json.status, "completed")
        assert.strictEqual(raw.json.output_text, answerFor("nobody reads me", ""))
        assert.strictEqual(raw.headers["x-genway-sandbox"], "true")
      }))

    it.effect("kept unless store is false; readable only by its tenant; previous_response_id only of one's own", () =>
      Effect.gen(function*() {
        const client = yield* R.client()
        const kept = yield* R.call(() => client.responses.create({ model, input: "keep me", store: true }))
        assert.deepStrictEqual(yield* R.call(() => client.responses.retrieve(kept.id)), kept)
        const byDefault = yield* R.call(() => client.responses.create({ model, input: "kept by default" }))
        assert.strictEqual((yield* R.call(() => client.responses.retrieve(byDefault.id))).status, "completed")
        const streamedKept = yield* streamed(client, { model, input: "streamed and kept" })
        const streamedId = streamedKept[0]!.type === "response.created" ? streamedKept[0]!.response.id : ""
        assert.strictEqual((yield* R.call(() => client.responses.retrieve(streamedId))).output_text, answerFor("streamed and kept", ""))

        const notKept = yield* R.call(() => client.responses.create({ model, input: "forget me", store: false }))
        const missing = yield* Effect.flip(R.call(() => client.responses.retrieve(notKept.id)))
        assert.instanceOf(missing, OpenAI.NotFoundError)

        const other = yield* R.client(Harness.tokenB)
        const theirs = yield* Effect.flip(R.call(() => other.responses.retrieve(kept.id)))
        assert.instanceOf(theirs, OpenAI.NotFoundError)
        const unknown = yield* Effect.flip(R.call(() => client.responses.retrieve("resp_unknown")))
        assert.instanceOf(unknown, OpenAI.NotFoundError)
        // Another tenant's id and an unknown one are told apart by nothing but the id.
        assert.strictEqual(
          (theirs as APIError).message.replace(kept.id, "ID"),
          (unknown as APIError).message.replace("resp_unknown", "ID")
        )

        const continued = yield* R.call(() => client.responses.create({ model, input: "and then?", previous_response_id: kept.id }))
        assert.strictEqual(continued.status, "completed")
        const hijack = yield* Effect.flip(R.call(() => other.responses.create({ model, input: "and then?", previous_response_id: kept.id })))
        assert.instanceOf(hijack, OpenAI.BadRequestError)
        assert.strictEqual((hijack as APIError).param, "previous_response_id")
      }))

    it.effect("typed errors: 400 naming the field, 401 without a valid token", () =>
      Effect.gen(function*() {
        const client = yield* R.client()
        const hot = yield* Effect.flip(R.call(() => client.responses.create({ model, input: "x", temperature: 3 })))
        assert.instanceOf(hot, OpenAI.BadRequestError)
        assert.strictEqual((hot as APIError).param, "temperature")
        const metadata = Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, "v"]))
        const many = yield* Effect.flip(R.call(() => client.responses.create({ model, input: "x", metadata })))
        assert.strictEqual((many as APIError).param, "metadata")
        const tokens = yield* Effect.flip(R.call(() => client.responses.create({ model, input: "x", max_output_tokens: 0 })))
        assert.strictEqual((tokens as APIError).param, "max_output_tokens")
        const unknownField = yield* Harness.send(Harness.post(R.e2, { model, input: "x", temprature: 1 }))
        assert.strictEqual(unknownField.status, 400)
        assert.strictEqual(unknownField.json.error.param, "temprature")
        assert.strictEqual(unknownField.json.error.type, "invalid_request_error")
        const backgroundUnkept = yield* Effect.flip(R.call(() => client.responses.create({ model, input: "x", background: true, store: false })))
        assert.strictEqual((backgroundUnkept as APIError).param, "store")

        const stranger = yield* R.client("not-a-token")
        const denied = yield* Effect.flip(R.call(() => stranger.responses.create({ model, input: "x" })))
        assert.instanceOf(denied, OpenAI.AuthenticationError)
        const deniedRead = yield* Effect.flip(R.call(() => stranger.responses.retrieve("resp_x")))
        assert.instanceOf(deniedRead, OpenAI.AuthenticationError)
      }))
  })
})

describe("E2 retention", () => {
  layer(R.sandboxLayer())((it) => {
    it.effect("kept responses are readable for 30 days, then gone", () =>
      Effect.gen(function*() {
        const client = yield* R.client()
        const kept = yield* R.call(() => client.responses.create({ model, input: "short-lived", store: true }))
        yield* TestClock.adjust("29 days")
        assert.strictEqual((yield* R.call(() => client.responses.retrieve(kept.id))).id, kept.id)
        yield* TestClock.adjust("1 day")
        assert.instanceOf(yield* Effect.flip(R.call(() => client.responses.retrieve(kept.id))), OpenAI.NotFoundError)
      }))
  })
})

describe("E2 background poller", () => {
  layer(ResponsesService.layerWorker.pipe(Layer.provideMerge(R.sandboxLayer())))((it) => {
    it.effect("finishes kept background responses on its own, without any read", () =>
      Effect.gen(function*() {
        const client = yield* R.client()
        const queued = yield* R.call(() => client.responses.create({ model, input: "unattended", background: true }))
        const sql = yield* SqlClient.SqlClient
        const status = sql`SELECT status FROM responses WHERE id = ${queued.id}`.pipe(Effect.map((rows) => rows[0]?.status))
        // The row is written behind the answer (platform/AnswerRows.ts).
        yield* AnswerRows.settled
        assert.strictEqual(yield* status, "queued")
        yield* TestClock.adjust("2 seconds")
        // The poller's fiber runs as this one yields; no wall-clock wait.
        const finished = yield* Effect.repeat(Effect.zipRight(Effect.yieldNow(), status), {
          until: (s) => s === "completed",
          times: 10_000
        })
        assert.strictEqual(finished, "completed")
      }))
  })
})

describe("E2 live", () => {
  layer(R.liveLayer({ completeOnRetrieve: 2 }))((it) => {
    it.effect("create: the body reaches the vendor as sent; the answer comes back with output_text", () =>
      Effect.gen(function*() {
        const emulator = yield* R.ResponsesEmulator
        const client = yield* R.client()
        const sent = { model, input: "live kites", temperature: 0.2, metadata: { team: "kites" } }
        const { data, response } = yield* R.call(() => client.responses.create(sent).withResponse())
        assert.isNull(response.headers.get("x-genway-sandbox"))
        assert.strictEqual(data.output_text, Emulator.answerText("live kites"))
        const request = (yield* emulator.requests).filter((r) => r.kind === "responses.create").at(-1)!
        assert.deepStrictEqual(request.body, sent)
        assert.strictEqual(request.headers["authorization"], `Bearer ${emulator.apiKey}`)
        const raw = yield* Harness.send(Harness.post(R.e2, { model, input: "live kites" }))
        assert.strictEqual(raw.json.output_text, Emulator.answerText("live kites"))
      }))

    it.effect("stream: the vendor's events pass through in order, ending with the terminal event; the response is kept", () =>
      Effect.gen(function*() {
        const client = yield* R.client()
        const events = yield* streamed(client, { model, input: "live stream" })
        const text = Emulator.answerText("live stream")
        assert.deepStrictEqual(events.map((e) => e.type), expectedOrder(text.split(" ").length))
        assert.deepStrictEqual(events.map((e) => e.sequence_number), events.map((_, i) => i))
        assert.strictEqual(deltaText(events), text)
        const id = events[0]!.type === "response.created" ? events[0]!.response.id : ""
        const kept = yield* R.call(() => client.responses.retrieve(id))
        assert.strictEqual(kept.status, "completed")
        assert.strictEqual(kept.output_text, text)
      }))

    it.effect("background: polled until done, and still served after the vendor forgot it", () =>
      Effect.gen(function*() {
        const emulator = yield* R.ResponsesEmulator
        const client = yield* R.client()
        const queued = yield* R.call(() => client.responses.create({ model, input: "long job", background: true }))
        assert.strictEqual(queued.status, "queued")
        yield* TestClock.adjust("1 second")
        assert.strictEqual(yield* R.poll, 1)
        assert.strictEqual((yield* R.call(() => client.responses.retrieve(queued.id))).status, "in_progress")
        yield* TestClock.adjust("5 seconds")
        assert.strictEqual(yield* R.poll, 1)
        yield* emulator.forget(queued.id)
        assert.notInclude(yield* emulator.storedResponses, queued.id)
        const done = yield* R.call(() => client.responses.retrieve(queued.id))
        assert.strictEqual(done.status, "completed")
        assert.strictEqual(done.output_text, Emulator.answerText("long job"))
        const retrieves = (yield* emulator.requests).filter((r) => r.kind === "responses.retrieve")
        assert.lengthOf(retrieves, 2)
        // Finished: nothing left to poll.
        yield* TestClock.adjust("1 minute")
        assert.strictEqual(yield* R.poll, 0)
      }))

    it.effect("a vendor 429 reaches the client with the vendor's wait; the client's retry then succeeds", () =>
      Effect.gen(function*() {
        const emulator = yield* R.ResponsesEmulator
        yield* emulator.inject("responses.create", { _tag: "RateLimited", resetRequests: "20ms" })
        const raw = yield* Harness.send(Harness.post(R.e2, { model, input: "x" }))
        assert.strictEqual(raw.status, 429)
        assert.strictEqual(raw.headers["retry-after-ms"], "20")
        assert.strictEqual(raw.headers["retry-after"], "1")
        assert.strictEqual(raw.json.error.type, "rate_limit_error")
        assert.strictEqual(raw.json.error.code, "rate_limit_exceeded")

        yield* emulator.inject("responses.create", { _tag: "RateLimited", resetRequests: "5ms" })
        const before = (yield* emulator.requests).filter((r) => r.kind === "responses.create").length
        const patient = yield* R.client(Harness.tokenA, { maxRetries: 1 })
        const answer = yield* R.call(() => patient.responses.create({ model, input: "after the wait" }))
        assert.strictEqual(answer.output_text, Emulator.answerText("after the wait"))
        assert.strictEqual((yield* emulator.requests).filter((r) => r.kind === "responses.create").length, before + 2)
      }))

    it.effect("vendor errors: its 400 passes with param; refused credentials and outages are 5xx", () =>
      Effect.gen(function*() {
        const emulator = yield* R.ResponsesEmulator
        const client = yield* R.client()
        yield* emulator.inject("responses.create", { _tag: "HttpError", status: 400, code: "invalid_prompt", message: "Invalid prompt." })
        const refused = yield* Effect.flip(R.call(() => client.responses.create({ model, input: "x" })))
        assert.instanceOf(refused, OpenAI.BadRequestError)
        assert.strictEqual((refused as APIError).code, "invalid_prompt")
        yield* emulator.inject("responses.create", { _tag: "HttpError", status: 401 })
        const keys = yield* Harness.send(Harness.post(R.e2, { model, input: "x" }))
        assert.strictEqual(keys.status, 502)
        assert.match(keys.json.error.message, /gateway's credentials/)
        assert.notInclude(keys.text, emulator.apiKey)
        yield* emulator.inject("responses.create", { _tag: "Unavailable", retryAfterSeconds: 2 })
        const busy = yield* Harness.send(Harness.post(R.e2, { model, input: "x", stream: true }))
        assert.strictEqual(busy.status, 503)
        assert.strictEqual(busy.headers["retry-after"], "2")
      }))

    it.effect("a stream that breaks off ends with an error event; the kept response is then polled to its end", () =>
      Effect.gen(function*() {
        const emulator = yield* R.ResponsesEmulator
        const client = yield* R.client()
        yield* emulator.inject("responses.create", { _tag: "CutStream" })
        const events = yield* streamed(client, { model, input: "cut", background: true })
        const last = events.at(-1)!
        assert.strictEqual(last.type, "error")
        assert.strictEqual(last.type === "error" && last.code, "upstream_unavailable")
        assert.strictEqual(last.sequence_number, events.length - 1)
        const id = events[0]!.type === "response.created" ? events[0]!.response.id : ""
        assert.strictEqual((yield* R.call(() => client.responses.retrieve(id))).status, "in_progress")
        yield* TestClock.adjust("1 second")
        assert.strictEqual(yield* R.poll, 1)
        const done = yield* R.call(() => client.responses.retrieve(id))
        assert.strictEqual(done.status, "completed")
      }))

    it.effect("a client that leaves mid-stream cancels the upstream request", () =>
      Effect.gen(function*() {
        const emulator = yield* R.ResponsesEmulator
        const client = yield* R.client()
        yield* emulator.inject("responses.create", { _tag: "StallStream" })
        const before = yield* emulator.abortedRequests
        // The vendor holds the rest back: the first delta arrives only because nothing is buffered.
        const seen = yield* R.call(async () => {
          const stream = await client.responses.create({ model, input: "never finishes", stream: true })
          const types: Array<string> = []
          for await (const event of stream) {
            types.push(event.type)
            if (event.type === "response.output_text.delta") break
          }
          return types
        })
        assert.deepStrictEqual(seen.at(-1), "response.output_text.delta")
        yield* emulator.awaitAborted(before + 1)
      }))
  })
})

describe("E2 live: deployment settings and restarts", () => {
  it.scoped("the deployment's upstream model replaces the client's", () =>
    Effect.gen(function*() {
      const emulator = yield* Emulator.make()
      const entries = Registry.entries.map((e) => (e.kind === "responses" ? { ...e, upstream: { ...e.upstream, model: "pinned-model" } } : e))
      yield* Effect.gen(function*() {
        const client = yield* R.client()
        const answer = yield* R.call(() => client.responses.create({ model: "whatever-the-client-says", input: "x" }))
        assert.strictEqual(answer.model, "pinned-model")
        const [request] = yield* emulator.requests
        assert.strictEqual((request!.body as { model: string }).model, "pinned-model")
      }).pipe(Effect.provide(R.liveGateway(emulator, { entries })))
    }))

  it.scoped("a background response outlives a restart of the gateway and the vendor's memory", () =>
    Effect.gen(function*() {
      const emulator = yield* Emulator.make({ completeOnRetrieve: 1 })
      const dataDir = Harness.tempDir()
      const gateway = R.liveGateway(emulator, { settings: { dataDir } })
      const id = yield* Effect.gen(function*() {
        const client = yield* R.client()
        return (yield* R.call(() => client.responses.create({ model, input: "survive", background: true }))).id
      }).pipe(Effect.provide(gateway))
      yield* Effect.gen(function*() {
        yield* TestClock.adjust("1 second")
        assert.strictEqual(yield* R.poll, 1)
        yield* emulator.forget(id)
        const client = yield* R.client()
        const done = yield* R.call(() => client.responses.retrieve(id))
        assert.strictEqual(done.status, "completed")
        assert.strictEqual(done.output_text, Emulator.answerText("survive"))
      }).pipe(Effect.provide(Layer.fresh(gateway)))
    }))
})

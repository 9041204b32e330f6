/**
 * The E2 routes beside create and retrieve, through the official OpenAI client: `responses.delete`,
 * `responses.cancel`, `responses.inputItems.list` and `responses.retrieve(id, {stream: true,
 * starting_after})`, sandboxed and live against vendor-a's emulator; another tenant's id is a 404.
 */
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import { Emulator } from "@genway/adapter-vendor-a/testing"
import { assert, describe, layer } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as TestClock from "effect/TestClock"
import OpenAI, { type APIError } from "openai"
import * as Harness from "./harness.js"
import * as R from "./responsesHarness.js"

const model = "text-model-1"

/** A DELETE with tenant A's token. */
const del = (url: string) => HttpClientRequest.del(url).pipe(HttpClientRequest.bearerToken(Harness.tokenA))

type Event = OpenAI.Responses.ResponseStreamEvent

const collect = (stream: AsyncIterable<Event>) =>
  R.call(async () => {
    const events: Array<Event> = []
    for await (const event of stream) events.push(event)
    return events
  })

/** A background response created with `stream: true`, read to its end. */
const streamedBackground = (client: OpenAI, input: string) =>
  Effect.flatMap(R.call(() => client.responses.create({ model, input, background: true, stream: true })), collect)

const resumed = (client: OpenAI, id: string, startingAfter?: number) =>
  Effect.flatMap(
    R.call(() => client.responses.retrieve(id, { stream: true, ...(startingAfter !== undefined ? { starting_after: startingAfter } : {}) })),
    collect
  )

const idOf = (events: ReadonlyArray<Event>) => (events[0]!.type === "response.created" ? events[0]!.response.id : "")

const notFound = <A>(f: () => Promise<A>) =>
  Effect.map(Effect.flip(R.call(f)), (error) => {
    assert.instanceOf(error, OpenAI.NotFoundError)
    return error as APIError
  })

const badRequest = <A>(f: () => Promise<A>) =>
  Effect.map(Effect.flip(R.call(f)), (error) => {
    assert.instanceOf(error, OpenAI.BadRequestError)
    return error as APIError
  })

/** Every input item of a response, page after page, as the client's auto-pagination reads them. */
const allItems = (client: OpenAI, id: string, query: OpenAI.Responses.InputItemListParams = {}) =>
  R.call(async () => {
    const items: Array<OpenAI.Responses.ResponseItem> = []
    for await (const item of client.responses.inputItems.list(id, query)) items.push(item)
    return items
  })

const conversation = [
  { role: "developer" as const, content: "Answer briefly." },
  { role: "user" as const, content: [{ type: "input_text" as const, text: "What is a kite?" }] },
  { role: "assistant" as const, content: "A kite flies." },
  { role: "user" as const, content: "And a box kite?" }
]

describe("E2 routes, sandboxed", () => {
  layer(R.sandboxLayer())((it) => {
    it.effect("input_items: the request's input as items, newest first by default, paginated, ordered on request", () =>
      Effect.gen(function*() {
        const client = yield* R.client()
        const one = yield* R.call(() => client.responses.create({ model, input: "Tell me about kites" }))
        const [item] = yield* allItems(client, one.id)
        assert.strictEqual(item!.type, "message")
        assert.match(item!.id!, /^msg_/)
        assert.deepStrictEqual({ ...item!, id: "" }, {
          id: "",
          type: "message",
          role: "user",
          status: "completed",
          content: [{ type: "input_text", text: "Tell me about kites" }]
        })

        const many = yield* R.call(() => client.responses.create({ model, input: conversation }))
        const desc = yield* allItems(client, many.id, { limit: 3 })
        assert.deepStrictEqual(desc.map((i) => i.type === "message" ? i.role : i.type), ["user", "assistant", "user", "developer"])
        const asc = yield* allItems(client, many.id, { order: "asc", limit: 1 })
        assert.deepStrictEqual(asc.map((i) => i.id), [...desc].reverse().map((i) => i.id))
        const first = asc[1]!
        assert.deepStrictEqual(first.type === "message" && first.content, [{ type: "input_text", text: "What is a kite?" }])
        const assistant = asc[2]!
        assert.deepStrictEqual(assistant.type === "message" && assistant.content, [{ type: "output_text", text: "A kite flies.", annotations: [] }])
        // The ids stay the same from one read to the next.
        assert.deepStrictEqual((yield* allItems(client, many.id)).map((i) => i.id), desc.map((i) => i.id))

        // One page on the wire: the list shape.
        const raw = yield* Harness.send(Harness.get(`${R.e2}/${many.id}/input_items?limit=2&order=asc`))
        assert.strictEqual(raw.status, 200)
        assert.strictEqual(raw.json.object, "list")
        assert.lengthOf(raw.json.data, 2)
        assert.strictEqual(raw.json.first_id, asc[0]!.id)
        assert.strictEqual(raw.json.last_id, asc[1]!.id)
        assert.isTrue(raw.json.has_more)

        const tooMany = yield* badRequest(() => client.responses.inputItems.list(many.id, { limit: 101 }))
        assert.strictEqual(tooMany.param, "limit")
        const order = yield* Harness.send(Harness.get(`${R.e2}/${many.id}/input_items?order=sideways`))
        assert.strictEqual(order.status, 400)
        assert.strictEqual(order.json.error.param, "order")

        const other = yield* R.client(Harness.tokenB)
        yield* notFound(() => other.responses.inputItems.list(many.id))
        yield* notFound(() => client.responses.inputItems.list("resp_unknown"))
      }))

    it.effect("cancel: a queued background response is cancelled, stays so, and a second cancel answers the same", () =>
      Effect.gen(function*() {
        const client = yield* R.client()
        const queued = yield* R.call(() => client.responses.create({ model, input: "cancel me", background: true }))
        assert.strictEqual(queued.status, "queued")
        const other = yield* R.client(Harness.tokenB)
        const theirs = yield* notFound(() => other.responses.cancel(queued.id))
        const unknown = yield* notFound(() => client.responses.cancel("resp_unknown"))
        assert.strictEqual(theirs.message.replace(queued.id, "ID"), unknown.message.replace("resp_unknown", "ID"))

        const { data, response } = yield* R.call(() => client.responses.cancel(queued.id).withResponse())
        assert.strictEqual(data.status, "cancelled")
        assert.strictEqual(data.id, queued.id)
        assert.strictEqual(response.headers.get("x-genway-sandbox"), "true")
        assert.strictEqual((yield* R.call(() => client.responses.cancel(queued.id))).status, "cancelled")
        // The sandbox would have finished it by now: a cancelled response is not finished later.
        yield* TestClock.adjust("1 minute")
        assert.strictEqual(yield* R.poll, 0)
        assert.strictEqual((yield* R.call(() => client.responses.retrieve(queued.id))).status, "cancelled")

        // A finished one is answered as it is; one that is not background cannot be cancelled.
        const finished = yield* R.call(() => client.responses.create({ model, input: "done already", background: true }))
        yield* TestClock.adjust("1 minute")
        assert.strictEqual((yield* R.call(() => client.responses.cancel(finished.id))).status, "completed")
        const sync = yield* R.call(() => client.responses.create({ model, input: "not background" }))
        const refused = yield* badRequest(() => client.responses.cancel(sync.id))
        assert.match(refused.message, /background/)
      }))

    it.effect("delete: the response is gone for its tenant; another tenant cannot delete it", () =>
      Effect.gen(function*() {
        const client = yield* R.client()
        const kept = yield* R.call(() => client.responses.create({ model, input: "delete me" }))
        const other = yield* R.client(Harness.tokenB)
        yield* notFound(() => other.responses.delete(kept.id))
        assert.strictEqual((yield* R.call(() => client.responses.retrieve(kept.id))).id, kept.id)

        const raw = yield* Harness.send(del(`${R.e2}/${kept.id}`))
        assert.strictEqual(raw.status, 200)
        assert.deepStrictEqual(raw.json, { id: kept.id, object: "response", deleted: true })
        yield* notFound(() => client.responses.retrieve(kept.id))
        yield* notFound(() => client.responses.inputItems.list(kept.id))
        yield* notFound(() => client.responses.delete(kept.id))

        const again = yield* R.call(() => client.responses.create({ model, input: "delete me with the client" }))
        yield* R.call(() => client.responses.delete(again.id))
        yield* notFound(() => client.responses.retrieve(again.id))
      }))

    it.effect("stream again: a background response's events after starting_after; all of them without it", () =>
      Effect.gen(function*() {
        const client = yield* R.client()
        const events = yield* streamedBackground(client, "stream me in the background")
        const id = idOf(events)
        assert.strictEqual(events.at(-1)!.type, "response.completed")
        const tail = yield* resumed(client, id, 3)
        assert.deepStrictEqual(tail, events.slice(4))
        assert.deepStrictEqual(yield* resumed(client, id), events)

        // A queued one streams to its end, and is then kept finished.
        const queued = yield* R.call(() => client.responses.create({ model, input: "queued then streamed", background: true }))
        const all = yield* resumed(client, queued.id)
        assert.strictEqual(all.at(-1)!.type, "response.completed")
        assert.strictEqual((yield* R.call(() => client.responses.retrieve(queued.id))).status, "completed")

        const sync = yield* R.call(() => client.responses.create({ model, input: "not background" }))
        const refused = yield* badRequest(() => client.responses.retrieve(sync.id, { stream: true }))
        assert.strictEqual(refused.param, "stream")
        const bad = yield* Harness.send(Harness.get(`${R.e2}/${id}?stream=true&starting_after=-2`))
        assert.strictEqual(bad.status, 400)
        assert.strictEqual(bad.json.error.param, "starting_after")
        const other = yield* R.client(Harness.tokenB)
        yield* notFound(() => other.responses.retrieve(id, { stream: true, starting_after: 1 }))
      }))
  })
})

describe("E2 routes, live", () => {
  layer(R.liveLayer({ completeOnRetrieve: 3 }))((it) => {
    it.effect("cancel reaches the vendor; the cancelled response is kept so and no longer polled", () =>
      Effect.gen(function*() {
        const emulator = yield* R.ResponsesEmulator
        const client = yield* R.client()
        const queued = yield* R.call(() => client.responses.create({ model, input: "live cancel", background: true }))
        const other = yield* R.client(Harness.tokenB)
        yield* notFound(() => other.responses.cancel(queued.id))
        assert.lengthOf((yield* emulator.requests).filter((r) => r.kind === "responses.cancel"), 0)

        const cancelled = yield* R.call(() => client.responses.cancel(queued.id))
        assert.strictEqual(cancelled.status, "cancelled")
        const calls = (yield* emulator.requests).filter((r) => r.kind === "responses.cancel")
        assert.lengthOf(calls, 1)
        assert.strictEqual(calls[0]!.path, `/v1/responses/${queued.id}/cancel`)
        assert.strictEqual(calls[0]!.headers["authorization"], `Bearer ${emulator.apiKey}`)
        yield* TestClock.adjust("1 minute")
        assert.strictEqual(yield* R.poll, 0)
        assert.strictEqual((yield* R.call(() => client.responses.retrieve(queued.id))).status, "cancelled")

        // The vendor's refusal passes through.
        const sync = yield* R.call(() => client.responses.create({ model, input: "live sync" }))
        yield* badRequest(() => client.responses.cancel(sync.id))
      }))

    it.effect("delete reaches the vendor; a response the vendor forgot is still deleted", () =>
      Effect.gen(function*() {
        const emulator = yield* R.ResponsesEmulator
        const client = yield* R.client()
        const kept = yield* R.call(() => client.responses.create({ model, input: "live delete" }))
        assert.include(yield* emulator.storedResponses, kept.id)
        const other = yield* R.client(Harness.tokenB)
        yield* notFound(() => other.responses.delete(kept.id))
        assert.include(yield* emulator.storedResponses, kept.id)
        yield* R.call(() => client.responses.delete(kept.id))
        assert.notInclude(yield* emulator.storedResponses, kept.id)
        yield* notFound(() => client.responses.retrieve(kept.id))

        const forgotten = yield* R.call(() => client.responses.create({ model, input: "forgotten" }))
        yield* emulator.forget(forgotten.id)
        yield* R.call(() => client.responses.delete(forgotten.id))
        yield* notFound(() => client.responses.retrieve(forgotten.id))

        // A vendor outage leaves the response in place, for the client to delete again.
        const later = yield* R.call(() => client.responses.create({ model, input: "delete later" }))
        yield* emulator.inject("responses.delete", { _tag: "Unavailable" })
        const failed = yield* Effect.flip(R.call(() => client.responses.delete(later.id)))
        assert.instanceOf(failed, OpenAI.InternalServerError)
        assert.strictEqual((yield* R.call(() => client.responses.retrieve(later.id))).id, later.id)
      }))

    it.effect("stream again: the vendor resumes after starting_after; the input items are the gateway's", () =>
      Effect.gen(function*() {
        const emulator = yield* R.ResponsesEmulator
        const client = yield* R.client()
        const events = yield* streamedBackground(client, "live background stream")
        const id = idOf(events)
        const text = Emulator.answerText("live background stream")
        assert.strictEqual(events.at(-1)!.type, "response.completed")
        const { data, response } = yield* R.call(() => client.responses.retrieve(id, { stream: true, starting_after: 2 }).withResponse())
        assert.isNull(response.headers.get("x-genway-sandbox"))
        const tail = yield* collect(data)
        assert.deepStrictEqual(tail.map((e) => e.sequence_number), events.slice(3).map((e) => e.sequence_number))
        assert.deepStrictEqual(tail.map((e) => e.type), events.slice(3).map((e) => e.type))
        const call = (yield* emulator.requests).filter((r) => r.kind === "responses.retrieve").at(-1)!
        assert.deepStrictEqual(call.query, { stream: "true", starting_after: "2" })

        // Once the vendor forgot it, the client is told to read it without streaming.
        yield* emulator.forget(id)
        const gone = yield* badRequest(() => client.responses.retrieve(id, { stream: true }))
        assert.strictEqual(gone.param, "stream")
        assert.strictEqual((yield* R.call(() => client.responses.retrieve(id))).output_text, text)

        const items = yield* allItems(client, id)
        assert.deepStrictEqual(items.map((i) => i.type === "message" && i.content), [[{ type: "input_text", text: "live background stream" }]])
        const other = yield* R.client(Harness.tokenB)
        yield* notFound(() => other.responses.inputItems.list(id))
        yield* notFound(() => other.responses.retrieve(id, { stream: true }))
      }))
  })
})

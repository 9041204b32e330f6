/**
 * Model responses (E2) in the usage ledger, through the official OpenAI client, sandboxed and live
 * against vendor-a's emulator: a response answered, streamed, not kept, created in the background
 * and read back, or streamed again is recorded once from the `usage` the client received, against
 * the creating key; reading or polling it again records nothing more; a cancelled one records
 * nothing; a key whose budget is used up gets 429 `insufficient_quota` on its next create.
 */
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import { assert, describe, it, layer } from "@effect/vitest"
import type { ModelEntry, Responses } from "@genway/core"
import { Registry } from "@genway/registry"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as TestClock from "effect/TestClock"
import OpenAI, { type APIError } from "openai"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Ledger from "../src/ledger/Ledger.js"
import * as AnswerRows from "../src/platform/AnswerRows.js"
import * as Store from "../src/responses/Store.js"
import * as Harness from "./harness.js"
import * as R from "./responsesHarness.js"

const adminToken = "admin-token-for-e2-ledger-tests-01"
const model = "text-model-1"
const e2Entry = Registry.entries.find((e) => e.kind === "responses")!

const price = (per1mInput: number, per1mOutput: number): ReadonlyArray<ModelEntry.ModelEntry> =>
  Registry.entries.map((e) => (e.id === e2Entry.id ? { ...e, price: { per_1m_input_tokens: per1mInput, per_1m_output_tokens: per1mOutput } } : e))

const settings = { adminToken: Option.some(Redacted.make(adminToken)) }

const makeKey = (fields: Record<string, unknown> = {}) =>
  Effect.gen(function*() {
    const request = HttpClientRequest.post("/admin/keys").pipe(
      HttpClientRequest.setHeader("authorization", `Bearer ${adminToken}`),
      HttpClientRequest.bodyUnsafeJson(fields)
    )
    const made = yield* Harness.send(request)
    assert.strictEqual(made.status, 201, made.text)
    return { id: made.json.id as string, token: made.json.token as string }
  })

const usage = (token: string, query = "") =>
  Effect.map(Harness.send(Harness.get(`/v1/usage${query}`, token)), (r) => {
    assert.strictEqual(r.status, 200, r.text)
    return r.json
  })

/** Totals over every tenant and all time. */
const adminUsage = Effect.map(
  Harness.send(HttpClientRequest.get("/admin/usage?from=1970-01-01&to=2100-01-01").pipe(HttpClientRequest.setHeader("authorization", `Bearer ${adminToken}`))),
  (r) => {
    assert.strictEqual(r.status, 200, r.text)
    return r.json.total
  }
)

type Event = OpenAI.Responses.ResponseStreamEvent
type Tokens = { readonly input_tokens: number; readonly output_tokens: number }

const collect = (stream: AsyncIterable<Event>) =>
  R.call(async () => {
    const events: Array<Event> = []
    for await (const event of stream) events.push(event)
    return events
  })

/** The `usage` of a stream's `response.completed` event. */
const completedUsage = (events: ReadonlyArray<Event>): Tokens => {
  const last = events.at(-1)
  assert(last?.type === "response.completed", `the stream ends completed: ${last?.type}`)
  return last.response.usage!
}

/** Reads a background response back (the read refreshes it when due) until it is completed. */
const readUntilCompleted = (client: OpenAI, id: string) =>
  Effect.gen(function*() {
    for (let i = 0; i < 10; i++) {
      yield* TestClock.adjust("5 seconds")
      const read = yield* R.call(() => client.responses.retrieve(id))
      if (read.status === "completed") return read
    }
    return assert.fail(`response ${id} did not complete`)
  })

/**
 * One response each way a response can finish; returns the `usage` the client received for each.
 * Every finished response is read back and polled again afterwards, which must record nothing more.
 */
const everyWay = (client: OpenAI) =>
  Effect.gen(function*() {
    const seen: Array<Tokens> = []
    const answered = yield* R.call(() => client.responses.create({ model, input: "answered at once" }))
    seen.push(answered.usage!)
    seen.push(completedUsage(yield* Effect.flatMap(R.call(() => client.responses.create({ model, input: "streamed", stream: true })), collect)))
    const unkept = yield* R.call(() => client.responses.create({ model, input: "not kept", store: false }))
    seen.push(unkept.usage!)
    seen.push(completedUsage(
      yield* Effect.flatMap(R.call(() => client.responses.create({ model, input: "streamed, not kept", stream: true, store: false })), collect)
    ))
    const queued = yield* R.call(() => client.responses.create({ model, input: "in the background", background: true }))
    assert.strictEqual(queued.status, "queued")
    seen.push((yield* readUntilCompleted(client, queued.id)).usage!)
    const again = yield* R.call(() => client.responses.create({ model, input: "streamed again", background: true }))
    seen.push(completedUsage(yield* Effect.flatMap(R.call(() => client.responses.retrieve(again.id, { stream: true })), collect)))

    // Read back, polled, streamed again: nothing is recorded twice.
    for (const id of [answered.id, queued.id, again.id]) yield* R.call(() => client.responses.retrieve(id))
    yield* TestClock.adjust("1 minute")
    yield* R.poll
    yield* Effect.flatMap(R.call(() => client.responses.retrieve(queued.id, { stream: true })), collect)
    return seen
  })

/** `/v1/usage` equals the sum of what the client received, at the entry's price, against the key. */
const assertRecorded = (token: string, keyId: string, seen: ReadonlyArray<Tokens>, perMillion: { input: number; output: number }) =>
  Effect.gen(function*() {
    const input = seen.reduce((n, u) => n + u.input_tokens, 0)
    const output = seen.reduce((n, u) => n + u.output_tokens, 0)
    assert.isAbove(input, 0)
    assert.isAbove(output, 0)
    const report = yield* usage(token, "?group_by=key")
    assert.strictEqual(report.total.counts.requests, seen.length)
    assert.strictEqual(report.total.units.input_tokens, input)
    assert.strictEqual(report.total.units.output_tokens, output)
    assert.closeTo(report.total.cost_usd, (input * perMillion.input + output * perMillion.output) / 1_000_000, 1e-9)
    assert.strictEqual(report.total.reserved_usd, 0)
    assert.deepStrictEqual(report.groups.map((g: { key: string }) => g.key), [keyId])
    const byModel = yield* usage(token, "?group_by=model")
    assert.deepStrictEqual(byModel.groups.map((g: { key: string }) => g.key), [e2Entry.id])
  })

/** A background response cancelled before it finished records nothing, even after time passes. */
const cancelledRecordsNothing = (client: OpenAI, token: string) =>
  Effect.gen(function*() {
    const queued = yield* R.call(() => client.responses.create({ model, input: "cancel me", background: true }))
    assert.strictEqual((yield* R.call(() => client.responses.cancel(queued.id))).status, "cancelled")
    yield* TestClock.adjust("1 minute")
    yield* R.poll
    assert.strictEqual((yield* R.call(() => client.responses.retrieve(queued.id))).status, "cancelled")
    const report = yield* usage(token)
    assert.strictEqual(report.total.counts.requests, 0)
    assert.deepStrictEqual(report.total.units, { seconds: 0, images: 0, input_tokens: 0, output_tokens: 0 })
  })

/** A key with a 1 USD budget, and a price of 1 USD a token: its first response uses the budget up. */
const budgetUsedUp = Effect.gen(function*() {
  const key = yield* makeKey({ budget_usd: 1, budget_period: "total" })
  const client = yield* R.client(key.token)
  yield* R.call(() => client.responses.create({ model, input: "spend it" }))
  assert.isAbove((yield* usage(key.token)).total.cost_usd, 1)
  const refused = yield* Effect.flip(R.call(() => client.responses.create({ model, input: "one more" })))
  assert.instanceOf(refused, OpenAI.RateLimitError)
  assert.strictEqual((refused as APIError).status, 429)
  assert.strictEqual((refused as APIError).code, "insufficient_quota")
  const streamed = yield* Effect.flip(R.call(() => client.responses.create({ model, input: "one more", stream: true })))
  assert.strictEqual((streamed as APIError).code, "insufficient_quota")
  assert.strictEqual((yield* usage(key.token)).total.counts.requests, 1)
})

const perMillion = { input: 2, output: 8 }

/** The cases run both sandboxed and live. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const sharedCases = (it: { readonly effect: (name: string, self: () => Effect.Effect<void, any, any>) => unknown }) => {
    it.effect("answered, streamed, not kept, background and streamed again: each recorded once from the usage the client saw", () =>
      Effect.gen(function*() {
        const key = yield* makeKey()
        const seen = yield* everyWay(yield* R.client(key.token))
        assert.lengthOf(seen, 6)
        yield* assertRecorded(key.token, key.id, seen, perMillion)
      }))

    it.effect("24 created at once (written in shared batches): each kept one readable, each recorded once", () =>
      Effect.gen(function*() {
        const key = yield* makeKey()
        const client = yield* R.client(key.token)
        const answers = yield* Effect.forEach(
          Array.from({ length: 24 }, (_, i) => i),
          (i) => R.call(() => client.responses.create({ model, input: `at once ${i}`, ...(i % 3 === 0 ? { store: false } : {}) })),
          { concurrency: "unbounded" }
        )
        assert.strictEqual(new Set(answers.map((a) => a.id)).size, 24)
        for (const [i, a] of answers.entries()) {
          const read = yield* Effect.either(R.call(() => client.responses.retrieve(a.id)))
          if (i % 3 === 0) assert.isTrue(read._tag === "Left" && (read.left as APIError).status === 404, `${a.id} was not to be kept`)
          else assert.isTrue(read._tag === "Right" && read.right.status === "completed", `${a.id} kept: ${JSON.stringify(read._tag === "Right" ? read.right.status : String(read.left))}`)
        }
        yield* assertRecorded(key.token, key.id, answers.map((a) => a.usage!), perMillion)
      }))

    it.effect("a cancelled background response records nothing", () =>
      Effect.gen(function*() {
        const key = yield* makeKey()
        yield* cancelledRecordsNothing(yield* R.client(key.token), key.token)
      }))
}

describe("E2 usage, sandboxed", () => {
  layer(R.sandboxLayer({ entries: price(perMillion.input, perMillion.output), settings }))((it) => {
    sharedCases(it)

    it.effect("a response recorded again under its id is ignored", () =>
      Effect.gen(function*() {
        const key = yield* makeKey()
        const client = yield* R.client(key.token)
        const answered = yield* R.call(() => client.responses.create({ model, input: "once" }))
        const before = yield* adminUsage
        const response = answered as unknown as Responses.ResponseObject
        // Same id: no second row, whatever tenant, key or time a repeat names.
        yield* Ledger.recordResponse({ tenant: "someone", keyId: null, entry: e2Entry }, response, 0)
        yield* Ledger.recordResponse({ tenant: "someone", keyId: key.id, entry: e2Entry }, response, Date.now())
        assert.deepStrictEqual(yield* adminUsage, before)
        assert.isAtLeast(before.counts.requests, 1)
      }))

    it.effect("answers' rows, several kept responses and usage rows at once: an id already there stays (the first writer wins)", () =>
      Effect.gen(function*() {
        const answers = yield* AnswerRows.AnswerRows
        const sql = yield* SqlClient.SqlClient
        const now = Date.now()
        const row = (id: string, tenant: string): Store.NewStoredResponse => ({
          id,
          tenant,
          keyId: null,
          entryId: e2Entry.id,
          mode: "sandbox",
          status: "completed",
          background: false,
          body: JSON.stringify({ id, object: "response", status: "completed" }),
          sandboxFinal: null,
          nextPollAt: null,
          deadlineAt: now + 60_000,
          createdAt: now,
          finishedAt: now,
          expiresAt: now + 60_000,
          inputItems: "[]"
        })
        const kept = (r: Store.NewStoredResponse, at: number): AnswerRows.Row => ({ table: "responses", values: Store.columnsOf(r, at) })
        yield* answers.submit([kept(row("resp_batch_0", "first-writer"), now)])
        yield* answers.settled
        yield* answers.submit([0, 1, 2].map((i) => kept(row(`resp_batch_${i}`, `tenant-${i}`), now + i)))
        yield* answers.settled
        const rows = yield* sql<{ id: string; tenant: string; updated_at: number }>`SELECT id, tenant, updated_at FROM responses WHERE id LIKE 'resp_batch_%' ORDER BY id`
        assert.deepStrictEqual(rows.map((r) => [r.id, r.tenant, Number(r.updated_at)]), [
          ["resp_batch_0", "first-writer", now],
          ["resp_batch_1", "tenant-1", now + 1],
          ["resp_batch_2", "tenant-2", now + 2]
        ])
        const usageRow = (id: string, inputTokens: number): Ledger.RequestUsage => ({
          id,
          tenant: "batch-tenant",
          keyId: null,
          entry: e2Entry,
          inputTokens,
          outputTokens: 1,
          at: now
        })
        const usage = (u: Ledger.RequestUsage): AnswerRows.Row => ({ table: "usage_ledger", values: Ledger.requestColumns(u) })
        yield* answers.submit([usage(usageRow("resp_batch_0", 5)), usage(usageRow("resp_batch_1", 7))])
        yield* answers.settled
        yield* answers.submit([usage(usageRow("resp_batch_1", 1000)), usage(usageRow("resp_batch_2", 11))])
        yield* answers.settled
        const recorded = yield* sql<{ id: string; input_tokens: number }>`SELECT id, input_tokens FROM usage_ledger WHERE id LIKE 'resp_batch_%' ORDER BY id`
        assert.deepStrictEqual(recorded.map((r) => [r.id, Number(r.input_tokens)]), [["resp_batch_0", 5], ["resp_batch_1", 7], ["resp_batch_2", 11]])
      }))
  })

  layer(R.sandboxLayer({ entries: price(1_000_000, 1_000_000), settings }))((it) => {
    it.effect("a key whose budget is used up: 429 insufficient_quota on its next create", () => budgetUsedUp)
  })
})

describe("E2 usage, live against the emulator", () => {
  layer(R.liveLayer({ completeOnRetrieve: 2 }, { entries: price(perMillion.input, perMillion.output), settings }))((it) => {
    sharedCases(it)
  })

  layer(R.liveLayer({}, { entries: price(1_000_000, 1_000_000), settings }))((it) => {
    it.effect("a key whose budget is used up: 429 insufficient_quota on its next create", () => budgetUsedUp)
  })
})

describe("the tokens a finished response records", () => {
  const response = (status: Responses.ResponseObject["status"], usage: Responses.ResponseObject["usage"]): Responses.ResponseObject => ({
    id: "resp_1",
    object: "response",
    created_at: 0,
    model,
    status,
    usage
  })
  const used = { input_tokens: 7, output_tokens: 3, total_tokens: 10 }

  it("completed and incomplete ones record their usage; failed, cancelled and unfinished ones nothing", () => {
    assert.deepStrictEqual(Ledger.responseTokens(response("completed", used)), { input: 7, output: 3 })
    assert.deepStrictEqual(Ledger.responseTokens(response("incomplete", used)), { input: 7, output: 3 })
    for (const status of ["failed", "cancelled", "queued", "in_progress"] as const) {
      assert.isUndefined(Ledger.responseTokens(response(status, used)), status)
    }
    assert.isUndefined(Ledger.responseTokens(response("completed", null)))
    // SPEC.md's chat-style names when the vendor's own are absent.
    assert.deepStrictEqual(Ledger.responseTokens(response("completed", { prompt_tokens: 4, completion_tokens: 2, total_tokens: 6 })), {
      input: 4,
      output: 2
    })
  })
})

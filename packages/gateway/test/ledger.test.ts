/**
 * The usage ledger and budgets of DESIGN.md §10 over real HTTP on the embedded database: settled
 * units and cost per unit kind, release of failed and canceled tasks, the price snapshot, exact
 * budgets under 100 concurrent creates, the 402 / 429 `insufficient_quota` answers, and the CLI's
 * CSV against the JSON totals.
 */
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as SqlClient from "@effect/sql/SqlClient"
import { assert, describe, it, layer } from "@effect/vitest"
import type { Chat as CoreChat, ModelEntry } from "@genway/core"
import { Registry } from "@genway/registry"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as TestClock from "effect/TestClock"
import * as fs from "node:fs"
import * as path from "node:path"
import * as UsageCli from "../src/cli/Usage.js"
import * as Ledger from "../src/ledger/Ledger.js"
import * as Usage from "../src/ledger/Usage.js"
import * as AnswerRows from "../src/platform/AnswerRows.js"
import { ApiKeys, type Principal } from "../src/platform/ApiKeys.js"
import { Settings } from "../src/platform/Config.js"
import * as Models from "../src/platform/Models.js"
import * as Chat from "./chatHarness.js"
import * as Harness from "./harness.js"

const adminToken = "admin-token-for-ledger-tests-0123"
const e4 = "/vendors/vendor-b/v1/vid2.5-t2v-preview/generation"
const t2i = "/vendors/vendor-b/v1/vid2.6-t2i/generation"
const chatModel = "image-model-2.5-flash-image-preview"

// Mutable on purpose: the snapshot test changes a price while a task is in flight.
const videoPrice = { per_second: 0.2 }
const prices: Record<string, ModelEntry.Price> = {
  "vendor-b/vid2.5-t2v-preview": videoPrice,
  "vendor-b/vid2.6-t2i": { per_image: 0.04 },
  [`vendor-d/${chatModel}`]: { per_1m_input_tokens: 2, per_1m_output_tokens: 8 }
}
const priced = Registry.entries.map((e) => (prices[e.id] !== undefined ? { ...e, price: prices[e.id]! } : e))

const gateway = Chat.sandboxLayer({ entries: priced, settings: { adminToken: Option.some(Redacted.make(adminToken)) } })

type Method = "GET" | "POST" | "PUT"
const admin = (method: Method, path: string, body?: unknown) => {
  let request = HttpClientRequest.make(method)(path)
  request = HttpClientRequest.setHeader(request, "authorization", `Bearer ${adminToken}`)
  if (body !== undefined) request = HttpClientRequest.bodyUnsafeJson(request, body)
  return Harness.send(request)
}

const makeKey = (fields: Record<string, unknown> = {}) =>
  Effect.map(admin("POST", "/admin/keys", fields), (r) => {
    assert.strictEqual(r.status, 201, r.text)
    return { id: r.json.id as string, token: r.json.token as string, tenant: r.json.tenant as string }
  })

const usage = (token: string, query = "") => Effect.map(Harness.send(Harness.get(`/v1/usage${query}`, token)), (r) => {
  assert.strictEqual(r.status, 200, r.text)
  return r.json
})

/** Runs the workers until the sandbox has finished every task. */
const finish = Effect.gen(function*() {
  for (let i = 0; i < 4; i++) {
    yield* Harness.work
    yield* TestClock.adjust("2 seconds")
  }
  yield* Harness.work
})

describe("usage ledger", () => {
  layer(gateway)((it) => {
    it.effect("seconds: reserved at create, settled to the request's duration at the entry's price", () =>
      Effect.gen(function*() {
        const key = yield* makeKey()
        const created = yield* Harness.send(Harness.post(e4, { prompt: "a lighthouse", duration: 10 }, key.token))
        assert.strictEqual(created.status, 202, created.text)
        const open = yield* usage(key.token)
        assert.strictEqual(open.total.reserved_usd, 2)
        assert.strictEqual(open.total.cost_usd, 0)
        // Without a duration the entry's default (5 s) applies.
        assert.strictEqual((yield* Harness.send(Harness.post(e4, { prompt: "a harbour" }, key.token))).status, 202)
        yield* finish
        const done = yield* usage(key.token, "?group_by=model")
        assert.strictEqual(done.currency, "USD")
        assert.strictEqual(done.total.units.seconds, 15)
        assert.strictEqual(done.total.cost_usd, 3)
        assert.strictEqual(done.total.reserved_usd, 0)
        assert.strictEqual(done.total.counts.completed, 2)
        assert.deepStrictEqual(done.groups.map((g: any) => g.key), ["vendor-b/vid2.5-t2v-preview"])
      }))

    it.effect("images: settled to the number of results", () =>
      Effect.gen(function*() {
        const key = yield* makeKey()
        const created = yield* Harness.send(Harness.post(t2i, { prompt: "a red kite", n: 3 }, key.token))
        assert.strictEqual(created.status, 202, created.text)
        assert.closeTo((yield* usage(key.token)).total.reserved_usd, 0.12, 1e-9)
        yield* finish
        const task = yield* Harness.send(Harness.get(`${t2i}/${created.json.task_info.id}`, key.token))
        assert.strictEqual(task.json.task_info.status, "completed")
        const results = (task.json.images ?? task.json.results ?? []) as Array<unknown>
        assert.isAbove(results.length, 0)
        const done = yield* usage(key.token)
        assert.strictEqual(done.total.units.images, results.length)
        assert.closeTo(done.total.cost_usd, 0.04 * results.length, 1e-9)
        assert.strictEqual(done.total.reserved_usd, 0)
      }))

    it.effect("tokens: E1 requests are recorded from their usage", () =>
      Effect.gen(function*() {
        const key = yield* makeKey()
        const client = yield* Chat.openai(key.token)
        const answer = yield* Effect.promise(() =>
          client.chat.completions.create({ model: chatModel, messages: [{ role: "user", content: "hello" }] })
        )
        const done = yield* usage(key.token)
        assert.strictEqual(done.total.counts.requests, 1)
        assert.strictEqual(done.total.units.input_tokens, answer.usage!.prompt_tokens)
        assert.strictEqual(done.total.units.output_tokens, answer.usage!.completion_tokens)
        const expected = (answer.usage!.prompt_tokens * 2 + answer.usage!.completion_tokens * 8) / 1_000_000
        assert.closeTo(done.total.cost_usd, expected, 1e-9)
      }))

    it.effect("tokens: E1 requests at once each have their usage row when answered, through the answers' rows", () =>
      Effect.gen(function*() {
        // The gateway's services write E1 usage through the answers' rows, not row by row (the default).
        assert.notStrictEqual(yield* Usage.RequestUsageWriter, Ledger.recordRequest)
        const sql = yield* SqlClient.SqlClient
        const log = path.join((yield* Settings).dataDir, "answers")
        const key = yield* makeKey()
        const client = yield* Chat.openai(key.token)
        // Each answer is checked for its own row as it arrives (the row's id is the completion's): in
        // the database, or in the answers' log, from which a restart would commit it.
        const answers = yield* Effect.forEach(Array.from({ length: 20 }, (_, i) => i), (i) =>
          Effect.promise(() => client.chat.completions.create({ model: chatModel, messages: [{ role: "user", content: `boat ${i}` }] })).pipe(
            Effect.tap((answer) =>
              Effect.map(sql<{ readonly id: string }>`SELECT id FROM usage_ledger WHERE id = ${answer.id}`, (rows) => {
                const logged = fs.readdirSync(log).some((f) => fs.readFileSync(path.join(log, f), "utf8").includes(`"${answer.id}"`))
                assert.isTrue(rows.length === 1 || logged, `no usage row when ${answer.id} was answered`)
              }))
          ), { concurrency: "unbounded" })
        yield* AnswerRows.settled
        const rows = yield* sql<{ readonly id: string }>`SELECT id FROM usage_ledger WHERE id IN ${sql.in(answers.map((a) => a.id))}`
        assert.strictEqual(rows.length, 20)
        const done = yield* usage(key.token)
        assert.strictEqual(done.total.counts.requests, 20)
        assert.strictEqual(done.total.units.input_tokens, answers.reduce((n, a) => n + a.usage!.prompt_tokens, 0))
        assert.strictEqual(done.total.units.output_tokens, answers.reduce((n, a) => n + a.usage!.completion_tokens, 0))
      }))

    it.effect("failed and canceled tasks release their reservation to 0", () =>
      Effect.gen(function*() {
        const key = yield* makeKey()
        const failing = yield* Harness.send(Harness.post(e4, { prompt: "fails" }, key.token, { "x-sandbox-outcome": "failed:500" }))
        assert.strictEqual(failing.status, 202, failing.text)
        const canceled = yield* Harness.send(Harness.post(e4, { prompt: "canceled" }, key.token))
        assert.strictEqual((yield* usage(key.token)).total.reserved_usd, 2)
        const cancel = yield* Harness.send(Harness.post(`${e4}/${canceled.json.task_info.id}/cancel`, {}, key.token))
        assert.strictEqual(cancel.status, 200, cancel.text)
        yield* finish
        const done = yield* usage(key.token)
        assert.strictEqual(done.total.cost_usd, 0)
        assert.strictEqual(done.total.reserved_usd, 0)
        assert.deepStrictEqual(done.total.units, { seconds: 0, images: 0, input_tokens: 0, output_tokens: 0 })
        assert.deepStrictEqual(done.total.counts, { completed: 0, failed: 1, canceled: 1, requests: 0 })
      }))

    it.effect("the price at create is kept: a later price change does not alter the cost", () =>
      Effect.gen(function*() {
        const key = yield* makeKey()
        assert.strictEqual((yield* Harness.send(Harness.post(e4, { prompt: "before" }, key.token))).status, 202)
        videoPrice.per_second = 1
        try {
          yield* finish
          assert.strictEqual((yield* usage(key.token)).total.cost_usd, 1, "5 s at 0.2, the price at create")
          assert.strictEqual((yield* Harness.send(Harness.post(e4, { prompt: "after" }, key.token))).status, 202)
          yield* finish
          assert.strictEqual((yield* usage(key.token)).total.cost_usd, 6, "then 5 s at the new price 1.0")
        } finally {
          videoPrice.per_second = 0.2
        }
      }))

    it.effect("budget per key: 100 concurrent creates against a budget for 10 create exactly 10; 402 Budget exceeded", () =>
      Effect.gen(function*() {
        // 5 s at 0.2 USD = 1 USD a task.
        const key = yield* makeKey({ budget_usd: 10, budget_period: "month" })
        const answers = yield* Effect.forEach(
          Array.from({ length: 100 }, (_, i) => i),
          (i) => Harness.send(Harness.post(e4, { prompt: `race ${i}` }, key.token)),
          { concurrency: 100 }
        )
        assert.strictEqual(answers.filter((a) => a.status === 202).length, 10)
        const refused = answers.filter((a) => a.status === 402)
        assert.strictEqual(refused.length, 90)
        assert.strictEqual(refused[0]!.json.error.code, 402)
        assert.strictEqual(refused[0]!.json.error.title, "Budget exceeded")
        const open = yield* usage(key.token)
        assert.strictEqual(open.total.reserved_usd, 10)
        // Reaching the budget exactly is allowed; settled tasks keep counting; no more room.
        yield* finish
        assert.strictEqual((yield* usage(key.token)).total.cost_usd, 10)
        assert.strictEqual((yield* Harness.send(Harness.post(e4, { prompt: "more" }, key.token))).status, 402)
      }))

    it.effect("budget per tenant covers every key of it; failed tasks give their reservation back", () =>
      Effect.gen(function*() {
        const first = yield* makeKey()
        const second = yield* makeKey({ tenant: first.tenant })
        const put = yield* admin("PUT", `/admin/tenants/${first.tenant}/budget`, { budget_usd: 2, budget_period: "day" })
        assert.strictEqual(put.status, 200, put.text)
        const failing = yield* Harness.send(Harness.post(e4, { prompt: "a" }, first.token, { "x-sandbox-outcome": "failed:500" }))
        assert.strictEqual(failing.status, 202)
        assert.strictEqual((yield* Harness.send(Harness.post(e4, { prompt: "b" }, second.token))).status, 202)
        assert.strictEqual((yield* Harness.send(Harness.post(e4, { prompt: "c" }, second.token))).status, 402)
        yield* finish
        // The failed task's 1 USD is free again.
        assert.strictEqual((yield* Harness.send(Harness.post(e4, { prompt: "d" }, first.token))).status, 202)
      }))

    it.effect("a budget set after creates without one applies to the next create at once", () =>
      Effect.gen(function*() {
        const key = yield* makeKey()
        // No budget: remembered for a few seconds, so later creates skip the lookup ...
        assert.strictEqual((yield* Harness.send(Harness.post(e4, { prompt: "a" }, key.token))).status, 202)
        assert.strictEqual((yield* Harness.send(Harness.post(e4, { prompt: "b" }, key.token))).status, 202)
        // ... until a budget is written through this gateway (2 USD, both reserved).
        const put = yield* admin("PUT", `/admin/tenants/${key.tenant}/budget`, { budget_usd: 2, budget_period: "total" })
        assert.strictEqual(put.status, 200, put.text)
        assert.strictEqual((yield* Harness.send(Harness.post(e4, { prompt: "c" }, key.token))).status, 402)
        yield* finish
      }))

    it.effect("a lookup that began before a budget was written is not remembered as budget-free", () =>
      Effect.gen(function*() {
        const keys = yield* ApiKeys
        const since = keys.budgetEpoch()
        // The lookup found no budget; before it is noted, a budget is written through this gateway.
        yield* keys.setTenantBudget("race-tenant", 1, "total")
        keys.noteBudgetFree("race-tenant", "race-key", 0, since)
        assert.isFalse(keys.budgetFree("race-tenant", "race-key", 0))
        keys.noteBudgetFree("race-tenant", "race-key", 0, keys.budgetEpoch())
        assert.isTrue(keys.budgetFree("race-tenant", "race-key", 0))
        assert.isFalse(keys.budgetFree("race-tenant", "race-key", 5_000), "remembered for 5 s")
      }))

    it.effect("E1 once the budget is used up: 429 insufficient_quota for the OpenAI client", () =>
      Effect.gen(function*() {
        const key = yield* makeKey({ budget_usd: 1, budget_period: "total" })
        assert.strictEqual((yield* Harness.send(Harness.post(e4, { prompt: "spend it" }, key.token))).status, 202)
        const client = yield* Chat.openai(key.token)
        const error: any = yield* Effect.promise(() =>
          client.chat.completions.create({ model: chatModel, messages: [{ role: "user", content: "hi" }] }).then(
            () => undefined,
            (e: unknown) => e
          )
        )
        assert.strictEqual(error?.status, 429)
        assert.strictEqual(error?.code, "insufficient_quota")
      }))

    it.effect("GET /admin/usage groups by tenant; genway usage's CSV equals the JSON totals", () =>
      Effect.gen(function*() {
        const a = yield* makeKey()
        const b = yield* makeKey()
        yield* Harness.send(Harness.post(e4, { prompt: "a", duration: 10 }, a.token))
        yield* Harness.send(Harness.post(t2i, { prompt: "b", n: 2 }, b.token))
        yield* finish
        const json = yield* admin("GET", "/admin/usage?group_by=tenant")
        assert.strictEqual(json.status, 200, json.text)
        assert.isAtLeast(json.json.groups.length, 2)
        const byTenant = yield* admin("GET", `/admin/usage?tenant=${a.tenant}`)
        assert.strictEqual(byTenant.json.total.units.seconds, 10)
        // The tenant route sees only the caller's tenant.
        assert.strictEqual((yield* usage(b.token)).total.units.seconds, 0)
        const csv = UsageCli.toCsv(json.json, "tenant").trim().split("\n").map((line) => line.split(","))
        const header = csv[0]!
        assert.strictEqual(header[0], "tenant")
        const sum = (name: string) => csv.slice(1).reduce((s, row) => s + Number(row[header.indexOf(name)]), 0)
        assert.closeTo(sum("cost_usd"), json.json.total.cost_usd, 1e-9)
        assert.strictEqual(sum("seconds"), json.json.total.units.seconds)
        assert.strictEqual(sum("images"), json.json.total.units.images)
        assert.strictEqual(sum("completed"), json.json.total.counts.completed)
        assert.strictEqual(csv.length - 1, json.json.groups.length)
      }))

    it.effect("400 naming the field for a bad window or grouping; 401 on /admin/usage without the admin token", () =>
      Effect.gen(function*() {
        const key = yield* makeKey()
        const bad = yield* Harness.send(Harness.get("/v1/usage?from=yesterday", key.token))
        assert.strictEqual(bad.status, 400)
        assert.strictEqual(bad.json.error.param, "from")
        const group = yield* Harness.send(Harness.get("/v1/usage?group_by=tenant", key.token))
        assert.strictEqual(group.status, 400)
        assert.strictEqual(group.json.error.param, "group_by")
        assert.strictEqual((yield* Harness.send(Harness.get("/admin/usage", key.token))).status, 401)
      }))
  })
})

describe("prices in the models file", () => {
  it.effect("price is read per entry and applied by the registry; a negative price is one line naming it", () =>
    Effect.gen(function*() {
      const dir = Harness.tempDir()
      const good = path.join(dir, "m.yaml")
      fs.writeFileSync(good, `"vendor-b/vid2.6-t2i":\n  price: { per_image: 0.04 }\n`)
      const overrides = yield* Models.readOverrides(good)
      const applied = Registry.applyOverrides(Registry.entries, overrides as Record<string, Registry.EntryOverride>)
      assert.deepStrictEqual(applied.entries.find((e) => e.id === "vendor-b/vid2.6-t2i")?.price, { per_image: 0.04 })
      const bad = path.join(dir, "bad.json")
      fs.writeFileSync(bad, JSON.stringify({ "vendor-b/vid2.6-t2i": { price: { per_image: -1 } } }))
      const message = yield* Effect.map(Effect.flip(Models.readOverrides(bad)), (e) => e.message)
      assert.include(message, `entry "vendor-b/vid2.6-t2i", field price.per_image must be a price in USD`)
    }))
})

describe("E1 usage recording", () => {
  it.effect("a completion's usage is recorded only once its writer's write has ended (the route answers after it)", () =>
    Effect.gen(function*() {
      const committed = yield* Deferred.make<void>()
      const written: Array<Ledger.RequestUsage> = []
      const writer = (row: Ledger.RequestUsage) => Effect.zipRight(Deferred.await(committed), Effect.sync(() => void written.push(row)))
      const entry = Registry.entries.find((e) => e.model === chatModel)!
      const usage = { promptTokens: 3, completionTokens: 5, totalTokens: 8 } as CoreChat.Usage
      const principal = { tenant: "t", keyId: "k" } as unknown as Principal
      const recording = yield* Effect.fork(Usage.recordChat(principal, entry, "chatcmpl-1", usage).pipe(
        Effect.provideService(Usage.RequestUsageWriter, writer),
        // The writer above stands in for the database: nothing reads this one.
        Effect.provideService(SqlClient.SqlClient, {} as SqlClient.SqlClient)
      ))
      yield* TestClock.adjust("1 second")
      assert.isNull(recording.unsafePoll())
      yield* Deferred.succeed(committed, undefined)
      yield* Fiber.join(recording)
      assert.deepStrictEqual(written.map((r) => [r.id, r.tenant, r.keyId, r.inputTokens, r.outputTokens]), [["chatcmpl-1", "t", "k", 3, 5]])
    }))
})

/**
 * Webhooks (DESIGN.md §8) over real HTTP: receivers verify every request with the
 * `standardwebhooks` library. Schedules run on the TestClock; the slow-receiver test runs the
 * delivery loop on the wall clock (bounded).
 */
import * as HttpClient from "@effect/platform/HttpClient"
import * as SqlClient from "@effect/sql/SqlClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import { Registry } from "@genway/registry"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as TestClock from "effect/TestClock"
import { Webhooks } from "../src/webhooks/Webhooks.js"
import * as Harness from "./harness.js"
import { type Receiver, receiver } from "./receiver.js"

const e4 = Registry.entries.find((e) => e.endpoints.includes("E4"))!
const open = { webhookAllowInsecure: true, webhookAllowPrivate: true }

const register = (r: Receiver, token = Harness.tokenA, extra: Record<string, unknown> = {}) =>
  Effect.gen(function*() {
    const made = yield* Harness.send(Harness.post("/v1/webhooks", { url: r.url, ...extra }, token))
    assert.strictEqual(made.status, 201, made.text)
    r.secret = made.json.secret
    return made.json
  })

const deliverDue = Effect.flatMap(Webhooks, (w) => w.deliverDue)

/** Creates a sandbox task and drives it to its end (processing, then completed or failed). */
const runTask = (headers: Record<string, string> = {}, token = Harness.tokenA) =>
  Effect.gen(function*() {
    const created = yield* Harness.send(Harness.post(e4.path, { prompt: "a lighthouse" }, token, headers))
    assert.strictEqual(created.status, 202, created.text)
    yield* Harness.work
    yield* TestClock.adjust("200 millis")
    yield* Harness.work
    yield* TestClock.adjust("1 second")
    yield* Harness.work
    return created.json.task_info.id as string
  })

describe("webhooks", () => {
  it.scoped("a receiver gets task.processing and task.completed, signed, with media that downloads; another tenant gets nothing", () =>
    Effect.gen(function*() {
      const a = yield* receiver()
      const b = yield* receiver()
      const made = yield* register(a)
      assert.match(made.secret, /^whsec_/)
      assert.deepStrictEqual(made.events, ["task.processing", "task.completed", "task.failed"])
      yield* register(b, Harness.tokenB)

      const id = yield* runTask()
      assert.strictEqual(yield* deliverDue, 2)
      assert.strictEqual(a.received.length, 2)
      assert.strictEqual(b.received.length, 0)
      for (const r of a.received) assert.isTrue(r.verified.ok, JSON.stringify(r.verified))
      const [processing, completed] = a.received.map((r) => (r.verified as any).payload)
      assert.strictEqual(processing.type, "task.processing")
      assert.strictEqual(processing.data.task_info.status, "processing")
      assert.strictEqual(completed.type, "task.completed")
      assert.strictEqual(completed.data.task_info.id, id)
      assert.strictEqual(completed.data.model, e4.id)
      assert.isTrue(completed.data.url.endsWith(`${e4.path}/${id}`))
      assert.match(completed.timestamp, /^\d{4}-\d\d-\d\dT.*Z$/)
      assert.notStrictEqual(a.received[0]!.id, a.received[1]!.id)
      assert.match(a.received[0]!.headers["webhook-signature"]!, /^v1,/)
      const video = new URL(completed.data.videos[0])
      const client = yield* HttpClient.HttpClient
      const download = yield* client.execute(HttpClientRequest.get(video.pathname + video.search)).pipe(Effect.scoped)
      assert.strictEqual(download.status, 200)

      // Nothing more is due.
      assert.strictEqual(yield* deliverDue, 0)
    }).pipe(Effect.provide(Harness.layer({ settings: open }))))

  it.scoped("task.failed is delivered; an endpoint's filter is honoured", () =>
    Effect.gen(function*() {
      const all = yield* receiver()
      const failedOnly = yield* receiver()
      yield* register(all)
      const filtered = yield* register(failedOnly, Harness.tokenA, { events: ["task.failed"] })
      assert.deepStrictEqual(filtered.events, ["task.failed"])
      yield* runTask({ "x-sandbox-outcome": "failed:400" })
      yield* deliverDue
      assert.deepStrictEqual(all.received.map((r) => (r.verified as any).payload.type), ["task.processing", "task.failed"])
      assert.strictEqual(failedOnly.received.length, 1)
      const failed = (failedOnly.received[0]!.verified as any).payload
      assert.strictEqual(failed.type, "task.failed")
      assert.strictEqual(failed.data.task_info.error.code, 400)
      // One event, one id, whichever endpoint receives it.
      assert.strictEqual(failedOnly.received[0]!.id, all.received[1]!.id)
    }).pipe(Effect.provide(Harness.layer({ settings: open }))))

  it.scoped("a tenant's endpoints are remembered between tasks; one registered or deleted through the gateway counts at once", () =>
    Effect.gen(function*() {
      // The first task's changes look the tenant's endpoints up (none) and remember that.
      yield* runTask()
      const r = yield* receiver()
      const made = yield* register(r)
      yield* runTask()
      assert.strictEqual(yield* deliverDue, 2)
      assert.deepStrictEqual(r.received.map((x) => (x.verified as any).payload.type), ["task.processing", "task.completed"])
      const del = yield* Harness.send(HttpClientRequest.del(`/v1/webhooks/${made.id}`).pipe(HttpClientRequest.bearerToken(Harness.tokenA)))
      assert.strictEqual(del.status, 204)
      yield* runTask()
      assert.strictEqual(yield* deliverDue, 0)
      assert.strictEqual(r.received.length, 2)
    }).pipe(Effect.provide(Harness.layer({ settings: open }))))

  it.scoped("a receiver failing twice gets the third try on the schedule, with the same webhook-id; the log shows it", () =>
    Effect.gen(function*() {
      const r = yield* receiver((n) => (n <= 4 ? 500 : 200))
      const ep = yield* register(r)
      yield* runTask({}, Harness.tokenA)
      // Two events (processing, completed): the first attempt of each fails.
      assert.strictEqual(yield* deliverDue, 2)
      yield* TestClock.adjust("4999 millis")
      assert.strictEqual(yield* deliverDue, 0)
      yield* TestClock.adjust("1 millis")
      assert.strictEqual(yield* deliverDue, 2)
      // Third tries are due 5 minutes later.
      yield* TestClock.adjust("299 seconds")
      assert.strictEqual(yield* deliverDue, 0)
      yield* TestClock.adjust("1 second")
      assert.strictEqual(yield* deliverDue, 2)
      assert.strictEqual(r.received.length, 6)
      const byId = new Map<string, Array<number>>()
      r.received.forEach((x, i) => byId.set(x.id, [...(byId.get(x.id) ?? []), i]))
      assert.strictEqual(byId.size, 2)
      for (const tries of byId.values()) assert.strictEqual(tries.length, 3)
      assert.isTrue(r.received.every((x) => x.verified.ok))

      const log = yield* Harness.send(Harness.get(`/v1/webhooks/${ep.id}/deliveries`))
      assert.strictEqual(log.status, 200)
      assert.strictEqual(log.json.data.length, 2)
      for (const d of log.json.data) {
        assert.strictEqual(d.status, "delivered")
        assert.strictEqual(d.attempts, 3)
        assert.strictEqual(d.last_status_code, 200)
        assert.isNull(d.last_error)
        assert.isTrue(byId.has(d.event_id))
      }
      // Newest first.
      assert.strictEqual(log.json.data[0].type, "task.completed")
    }).pipe(Effect.provide(Harness.layer({ settings: open }))))

  it.scoped("after the last retry a delivery is failed", () =>
    Effect.gen(function*() {
      const r = yield* receiver(() => 500)
      const ep = yield* register(r)
      const test = yield* Harness.send(Harness.post(`/v1/webhooks/${ep.id}/test`, {}))
      assert.strictEqual(test.status, 202)
      yield* deliverDue
      yield* TestClock.adjust("20 millis")
      yield* deliverDue
      yield* TestClock.adjust("20 millis")
      assert.strictEqual(yield* deliverDue, 0)
      const log = yield* Harness.send(Harness.get(`/v1/webhooks/${ep.id}/deliveries`))
      assert.strictEqual(log.json.data[0].status, "failed")
      assert.strictEqual(log.json.data[0].attempts, 2)
      assert.strictEqual(log.json.data[0].last_status_code, 500)
      assert.strictEqual(log.json.data[0].type, "webhook.test")
      assert.strictEqual((r.received[0]!.verified as any).payload.type, "webhook.test")
    }).pipe(Effect.provide(Harness.layer({ settings: { ...open, webhookRetryMs: [10] } }))))

  it.scoped("registration rules: https and public addresses unless allowed; unknown events; tenants; delete drops pending", () =>
    Effect.gen(function*() {
      const bad = (body: unknown) => Harness.send(Harness.post("/v1/webhooks", body))
      let r = yield* bad({ url: "http://example.com/hook" })
      assert.strictEqual(r.status, 400)
      assert.strictEqual(r.json.error.param, "url")
      assert.match(r.json.error.detail, /https/)
      r = yield* bad({ url: "https://127.0.0.1/hook" })
      assert.strictEqual(r.status, 400)
      assert.strictEqual(r.json.error.param, "url")
      r = yield* bad({ url: "https://localhost/hook" })
      assert.strictEqual(r.status, 400)
      assert.strictEqual(r.json.error.param, "url")
      r = yield* bad({ url: "https://[::ffff:10.0.0.1]/hook" })
      assert.strictEqual(r.status, 400)
      r = yield* bad({ url: "https://93.184.215.14/hook", events: ["task.started"] })
      assert.strictEqual(r.status, 400)
      assert.strictEqual(r.json.error.param, "events")
      r = yield* bad({ events: ["task.failed"] })
      assert.strictEqual(r.json.error.param, "url")

      const made = yield* bad({ url: "https://93.184.215.14/hook", description: "ops" })
      assert.strictEqual(made.status, 201, made.text)
      const listed = yield* Harness.send(Harness.get("/v1/webhooks"))
      assert.strictEqual(listed.json.data.length, 1)
      assert.strictEqual(listed.json.data[0].description, "ops")
      assert.isUndefined(listed.json.data[0].secret)
      const other = yield* Harness.send(Harness.get("/v1/webhooks", Harness.tokenB))
      assert.deepStrictEqual(other.json.data, [])
      const id = made.json.id
      for (
        const req of [
          Harness.get(`/v1/webhooks/${id}/deliveries`, Harness.tokenB),
          Harness.post(`/v1/webhooks/${id}/test`, {}, Harness.tokenB),
          HttpClientRequest.del(`/v1/webhooks/${id}`).pipe(HttpClientRequest.bearerToken(Harness.tokenB))
        ]
      ) {
        assert.strictEqual((yield* Harness.send(req)).status, 404)
      }
      yield* Harness.send(Harness.post(`/v1/webhooks/${id}/test`, {}))
      const pending = yield* Harness.send(Harness.get(`/v1/webhooks/${id}/deliveries`))
      assert.strictEqual(pending.json.data[0].status, "pending")
      const del = yield* Harness.send(HttpClientRequest.del(`/v1/webhooks/${id}`).pipe(HttpClientRequest.bearerToken(Harness.tokenA)))
      assert.strictEqual(del.status, 204)
      assert.strictEqual((yield* Harness.send(Harness.get(`/v1/webhooks/${id}/deliveries`))).status, 404)
      assert.strictEqual(yield* deliverDue, 0)
    }).pipe(Effect.provide(Harness.layer())))

  it.scoped("a name that resolves to a private address at connect time is refused there (no DNS rebinding)", () =>
    Effect.gen(function*() {
      const r = yield* receiver()
      // As if the name had resolved to a public address at registration and was re-pointed since.
      const sql = yield* SqlClient.SqlClient
      const url = r.url.replace("127.0.0.1", "localhost")
      yield* sql`INSERT INTO webhook_endpoints (id, tenant, url, events, secret, created_at)
        VALUES ('ep_00000000000000000000000000000001', ${"bootstrap"}, ${url}, '["task.failed"]', 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', 0)`
      const webhooks = yield* Webhooks
      yield* webhooks.sendTest({
        id: "ep_00000000000000000000000000000001",
        tenant: "bootstrap",
        url,
        events: ["task.failed"],
        description: null,
        secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
        createdAt: 0
      })
      assert.strictEqual(yield* deliverDue, 1)
      assert.strictEqual(r.received.length, 0)
      const [d] = yield* webhooks.deliveries("ep_00000000000000000000000000000001")
      assert.strictEqual(d!.status, "pending")
      assert.strictEqual(d!.attempts, 1)
      assert.isNull(d!.lastStatusCode)
      assert.match(d!.lastError ?? "", /refused to connect: localhost resolves to the non-public address/)
    }).pipe(Effect.provide(Harness.layer({ settings: { webhookAllowInsecure: true } }))))

  it.scopedLive("a receiver that hangs does not delay another endpoint's deliveries", () =>
    Effect.gen(function*() {
      const slow = yield* receiver(() => "hang")
      const fast = yield* receiver()
      const s = yield* register(slow)
      const f = yield* register(fast)
      for (let i = 0; i < 12; i++) yield* Harness.send(Harness.post(`/v1/webhooks/${s.id}/test`, {}))
      yield* Effect.forkScoped(Effect.flatMap(Webhooks, (w) => w.loop))
      yield* Effect.sleep("300 millis")
      const start = Date.now()
      yield* Harness.send(Harness.post(`/v1/webhooks/${f.id}/test`, {}))
      while (fast.received.length === 0 && Date.now() - start < 5_000) yield* Effect.sleep("20 millis")
      assert.strictEqual(fast.received.length, 1)
      assert.isBelow(Date.now() - start, 3_000)
      assert.isTrue(slow.received.length >= 1)
    }).pipe(Effect.provide(Harness.layer({ settings: open }))), 20_000)
})

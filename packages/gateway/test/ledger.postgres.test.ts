/**
 * Budgets on PostgreSQL with two gateway replicas on one database: 100 concurrent creates against
 * a tenant budget for 10 create exactly 10 (the check and the reservation share the insert's
 * transaction under a per-tenant advisory lock), and settle/release totals hold across replicas;
 * a task settles on the vendor's reported seconds, and an E2 response recorded twice counts once.
 */
import { assert, describe, it } from "@effect/vitest"
import type { Responses } from "@genway/core"
import { Registry } from "@genway/registry"
import * as Clock from "effect/Clock"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as TestClock from "effect/TestClock"
import { randomUUID } from "node:crypto"
import * as Gateway from "../src/Gateway.js"
import * as Ledger from "../src/ledger/Ledger.js"
import * as Usage from "../src/ledger/Usage.js"
import { ApiKeys } from "../src/platform/ApiKeys.js"
import * as Config from "../src/platform/Config.js"
import { TaskStore } from "../src/tasks/Store.js"
import { tempDir } from "./harness.js"
import * as Pg from "./pg.js"

const e4 = Registry.entries.find((e) => e.endpoints.includes("E4"))!
const priced = Registry.entries.map((e) => (e.id === e4.id ? { ...e, price: { per_second: 0.2 } } : e))
const entry = priced.find((e) => e.id === e4.id)!

/** A gateway's services (no background fibers) on the private schema, with the priced entries. */
const pricedReplica = (schema: string) => {
  const scopedUrl = new URL(Pg.url!)
  scopedUrl.searchParams.set("options", `-c search_path=${schema}`)
  return Gateway.services(Effect.succeed(new Map()), Registry.layer(priced)).pipe(
    Layer.provideMerge(Config.layerWith({
      dataDir: tempDir(),
      databaseUrl: Option.some(Redacted.make(scopedUrl.toString())),
      apiKeys: [],
      sandboxDelayMs: 1000,
      pollIntervalMs: Option.none(),
      modelsFile: Option.none()
    })),
    Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map())))
  )
}

/** A sandbox task of the priced entry, created through `ctx`'s store under `guard`: created, or refused over a budget. */
const createTask = (
  ctx: Context.Context<any>,
  owner: { readonly tenant: string; readonly keyId: string | null },
  request: Readonly<Record<string, unknown>>,
  guard: Effect.Effect<void, any, any>,
  now: number
) =>
  Context.get(ctx, TaskStore).create({
    id: randomUUID(),
    tenant: owner.tenant,
    entryId: entry.id,
    vendor: entry.vendor,
    mode: "sandbox",
    request: JSON.stringify(request),
    hints: {},
    idempotencyKey: null,
    requestHash: null,
    upstreamModel: entry.upstream.model,
    deadlineAt: now + 600_000,
    createdAt: now,
    keyId: owner.keyId,
    guard
  }, now).pipe(
    Effect.as("created" as const),
    Effect.catchTag("BudgetExceeded", () => Effect.succeed("refused" as const))
  )

describe.skipIf(!Pg.available("ledger.postgres.test.ts"))("usage ledger on PostgreSQL, two replicas", () => {
  it.scoped("100 concurrent creates against a budget for 10 create exactly 10", () =>
    Effect.gen(function*() {
      const { schema } = yield* Pg.privateSchema
      const a = yield* Layer.build(pricedReplica(schema))
      const b = yield* Layer.build(pricedReplica(schema))
      yield* Context.get(a, ApiKeys).setTenantBudget("t", 10, "month")
      const now = Date.now()
      const body = { prompt: "race" }
      const create = (ctx: Context.Context<any>, i: number) =>
        createTask(ctx, { tenant: "t", keyId: null }, { ...body, n: i }, Ledger.checkBudget("t", null, Ledger.reservationFor(entry, body), now), now)
      const outcomes = yield* Effect.forEach(
        Array.from({ length: 100 }, (_, i) => i),
        (i) => create(i % 2 === 0 ? a : b, i),
        { concurrency: 100 }
      )
      assert.strictEqual(outcomes.filter((o) => o === "created").length, 10)
      assert.strictEqual(outcomes.filter((o) => o === "refused").length, 90)
      const report = yield* Usage.report({ from: 0, to: now + 1, tenant: "t" }).pipe(Effect.provide(a))
      assert.strictEqual(report.total.reserved_usd, 10)
      // A task that fails gives its reservation back, seen from the other replica.
      const store = Context.get(a, TaskStore)
      const open = yield* store.list("t", {}, 1)
      const failed = yield* store.update(open[0]!, {
        status: "failed",
        finishedAt: now,
        error: { code: 500, title: "Internal Server Error", detail: "x" } as any
      }, now)
      assert.isTrue(Option.isSome(failed))
      const after = yield* Usage.report({ from: 0, to: now + 1, groupBy: "model" }).pipe(Effect.provide(b))
      assert.strictEqual(after.total.reserved_usd, 9)
      assert.strictEqual(after.total.counts.failed, 1)
      assert.strictEqual(after.groups?.[0]?.key, entry.id)
    }), 60_000)

  // A key and tenant found without a budget are remembered for 5 s (the window of a verified
  // token), so their creates skip the budget lookup: a budget set through one replica applies there
  // at once and on the others within that window.
  it.scoped("a budget set on one replica applies there at once and on another within 5 s", () =>
    Effect.gen(function*() {
      const { schema } = yield* Pg.privateSchema
      const a = yield* Layer.build(pricedReplica(schema))
      const b = yield* Layer.build(pricedReplica(schema))
      const body = { prompt: "window" }
      const principal = { tenant: "w", keyId: "key_w" }
      const create = (ctx: Context.Context<any>) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) =>
          createTask(ctx, principal, body, Ledger.checkBudgetOf(Context.get(ctx, ApiKeys), principal, Ledger.reservationFor(entry, body), now), now))
      assert.strictEqual(yield* create(b), "created")
      // 1 USD a task: the 1 USD reserved above fills it.
      yield* Context.get(a, ApiKeys).setTenantBudget(principal.tenant, 1, "total")
      assert.strictEqual(yield* create(a), "refused")
      assert.strictEqual(yield* create(b), "created", "within the window B still knows no budget")
      yield* TestClock.adjust("5 seconds")
      assert.strictEqual(yield* create(b), "refused")
    }), 60_000)

  it.scoped("a completed task settles on the vendor's reported seconds (migration 0008); E2 records once per id", () =>
    Effect.gen(function*() {
      const { schema } = yield* Pg.privateSchema
      const ctx = yield* Layer.build(pricedReplica(schema))
      const store = Context.get(ctx, TaskStore)
      const now = Date.now()
      const created = yield* store.create({ ...Pg.sandboxTask(entry, 1), request: JSON.stringify({ prompt: "p", duration: 10 }), createdAt: now }, now)
      const done = yield* store.update(created.task, { status: "completed", finishedAt: now, result: [], reportedSeconds: 5.1 }, now)
      assert.strictEqual(Option.getOrThrow(done).reportedSeconds, 5.1)
      const e2 = priced.find((e) => e.kind === "responses")!
      const response: Responses.ResponseObject = {
        id: "resp_pg",
        object: "response",
        created_at: 0,
        model: "m",
        status: "completed",
        usage: { input_tokens: 7, output_tokens: 3, total_tokens: 10 }
      }
      const record = Ledger.recordResponse({ tenant: "t", keyId: null, entry: e2 }, response, now).pipe(Effect.provide(ctx))
      yield* record
      yield* record
      const report = yield* Usage.report({ from: 0, to: now + 1, tenant: "t" }).pipe(Effect.provide(ctx))
      assert.closeTo(report.total.units.seconds, 5.1, 1e-9)
      assert.closeTo(report.total.cost_usd, 1.02, 1e-9)
      assert.strictEqual(report.total.counts.requests, 1)
      assert.deepStrictEqual([report.total.units.input_tokens, report.total.units.output_tokens], [7, 3])
    }), 60_000)
})

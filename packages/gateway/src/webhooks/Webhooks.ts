/**
 * Webhooks (DESIGN.md §8): endpoints per tenant, a durable outbox, and the delivery workers.
 *
 * Every status change a tenant's endpoint subscribes to writes one delivery row per endpoint in
 * the transaction of the change (a task-store transition hook), so a crash between the change and
 * its delivery still delivers. Workers on every replica claim due rows with a lease, each
 * delivery in its own fiber (bounded overall and per endpoint), so a slow receiver delays nobody
 * else. The event id is fixed when the row is written: the same `webhook-id` on every retry and
 * for every endpoint of an event.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import { Registry } from "@genway/registry"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as FiberSet from "effect/FiberSet"
import * as Layer from "effect/Layer"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import { randomBytes, randomUUID } from "node:crypto"
import { Webhook } from "standardwebhooks"
import { Agent, request } from "undici"
import { Settings } from "../platform/Config.js"
import { MediaStore } from "../platform/MediaStore.js"
import * as Remembered from "../platform/Remembered.js"
import { TransitionHooks } from "../tasks/Hooks.js"
import { taskInfo } from "../tasks/Http.js"
import { signResult, taskUrl } from "../tasks/Envelope.js"
import * as VendorProgress from "../tasks/Progress.js"
import type { ResultItem } from "../tasks/Store.js"
import * as Rows from "../platform/Rows.js"
import { AddressRefused, guardedLookup } from "./Address.js"

/** The task events an endpoint can subscribe to. */
export const taskEvents = ["task.processing", "task.completed", "task.failed"] as const

/** A task event type. */
export type TaskEventType = (typeof taskEvents)[number]

/** How long a receiver has to answer. */
export const deliveryTimeoutMs = 10_000

/**
 * A claimed delivery belongs to its worker this long: longer than the timeout (one attempt is
 * one bounded request), and as short as a task lease, so a dead replica's deliveries go out
 * from another one within 30 s.
 */
export const deliveryLeaseMs = 30_000

/** Deliveries in flight per replica, overall and towards one endpoint. */
export const maxInFlight = 64
export const maxInFlightPerEndpoint = 4

/** Idle wait between claims. */
export const idleMs = 200

/** `genway_webhook_deliveries_total{outcome}`: `delivered`, `retry` or `failed`, per attempt. */
export const deliveriesTotal = Metric.counter("genway_webhook_deliveries_total", {
  description: "Webhook delivery attempts by outcome (delivered, retry, failed).",
  incremental: true
})

/** A registered endpoint (the secret only when created). */
export interface Endpoint {
  readonly id: string
  readonly tenant: string
  readonly url: string
  readonly events: ReadonlyArray<string>
  readonly description: string | null
  readonly secret: string
  readonly createdAt: number
}

/** One delivery as the deliveries log shows it. */
export interface Delivery {
  readonly id: string
  readonly endpointId: string
  readonly eventId: string
  readonly type: string
  readonly payload: string
  readonly status: "pending" | "delivered" | "failed"
  readonly attempts: number
  readonly lastStatusCode: number | null
  readonly lastError: string | null
  readonly nextAttemptAt: number
  readonly createdAt: number
}

/** The event as stored: the body minus media URLs, which are signed at delivery time. */
interface StoredEvent {
  readonly type: string
  readonly timestamp: string
  readonly data: Record<string, unknown>
  readonly media?: { readonly field: string; readonly items: ReadonlyArray<ResultItem> }
}

const num = (v: unknown) => (typeof v === "number" ? v : Number(v))

const endpointOf = (r: Record<string, unknown>): Endpoint => ({
  id: r.id as string,
  tenant: r.tenant as string,
  url: r.url as string,
  events: JSON.parse(r.events as string),
  description: (r.description as string | null) ?? null,
  secret: r.secret as string,
  createdAt: num(r.created_at)
})

const deliveryOf = (r: Record<string, unknown>): Delivery => ({
  id: r.id as string,
  endpointId: r.endpoint_id as string,
  eventId: r.event_id as string,
  type: r.type as string,
  payload: r.payload as string,
  status: r.status as Delivery["status"],
  attempts: num(r.attempts),
  lastStatusCode: r.last_status_code === null || r.last_status_code === undefined ? null : num(r.last_status_code),
  lastError: (r.last_error as string | null) ?? null,
  nextAttemptAt: num(r.next_attempt_at),
  createdAt: num(r.created_at)
})

/** A new `whsec_` secret (24 random bytes, as the Standard Webhooks libraries expect). */
const newSecret = () => `whsec_${randomBytes(24).toString("base64")}`

/** Short, log-safe text of a failed attempt. */
const describeError = (e: unknown): string => {
  if (e instanceof AddressRefused) return e.message
  const err = e as { name?: string; code?: string; message?: string; cause?: unknown }
  if (err?.cause instanceof AddressRefused) return err.cause.message
  if (err?.name === "AbortError" || err?.name === "TimeoutError") return `no answer within ${deliveryTimeoutMs / 1000} s`
  const code = err?.code ?? (err?.cause as { code?: string } | undefined)?.code
  const message = (err?.cause as { message?: string } | undefined)?.message ?? err?.message ?? String(e)
  return (code !== undefined ? `${code}: ${message}` : message).slice(0, 500)
}

const make = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const progressWriter = yield* VendorProgress.ProgressWriter
  const settings = yield* Settings
  const registry = yield* Registry.Registry
  const hooks = yield* TransitionHooks
  const media = yield* MediaStore
  const entries = Registry.indexById(registry.entries)
  const owner = `webhooks-${randomUUID()}`
  const rules = { allowInsecure: settings.webhookAllowInsecure, allowPrivate: settings.webhookAllowPrivate }
  const agent = new Agent({
    connect: { lookup: guardedLookup(rules), timeout: deliveryTimeoutMs },
    headersTimeout: deliveryTimeoutMs,
    bodyTimeout: deliveryTimeoutMs,
    keepAliveTimeout: 4_000
  })
  yield* Effect.addFinalizer(() => Effect.promise(() => agent.close().catch(() => undefined)))
  const signal = yield* Queue.sliding<void>(1)

  const insertDelivery = (endpoint: { readonly id: string; readonly tenant: string }, eventId: string, event: StoredEvent, taskId: string | null, now: number) =>
    sql`INSERT INTO webhook_deliveries (id, endpoint_id, tenant, event_id, type, task_id, payload, status, attempts, next_attempt_at, created_at)
      VALUES (${`dlv_${randomUUID().replace(/-/g, "")}`}, ${endpoint.id}, ${endpoint.tenant}, ${eventId}, ${event.type}, ${taskId},
        ${JSON.stringify(event)}, 'pending', 0, ${now}, ${now})`

  /**
   * Each tenant's endpoints, remembered for 5 s after they were read: the hook below
   * runs on every task's processing, completed and failed changes, and most tenants have no
   * endpoint. An endpoint created or deleted through this gateway takes effect at once (the
   * tenant's entry is forgotten; a lookup that began before the write is not remembered); one
   * created or deleted through another replica, within the same 5 s (README "Webhooks").
   */
  type KnownEndpoint = { readonly id: string; readonly tenant: string; readonly events: ReadonlyArray<string> }
  const knownEndpoints = Remembered.make<ReadonlyArray<KnownEndpoint>>(5_000)
  const forgetEndpoints = (tenant: string) => knownEndpoints.forget(tenant)
  const endpointsOf = (tenant: string, now: number) =>
    Effect.suspend(() => {
      const known = knownEndpoints.get(tenant, now)
      if (known !== undefined) return Effect.succeed(known)
      const since = knownEndpoints.epoch()
      return Effect.map(sql`SELECT id, tenant, events FROM webhook_endpoints WHERE tenant = ${tenant} AND deleted_at IS NULL`, (found) => {
        const rows = found.map((r): KnownEndpoint => ({ id: r.id as string, tenant: r.tenant as string, events: JSON.parse(r.events as string) as Array<string> }))
        knownEndpoints.remember(tenant, rows, now, since)
        return rows
      })
    })

  // The outbox: runs inside the task store's transaction.
  yield* hooks.register(({ at, task, to }) => {
    if (to !== "processing" && to !== "completed" && to !== "failed") return undefined
    const type = `task.${to}`
    // Known (remembered) to have no endpoint for this event: nothing to write.
    if (knownEndpoints.get(task.tenant, at)?.some((e) => e.events.includes(type)) === false) return undefined
    return Effect.gen(function*() {
      const endpoints = (yield* endpointsOf(task.tenant, at)).filter((r) => r.events.includes(type))
      if (endpoints.length === 0) return
      const entry = entries.get(task.entryId)
      const data: Record<string, unknown> = {
        model: task.entryId,
        url: entry === undefined ? null : taskUrl(settings.publicUrl, entry, task.id),
        task_info: taskInfo(task)
      }
      if (to === "processing") {
        const progress = yield* progressWriter.latest(task.id)
        if (progress !== undefined) data.progress = { percent: progress.percent, source: "vendor" }
      }
      const event: StoredEvent = {
        type,
        timestamp: new Date(at).toISOString(),
        data,
        ...(to === "completed" && task.result !== null && entry?.result !== undefined
          ? { media: { field: entry.result, items: task.result } }
          : {})
      }
      const eventId = `msg_${randomUUID().replace(/-/g, "")}`
      for (const e of endpoints) yield* insertDelivery(e, eventId, event, task.id, at)
    })
  })

  // Endpoints.

  const create = (tenant: string, input: { readonly url: string; readonly events: ReadonlyArray<string>; readonly description: string | null }) =>
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const endpoint: Endpoint = {
        id: `ep_${randomUUID().replace(/-/g, "")}`,
        tenant,
        url: input.url,
        events: input.events,
        description: input.description,
        secret: newSecret(),
        createdAt: now
      }
      yield* sql`INSERT INTO webhook_endpoints (id, tenant, url, events, description, secret, created_at)
        VALUES (${endpoint.id}, ${tenant}, ${endpoint.url}, ${JSON.stringify(endpoint.events)}, ${endpoint.description}, ${endpoint.secret}, ${now})`
      forgetEndpoints(tenant)
      return endpoint
    })

  const list = (tenant: string) =>
    Effect.map(
      sql`SELECT * FROM webhook_endpoints WHERE tenant = ${tenant} AND deleted_at IS NULL ORDER BY created_at DESC, id DESC`,
      (rows) => rows.map(endpointOf)
    )

  const find = (tenant: string, id: string) =>
    Effect.map(
      sql`SELECT * FROM webhook_endpoints WHERE id = ${id} AND tenant = ${tenant} AND deleted_at IS NULL`,
      (rows) => (rows.length === 0 ? Option.none<Endpoint>() : Option.some(endpointOf(rows[0]!)))
    )

  /** Deletes an endpoint and drops its pending deliveries; `false` when there was none. */
  const remove = (tenant: string, id: string) =>
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const rows = yield* sql`UPDATE webhook_endpoints SET deleted_at = ${now} WHERE id = ${id} AND tenant = ${tenant} AND deleted_at IS NULL RETURNING id`
      if (rows.length === 0) return false
      yield* sql`DELETE FROM webhook_deliveries WHERE endpoint_id = ${id} AND status = 'pending'`
      return true
    }).pipe(sql.withTransaction, Effect.ensuring(Effect.sync(() => forgetEndpoints(tenant))))

  /** Queues a `webhook.test` event to one endpoint, whatever its filter. */
  const sendTest = (endpoint: Endpoint) =>
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const eventId = `msg_${randomUUID().replace(/-/g, "")}`
      yield* insertDelivery(endpoint, eventId, {
        type: "webhook.test",
        timestamp: new Date(now).toISOString(),
        data: { endpoint_id: endpoint.id, message: "a test event from Genway" }
      }, null, now)
      yield* Queue.offer(signal, undefined)
      return eventId
    })

  /** An endpoint's deliveries, newest first. */
  const deliveries = (endpointId: string, limit = 100) =>
    Effect.map(
      sql`SELECT * FROM webhook_deliveries WHERE endpoint_id = ${endpointId} ORDER BY created_at DESC, id DESC LIMIT ${limit}`,
      (rows) => rows.map(deliveryOf)
    )

  // Delivery.

  const inFlight = new Map<string, number>()
  let inFlightTotal = 0

  const claim = (now: number, limit: number, saturated: ReadonlyArray<string>) => {
    const until = now + deliveryLeaseMs
    const skip = saturated.length === 0 ? sql`` : sql`AND endpoint_id NOT IN ${sql.in(saturated)}`
    return sql`UPDATE webhook_deliveries SET lease_owner = ${owner}, lease_until = ${until}
      WHERE id IN (
        SELECT id FROM webhook_deliveries
        WHERE status = 'pending' AND next_attempt_at <= ${now} AND (lease_until IS NULL OR lease_until < ${now}) ${skip}
        ORDER BY next_attempt_at LIMIT ${limit}
        ${Rows.skipLocked(sql)}
      )
      RETURNING *`.pipe(Effect.map((rows) => rows.map(deliveryOf)))
  }

  /** The signed body and headers of a delivery, media URLs signed now. */
  const render = (delivery: Delivery, secret: string) =>
    Effect.gen(function*() {
      const stored = JSON.parse(delivery.payload) as StoredEvent
      const data = { ...stored.data }
      if (stored.media !== undefined) data[stored.media.field] = yield* signResult(stored.media.items)
      const body = JSON.stringify({ type: stored.type, timestamp: stored.timestamp, data })
      // The signature's timestamp is the wall-clock sending time: receivers check it against theirs.
      const sentAt = new Date()
      const signature = new Webhook(secret).sign(delivery.eventId, sentAt, body)
      return {
        body,
        headers: {
          "content-type": "application/json",
          "user-agent": "Genway-Webhooks/1",
          "webhook-id": delivery.eventId,
          "webhook-timestamp": String(Math.floor(sentAt.getTime() / 1000)),
          "webhook-signature": signature
        }
      }
    })

  type Attempt = { readonly ok: true; readonly status: number } | { readonly ok: false; readonly status: number | null; readonly error: string }

  const send = (url: string, body: string, headers: Record<string, string>): Effect.Effect<Attempt> =>
    Effect.tryPromise({
      try: async (abort) => {
        const timeout = AbortSignal.timeout(deliveryTimeoutMs)
        const response = await request(url, {
          method: "POST",
          headers,
          body,
          dispatcher: agent,
          signal: AbortSignal.any([abort, timeout])
        })
        await response.body.dump({ limit: 64 * 1024 }).catch(() => undefined)
        return response.statusCode
      },
      catch: describeError
    }).pipe(
      Effect.match({
        onFailure: (error): Attempt => ({ ok: false, status: null, error }),
        onSuccess: (status): Attempt =>
          status >= 200 && status < 300 ? { ok: true, status } : { ok: false, status, error: `the receiver answered ${status}` }
      })
    )

  const record = (delivery: Delivery, attempt: Attempt, now: number) => {
    const attempts = delivery.attempts + 1
    const schedule = settings.webhookRetryMs
    const outcome = attempt.ok ? "delivered" : attempts > schedule.length ? "failed" : "retry"
    const status = outcome === "retry" ? "pending" : outcome
    const next = outcome === "retry" ? now + schedule[attempts - 1]! : now
    return sql`UPDATE webhook_deliveries SET status = ${status}, attempts = ${attempts}, next_attempt_at = ${next},
        last_status_code = ${attempt.status}, last_error = ${attempt.ok ? null : attempt.error},
        lease_owner = NULL, lease_until = NULL
      WHERE id = ${delivery.id} AND lease_owner = ${owner}`.pipe(
      Effect.zipRight(Metric.increment(Metric.tagged(deliveriesTotal, "outcome", outcome)))
    )
  }

  /** One attempt of one claimed delivery. */
  const deliver = (delivery: Delivery): Effect.Effect<void, SqlError> =>
    Effect.gen(function*() {
      const rows = yield* sql`SELECT * FROM webhook_endpoints WHERE id = ${delivery.endpointId} AND deleted_at IS NULL`
      if (rows.length === 0) {
        yield* sql`DELETE FROM webhook_deliveries WHERE id = ${delivery.id} AND status = 'pending'`
        return
      }
      const endpoint = endpointOf(rows[0]!)
      const { body, headers } = yield* render(delivery, endpoint.secret).pipe(Effect.provideService(MediaStore, media))
      const attempt = yield* send(endpoint.url, body, headers)
      const now = yield* Clock.currentTimeMillis
      yield* record(delivery, attempt, now)
      if (!attempt.ok) {
        yield* Effect.logInfo(`webhook delivery attempt failed: ${attempt.error}`).pipe(
          Effect.annotateLogs({ delivery: delivery.id, endpoint: delivery.endpointId })
        )
      }
    })

  const acquire = (endpointId: string) => {
    inFlight.set(endpointId, (inFlight.get(endpointId) ?? 0) + 1)
    inFlightTotal++
  }
  const release = (endpointId: string) => {
    const n = (inFlight.get(endpointId) ?? 1) - 1
    if (n <= 0) inFlight.delete(endpointId)
    else inFlight.set(endpointId, n)
    inFlightTotal--
  }

  /**
   * Claims due deliveries (as many as free slots allow) and starts each in its own fiber of
   * `fibers`; returns how many it started. Endpoints already at their limit are not claimed.
   */
  const runOnce = (fibers: FiberSet.FiberSet<void, never>) =>
    Effect.gen(function*() {
      const free = maxInFlight - inFlightTotal
      if (free <= 0) return 0
      const now = yield* Clock.currentTimeMillis
      const saturated = [...inFlight].filter(([, n]) => n >= maxInFlightPerEndpoint).map(([id]) => id)
      const claimed = yield* claim(now, free, saturated)
      for (const delivery of claimed) {
        acquire(delivery.endpointId)
        yield* FiberSet.run(
          fibers,
          deliver(delivery).pipe(
            Effect.catchAllCause((cause) => Effect.logError("webhook delivery failed; its lease will expire and it will be retried", cause)),
            Effect.ensuring(Effect.sync(() => release(delivery.endpointId)))
          )
        )
      }
      return claimed.length
    })

  /** Claims and delivers until interrupted. */
  const loop = Effect.scoped(Effect.gen(function*() {
    const fibers = yield* FiberSet.make<void, never>()
    while (true) {
      const n = yield* runOnce(fibers).pipe(
        Effect.catchAllCause((cause) => Effect.as(Effect.logError("webhook worker pass failed", cause), 0))
      )
      if (n === 0) yield* Effect.raceFirst(Effect.sleep(idleMs), Queue.take(signal))
    }
  }))

  /** For tests: runs one pass and waits for its deliveries to finish. */
  const deliverDue = Effect.scoped(Effect.gen(function*() {
    const fibers = yield* FiberSet.make<void, never>()
    const n = yield* runOnce(fibers)
    yield* FiberSet.awaitEmpty(fibers)
    return n
  }))

  /**
   * Drops every delivery lease. Only for the embedded SQLite database, which one process owns:
   * after a crash its deliveries are sent at once instead of when their leases run out.
   */
  const releaseAllLeasesIfEmbedded = sql.onDialectOrElse({
    sqlite: () =>
      sql`UPDATE webhook_deliveries SET lease_owner = NULL, lease_until = NULL WHERE lease_owner IS NOT NULL AND status = 'pending'`,
    orElse: () => Effect.void
  })

  /**
   * Releases the leases of this process's deliveries (at shutdown, after the loop stopped): an
   * attempt cut by the shutdown is sent again at once by another replica (at least once).
   */
  const releaseLeases = sql`UPDATE webhook_deliveries SET lease_owner = NULL, lease_until = NULL
    WHERE lease_owner = ${owner} AND status = 'pending'`.pipe(Effect.asVoid)

  return { create, list, find, remove, sendTest, deliveries, runOnce, deliverDue, loop, rules, releaseAllLeasesIfEmbedded, releaseLeases, owner } as const
})

/** The webhooks service. */
export class Webhooks extends Context.Tag("@genway/gateway/Webhooks")<Webhooks, Effect.Effect.Success<typeof make>>() {}

/** The service (and its outbox hook), without the delivery loop. */
export const layer = Layer.scoped(Webhooks, make)

/** Runs the delivery loop for the lifetime of the layer. */
export const layerWorker = Layer.scopedDiscard(
  Effect.flatMap(Webhooks, (w) =>
    Effect.zipRight(
      w.releaseAllLeasesIfEmbedded,
      // Added before the loop is forked, so it runs after the loop is interrupted.
      Effect.zipRight(
        Effect.addFinalizer(() =>
          w.releaseLeases.pipe(
            Effect.catchAllCause((cause) => Effect.logWarning("could not release webhook delivery leases at shutdown", cause))
          )),
        Effect.forkScoped(w.loop)
      )
    ))
)

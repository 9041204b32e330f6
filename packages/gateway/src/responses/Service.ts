/**
 * Model responses (E2): the responses vendor's live upstream when its `VENDOR_*` group is set, else
 * its sandbox (both from its manifest in the vendor list); and
 * the responses the gateway keeps for its tenants.
 *
 * Kept: every response whose request does not say `store: false` (the vendor's own default keeps
 * them), and every `background` one. A kept response belongs to the caller's tenant and stays
 * readable for the entry's retention (30 days unless the deployment sets one) — far longer than
 * the vendor's ~10 minutes for background responses. A kept response that has not finished is
 * polled in the background (and on a read that finds it due) until it finishes or the entry's
 * poll deadline passes, so its final object is in the gateway before the vendor forgets it, and
 * survives restarts.
 *
 * Usage: every response that finishes `completed` or `incomplete` is recorded in the usage ledger
 * from its `usage`, under its id, whichever way it finishes (answered, streamed, polled, read
 * back); a kept one in the same transaction that stores it finished.
 */
import type * as HttpClient from "@effect/platform/HttpClient"
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import { type ModelEntry, Responses, type VendorManifest } from "@genway/core"
import { Registry } from "@genway/registry"
import * as Clock from "effect/Clock"
import type * as ConfigError from "effect/ConfigError"
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import { randomUUID } from "node:crypto"
import * as Ledger from "../ledger/Ledger.js"
import * as AnswerRows from "../platform/AnswerRows.js"
import * as Cadence from "../platform/Cadence.js"
import { nowOf } from "../platform/FiberTime.js"
import { Settings } from "../platform/Config.js"
import * as Poller from "./Poller.js"
import * as InputItems from "./InputItems.js"
import * as Store from "./Store.js"
import * as List from "../vendors/List.js"

/** How long a kept response stays readable when its entry sets no retention. */
export const defaultRetention: Duration.DurationInput = "30 days"

export { idleMs, leaseMs, sweepEveryMs } from "./Poller.js"

/** A request the gateway refuses itself, before any vendor sees it (400, naming the field). */
export class RequestRefused extends Data.TaggedError("RequestRefused")<{
  readonly param: string
  readonly message: string
  readonly code: string
}> {}

/** Every failure of creating a response. */
export type ServiceError = Responses.UpstreamError | RequestRefused | SqlError

/**
 * One create: the entry it came in on, the caller's tenant and API key (its usage is recorded
 * against them), and the validated body as the client sent it.
 */
export interface ResponseRequest {
  readonly entry: ModelEntry.ModelEntry
  readonly tenant: string
  readonly keyId: string | null
  readonly body: Readonly<Record<string, unknown>>
}

/** A kept response as a read returns it. */
export interface KeptResponse {
  readonly mode: "live" | "sandbox"
  /** The response object, JSON text. */
  readonly json: string
}

/** The responses service. */
export interface ResponsesApi {
  /** `live` when the responses vendor's variables are set. */
  readonly mode: "live" | "sandbox"
  /** A response to a request without `stream: true` (`queued` at once when `background`). */
  readonly create: (request: ResponseRequest) => Effect.Effect<Responses.ResponseObject, ServiceError>
  /**
   * The events of a request with `stream: true`, passed on as the vendor sends them. Fails like
   * `create` when the vendor refuses before streaming; a failure while streaming becomes a final
   * `error` event. Interrupting the stream cancels the upstream request.
   */
  readonly stream: (request: ResponseRequest) => Effect.Effect<Stream.Stream<Responses.ResponseEvent>, ServiceError>
  /** A tenant's kept response, refreshed first when it is unfinished and due. */
  readonly retrieve: (tenant: string, entry: ModelEntry.ModelEntry, id: string) => Effect.Effect<Option.Option<KeptResponse>, SqlError>
  /**
   * Cancels a tenant's kept background response (at the vendor when live); its state afterwards.
   * A finished one is returned as it is; one that is not background is refused.
   */
  readonly cancel: (tenant: string, entry: ModelEntry.ModelEntry, id: string) => Effect.Effect<Option.Option<KeptResponse>, ServiceError>
  /** Deletes a tenant's kept response (at the vendor too when live); whether there was one. */
  readonly remove: (tenant: string, entry: ModelEntry.ModelEntry, id: string) => Effect.Effect<boolean, ServiceError>
  /** The input items of a tenant's kept response, in the request's order. */
  readonly inputItems: (
    tenant: string,
    entry: ModelEntry.ModelEntry,
    id: string
  ) => Effect.Effect<Option.Option<ReadonlyArray<InputItems.InputItem>>, SqlError>
  /**
   * The events of a tenant's kept background response streamed again, those after
   * `startingAfter` (all when undefined), until its terminal event; like `stream`, a failure while
   * streaming becomes a final `error` event. The response is kept finished at its terminal event.
   */
  readonly resume: (
    tenant: string,
    entry: ModelEntry.ModelEntry,
    id: string,
    startingAfter: number | undefined
  ) => Effect.Effect<Option.Option<{ readonly mode: "live" | "sandbox"; readonly events: Stream.Stream<Responses.ResponseEvent> }>, ServiceError>
  /** Refreshes the unfinished kept responses that are due; returns how many it took. */
  readonly runOnce: Effect.Effect<number, SqlError, Registry.Registry>
  /** `runOnce` and the retention sweep, forever. */
  readonly loop: Effect.Effect<never, never, Registry.Registry>
  /** The lease owner of this process's refreshes (released at shutdown). */
  readonly owner: string
}

/** The model responses (E2) service. */
export class ResponsesService extends Context.Tag("@genway/gateway/ResponsesService")<ResponsesService, ResponsesApi>() {}

/**
 * The JSON text of response objects the gateway kept as it answers them: the kept row's `body` is
 * that text, and the answer reuses it rather than serialising the same object a second time.
 */
const keptText = new WeakMap<Responses.ResponseObject, string>()

/** A response object's JSON text: the one written to its kept row when there is one. */
export const jsonOf = (response: Responses.ResponseObject): string => keptText.get(response) ?? JSON.stringify(response)

/** Whether the gateway keeps the response to `body`. */
export const keeps = (body: Readonly<Record<string, unknown>>): boolean => body["background"] === true || body["store"] !== false

const builtInModels = new Map(Registry.entries.map((e) => [e.id, e.upstream.model]))

/**
 * The model sent upstream: the entry's `upstreamModel` when the deployment sets one
 * (`GATEWAY_MODELS_FILE`; the registry's own value is a placeholder), else the client's `model`.
 */
export const modelFor = (entry: ModelEntry.ModelEntry, clientModel: unknown): unknown =>
  builtInModels.get(entry.id) === entry.upstream.model ? clientModel : entry.upstream.model

const millis = (d: Duration.DurationInput) => Duration.toMillis(Duration.decode(d))

/** The `{code, message}` of a failure that ends a stream early. */
const describeFailure = (error: Responses.UpstreamError): { readonly code: string; readonly message: string } => {
  switch (error._tag) {
    case "UpstreamRejected":
      return { code: error.code ?? "invalid_request_error", message: error.message }
    case "UpstreamAuthFailed":
      return { code: "upstream_auth_failed", message: error.message }
    case "UpstreamRateLimited":
      return { code: error.code ?? "rate_limit_exceeded", message: error.message }
    case "UpstreamUnavailable":
      return { code: "upstream_unavailable", message: error.message }
    case "ResponseNotFound":
      return { code: "response_not_found", message: `response ${error.id} is not known upstream` }
  }
}

/** The final `error` event of a stream that failed after `lastSequence`. */
const errorEvent = (error: Responses.UpstreamError, lastSequence: number) => {
  const { code, message } = describeFailure(error)
  const param = error._tag === "UpstreamRejected" ? error.param : null
  return Stream.succeed<Responses.ResponseEvent>({ type: "error", sequence_number: lastSequence + 1, code, message, param })
}

/** The service over a live upstream, or the sandbox when there is none. */
export const make = (live: Option.Option<Responses.ResponsesUpstream>, Sandbox: VendorManifest.ResponsesSandbox = surface.sandbox) =>
  Effect.gen(function*() {
    const settings = yield* Settings
    const store = yield* Store.ResponseStore
    const owner = `responses-${randomUUID()}`
    const poller = yield* Poller.make(live, owner)
    const mode = Option.isSome(live) ? "live" as const : "sandbox" as const

    const pollDelay = (entry: ModelEntry.ModelEntry, first: boolean) =>
      Cadence.pollDelay(entry, { override: settings.pollIntervalMs, first })

    // An entry's deadline and retention in milliseconds, decoded once per entry rather than per kept response.
    const spans = new WeakMap<ModelEntry.ModelEntry, { readonly deadlineMs: number; readonly retentionMs: number }>()
    const spansOf = (entry: ModelEntry.ModelEntry) => {
      let found = spans.get(entry)
      if (found === undefined) {
        found = { deadlineMs: millis(entry.poll.deadline), retentionMs: millis(entry.retention ?? defaultRetention) }
        spans.set(entry, found)
      }
      return found
    }

    // The rows of the answers being given (platform/AnswerRows.ts): a kept response with its usage,
    // the usage of one not kept alone.
    const answers = yield* AnswerRows.AnswerRows
    const write = ({ kept, now, usage }: { readonly kept?: Store.NewStoredResponse; readonly usage?: Ledger.RequestUsage | undefined; readonly now: number }) => {
      const rows: Array<AnswerRows.Row> = []
      if (kept !== undefined) rows.push({ table: "responses", values: Store.columnsOf(kept, now) })
      if (usage !== undefined) rows.push({ table: "usage_ledger", values: Ledger.requestColumns(usage) })
      return answers.submit(rows, kept?.id)
    }

    /** A kept response, once a row of it still being written behind its answer is in. */
    const find = (tenant: string, entryId: string, id: string, now: number) =>
      Effect.zipRight(answers.written(id), store.find(tenant, entryId, id, now))

    /** Records a response the gateway does not keep; a failure is logged, the answer still goes out. */
    const recordUnkept = (request: ResponseRequest, response: Responses.ResponseObject) =>
      Effect.withFiberRuntime<void, SqlError>((fiber) => {
        const at = nowOf(fiber)
        const usage = Ledger.responseUsage(request, response, at)
        return usage === undefined ? Effect.void : write({ usage, now: at })
      }).pipe(
        Effect.catchAll((error) => Effect.logError("usage of a model response was not recorded", error))
      )

    /** Keeps `shown`; unfinished (or sandboxed with a `final` to reveal) it is refreshed from `pollAt`. */
    const keep = (
      request: ResponseRequest,
      rowMode: "live" | "sandbox",
      shown: Responses.ResponseObject,
      final: Responses.ResponseObject | null,
      now: number,
      pollAt: number
    ) => {
      const finished = final === null && Responses.isTerminal(shown.status)
      const body = JSON.stringify(shown)
      keptText.set(shown, body)
      return write({
        kept: {
          id: shown.id,
          tenant: request.tenant,
          keyId: request.keyId,
          entryId: request.entry.id,
          mode: rowMode,
          status: shown.status,
          background: request.body["background"] === true,
          body,
          sandboxFinal: final === null ? null : JSON.stringify(final),
          nextPollAt: finished ? null : pollAt,
          deadlineAt: now + spansOf(request.entry).deadlineMs,
          createdAt: now,
          finishedAt: finished ? now : null,
          expiresAt: now + spansOf(request.entry).retentionMs,
          inputItems: JSON.stringify(InputItems.fromInput(request.body["input"]))
        },
        ...(finished ? { usage: Ledger.responseUsage(request, shown, now) } : {}),
        now
      })
    }

    /**
     * Checks the gateway's own rules, then the body to send upstream: the body itself for a request
     * that continues no earlier response (most), checked as plain code; an effect otherwise.
     */
    const prepare = (
      request: ResponseRequest
    ): Readonly<Record<string, unknown>> | Effect.Effect<Readonly<Record<string, unknown>>, RequestRefused | SqlError> => {
      const body = request.body
      if (body["background"] === true && body["store"] === false) {
        return Effect.fail(
          new RequestRefused({
            param: "store",
            message: "background responses are kept for retrieval: store must not be false",
            code: "invalid_value"
          })
        )
      }
      const model = modelFor(request.entry, body["model"])
      const upstream = model === body["model"] ? body : { ...body, model }
      const previous = body["previous_response_id"]
      if (typeof previous !== "string") return upstream
      // The vendor sees one account for every tenant: only the caller's own responses may be continued.
      return Effect.flatMap(Clock.currentTimeMillis, (now) =>
        Effect.flatMap(find(request.tenant, request.entry.id, previous, now), (own) =>
          Option.isNone(own)
            ? Effect.fail(
              new RequestRefused({
                param: "previous_response_id",
                message: `Previous response with id '${previous}' not found.`,
                code: "previous_response_not_found"
              })
            )
            : Effect.succeed(upstream)))
    }

    /** The body to send upstream and the time, in one step (see `prepare`). */
    const begin = (request: ResponseRequest) =>
      Effect.withFiberRuntime<{ readonly body: Readonly<Record<string, unknown>>; readonly now: number }, RequestRefused | SqlError>((fiber) => {
        const now = nowOf(fiber)
        const body = prepare(request)
        return Effect.isEffect(body) ? Effect.map(body, (b) => ({ body: b, now })) : Effect.succeed({ body, now })
      })

    const create = (request: ResponseRequest) =>
      Effect.gen(function*() {
        const { body, now } = yield* begin(request)
        if (Option.isSome(live)) {
          const response = Responses.withOutputText(yield* live.value.create(body))
          if (keeps(body)) yield* keep(request, "live", response, null, now, now + (yield* pollDelay(request.entry, true)))
          else yield* recordUnkept(request, response)
          return response
        }
        const final = Sandbox.respond(body, Sandbox.newId(), now)
        if (body["background"] === true) {
          const queued = Sandbox.unfinished(final, "queued")
          yield* keep(request, "sandbox", queued, final, now, now + settings.sandboxDelayMs)
          return queued
        }
        if (keeps(body)) yield* keep(request, "sandbox", final, null, now, now)
        else yield* recordUnkept(request, final)
        return final
      })

    const stream = (request: ResponseRequest) =>
      Effect.gen(function*() {
        const { body, now } = yield* begin(request)
        let source: Stream.Stream<Responses.ResponseEvent, Responses.UpstreamError>
        let sandboxFinal: Responses.ResponseObject | undefined
        if (Option.isSome(live)) {
          source = yield* live.value.stream(body)
        } else {
          sandboxFinal = Sandbox.respond(body, Sandbox.newId(), now)
          source = Stream.fromIterable(Sandbox.events(sandboxFinal))
        }
        const rowMode = Option.isSome(live) ? "live" as const : "sandbox" as const
        // Kept at the terminal event, before it is passed on, so a client that reads the response
        // right after the stream finds it. A stream cut short keeps what it saw, to be polled.
        let kept = !keeps(body)
        let latest: Responses.ResponseObject | undefined
        let lastSequence = -1
        const save = (shown: Responses.ResponseObject) =>
          Effect.flatMap(Effect.zip(Clock.currentTimeMillis, pollDelay(request.entry, true)), ([at, delay]) => keep(request, rowMode, Responses.withOutputText(shown), null, at, at + delay)).pipe(
            Effect.catchAll((error) => Effect.logError("a streamed response could not be kept", error))
          )
        return source.pipe(
          Stream.tap((event) => {
            lastSequence = event.sequence_number
            const response = Responses.responseOf(event)
            if (response !== undefined) latest = response
            if (response === undefined || !Responses.isTerminalEvent(event)) return Effect.void
            if (!keeps(body)) return recordUnkept(request, response)
            if (kept) return Effect.void
            kept = true
            return save(response)
          }),
          Stream.catchAll((error) => errorEvent(error, lastSequence)),
          Stream.ensuring(Effect.suspend(() => {
            if (kept) return Effect.void
            kept = true
            const shown = sandboxFinal ?? latest
            return shown === undefined ? Effect.void : save(shown)
          }))
        )
      })

    /** What a read shows: a sandboxed background response is `queued` for a tenth of its time, then `in_progress`. */
    const present = (row: Store.StoredResponse, now: number): string => {
      if (row.mode !== "sandbox" || row.finishedAt !== null || row.nextPollAt === null) return row.body
      const queuedUntil = row.createdAt + (row.nextPollAt - row.createdAt) / 10
      return now < queuedUntil ? row.body : JSON.stringify({ ...JSON.parse(row.body), status: "in_progress" })
    }

    /** The row, refreshed first when it is unfinished and due (and nobody else holds it). */
    const refreshIfDue = (row: Store.StoredResponse, entry: ModelEntry.ModelEntry, now: number) =>
      Effect.gen(function*() {
        if (row.nextPollAt === null || row.nextPollAt > now) return row
        const claimed = yield* store.claim(row.id, owner, now, Poller.leaseMs)
        return Option.isSome(claimed) ? yield* poller.refresh(claimed.value, entry, now) : row
      })

    const retrieve = (tenant: string, entry: ModelEntry.ModelEntry, id: string) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const found = yield* find(tenant, entry.id, id, now)
        if (Option.isNone(found)) return Option.none<KeptResponse>()
        const row = yield* refreshIfDue(found.value, entry, now)
        return Option.some<KeptResponse>({ mode: row.mode, json: present(row, now) })
      })

    const refused = (param: string, message: string, code: string) => new RequestRefused({ param, message, code })

    /** The same response with another status, JSON text. */
    const withStatus = (body: string, status: string) => JSON.stringify({ ...JSON.parse(body), status })

    const cancel = (tenant: string, entry: ModelEntry.ModelEntry, id: string) =>
      Effect.gen(function*() {
        // A compare-and-set: when the poller changed the row meanwhile, the cancel reads it again.
        for (let attempt = 0;; attempt++) {
          const now = yield* Clock.currentTimeMillis
          const found = yield* find(tenant, entry.id, id, now)
          if (Option.isNone(found)) return Option.none<KeptResponse>()
          if (!found.value.background) {
            return yield* refused("response_id", "Only responses created with background=true can be cancelled.", "invalid_request")
          }
          // A sandboxed one whose time has come finished before it could be cancelled.
          const row = found.value.mode === "sandbox" ? yield* refreshIfDue(found.value, entry, now) : found.value
          if (row.finishedAt !== null || attempt >= 5) return Option.some<KeptResponse>({ mode: row.mode, json: row.body })
          let body: string
          if (row.mode === "live") {
            if (Option.isNone(live) || live.value.cancel === undefined) {
              return yield* refused("response_id", "this gateway cannot cancel responses of this vendor", "unsupported")
            }
            const outcome = yield* Effect.either(live.value.cancel(row.id))
            if (outcome._tag === "Right") body = JSON.stringify(Responses.withOutputText(outcome.right))
            else if (outcome.left._tag === "ResponseNotFound") body = withStatus(row.body, "cancelled") // the vendor forgot it: it runs no more
            else return yield* outcome.left
          } else {
            body = withStatus(row.body, "cancelled")
          }
          const status = (JSON.parse(body) as { status: string }).status
          const patch: Store.StoredPatch = Responses.isTerminal(status)
            ? { status, body, nextPollAt: null, finishedAt: now }
            : { status, body }
          // One that finished before the vendor could stop it is recorded like any other.
          const updated = Responses.isTerminal(status) ? yield* poller.finish(row, entry, patch, now) : yield* store.update(row, patch, now)
          if (Option.isSome(updated)) return Option.some<KeptResponse>({ mode: row.mode, json: body })
        }
      })

    const remove = (tenant: string, entry: ModelEntry.ModelEntry, id: string) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const found = yield* find(tenant, entry.id, id, now)
        if (Option.isNone(found)) return false
        if (found.value.mode === "live" && Option.isSome(live) && live.value.remove !== undefined) {
          // Gone at the vendor first, so a failure there leaves the response for the client to delete again.
          yield* live.value.remove(id).pipe(Effect.catchTag("ResponseNotFound", () => Effect.void))
        }
        return yield* store.remove(tenant, entry.id, id)
      })

    const inputItems = (tenant: string, entry: ModelEntry.ModelEntry, id: string) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => find(tenant, entry.id, id, now)).pipe(
        Effect.map(Option.map((row): ReadonlyArray<InputItems.InputItem> => (row.inputItems === null ? [] : JSON.parse(row.inputItems))))
      )

    /** Keeps the response of a resumed stream's terminal event, unless the row finished already. */
    const finishFromStream = (tenant: string, entry: ModelEntry.ModelEntry, response: Responses.ResponseObject) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const found = yield* find(tenant, entry.id, response.id, now)
        if (Option.isNone(found) || found.value.finishedAt !== null) return
        const shown = Responses.withOutputText(response)
        yield* poller.finish(found.value, entry, { status: shown.status, body: JSON.stringify(shown), nextPollAt: null, finishedAt: now }, now)
      }).pipe(Effect.catchAll((error) => Effect.logError("a resumed stream's response could not be kept", error)))

    const resume = (tenant: string, entry: ModelEntry.ModelEntry, id: string, startingAfter: number | undefined) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const found = yield* find(tenant, entry.id, id, now)
        if (Option.isNone(found)) return Option.none()
        const row = found.value
        if (!row.background) {
          return yield* refused("stream", "only background responses can be streamed again; retrieve this one without stream=true", "invalid_value")
        }
        if (row.status === "cancelled") return yield* refused("stream", "Cannot stream a cancelled response.", "invalid_value")
        let source: Stream.Stream<Responses.ResponseEvent, Responses.UpstreamError>
        if (row.mode === "live") {
          if (Option.isNone(live) || live.value.resume === undefined) {
            return yield* refused("stream", "this gateway cannot stream responses of this vendor again; retrieve it without stream=true", "unsupported")
          }
          source = yield* live.value.resume(row.id, startingAfter).pipe(
            Effect.catchTag("ResponseNotFound", () =>
              refused("stream", "the vendor no longer keeps this response's events; retrieve it without stream=true", "stream_unavailable"))
          )
        } else {
          const final = JSON.parse(row.sandboxFinal ?? row.body) as Responses.ResponseObject
          source = Stream.fromIterable(Sandbox.events(final).filter((e) => startingAfter === undefined || e.sequence_number > startingAfter))
        }
        let lastSequence = startingAfter ?? -1
        const events = source.pipe(
          Stream.tap((event) => {
            lastSequence = event.sequence_number
            const response = Responses.responseOf(event)
            return response !== undefined && Responses.isTerminalEvent(event) ? finishFromStream(tenant, entry, response) : Effect.void
          }),
          Stream.catchAll((error) => errorEvent(error, lastSequence))
        )
        return Option.some({ mode: row.mode, events })
      })

    const { runOnce, loop } = poller
    return { mode, create, stream, retrieve, cancel, remove, inputItems, resume, runOnce, loop, owner } satisfies ResponsesApi
  })

/** The model responses surface of the vendor list: the first vendor whose manifest has one. */
const surface: NonNullable<VendorManifest.VendorManifest<HttpClient.HttpClient>["responses"]> = List.manifests.flatMap((m) => (m.responses === undefined ? [] : [m.responses]))[0] ?? {
  live: Effect.succeed(Option.none()),
  sandbox: { newId: () => `resp_${randomUUID().replaceAll("-", "")}`, respond: () => { throw new Error("no vendor serves model responses") }, unfinished: (r) => r, events: () => [] }
}

/** The service from the environment: live when the responses vendor's variables are set. */
export const layer: Layer.Layer<
  ResponsesService,
  ConfigError.ConfigError,
  HttpClient.HttpClient | Settings | Store.ResponseStore | SqlClient.SqlClient | AnswerRows.AnswerRows
> = Layer.scoped(
  ResponsesService,
  Effect.flatMap(surface.live, (live) => make(live))
)

/**
 * Runs the poller for the lifetime of the layer: kept responses that have not finished are
 * refreshed until they do, and expired ones deleted. Leases left by a previous run of an embedded
 * database are released first.
 */
export const layerWorker = Layer.scopedDiscard(Effect.gen(function*() {
  const service = yield* ResponsesService
  const store = yield* Store.ResponseStore
  const released = yield* store.releaseAllLeasesIfEmbedded.pipe(Effect.orElseSucceed(() => 0))
  if (released > 0) yield* Effect.logInfo(`resuming ${released} kept response(s) left in flight by the previous run`)
  // Runs after the loop is interrupted: another replica refreshes this one's responses at once.
  yield* Effect.addFinalizer(() =>
    store.releaseLeasesOf(service.owner).pipe(
      Effect.catchAllCause((cause) => Effect.logWarning("could not release kept-response leases at shutdown", cause))
    ))
  yield* Effect.forkScoped(service.loop)
}))

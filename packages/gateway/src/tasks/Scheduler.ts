/**
 * The workers: claim due tasks with a lease, submit each exactly once, poll at the entry's cadence,
 * mirror results, and finish every task — completed, failed, or failed by its deadline. Any number
 * of replicas run this loop against one database; leases and compare-and-set updates keep one
 * owner per task, and an expired lease (a dead replica) is simply claimed again.
 */
import type { SqlError } from "@effect/sql/SqlError"
import { Errors, TaskInfo, VendorAdapter } from "@genway/core"
import type { ModelEntry } from "@genway/core"
import { Registry } from "@genway/registry"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import * as Stream from "effect/Stream"
import { randomUUID } from "node:crypto"
import * as Cadence from "../platform/Cadence.js"
import { Settings } from "../platform/Config.js"
import { MediaStore, type Written } from "../platform/MediaStore.js"
import * as TaskBodies from "./Bodies.js"
import * as Hand from "../platform/Hand.js"
import * as Lease from "./Lease.js"
import * as Progress from "./Progress.js"
import * as WorkPool from "../platform/WorkPool.js"
import { type ResultItem, type Task, type TaskPatch, TaskStore } from "./Store.js"
import { Vendors } from "../vendors/Vendors.js"
import * as TaskMetrics from "../observability/TaskMetrics.js"
import { spanned } from "../observability/Request.js"

/**
 * How long a claimed task belongs to this worker before others may take it over. Each step is
 * one vendor call (or one result mirror); while a submit or a mirror runs, a heartbeat renews the
 * lease every `heartbeatMs` (see `Lease.guarded`), so a replica that dies frees its tasks within
 * `leaseMs` whatever it was doing, and one that lost its lease stops the step before its next side
 * effect. Polls and reconcile lookups read only: their outcome is written by compare-and-set on the
 * row's version, so one that outlived its lease writes nothing; they run without a heartbeat.
 */
export const leaseMs = 30_000

/** How often a running step renews its lease. */
export const heartbeatMs = 10_000

/** Idle wait between claims when nothing woke the loop. */
export const idleMs = 200

/**
 * A task a poll found still running stays in this worker's hand (no write) when its next poll
 * starts at least this long before its lease runs out; otherwise its lease is renewed first (see
 * `renewable`), or, when even a renewed lease would not last that long, it is written back (its
 * next poll time, its lease given up) for whichever worker claims it then. See `keep`.
 */
export const keepMarginMs = 10_000

/**
 * Most memory one worker's hand holds, counted as each task's stored request plus 1 KB for the
 * rest of its row; past it, a poll writes its task back (its lease given up).
 */
export const maxHandBytes = 32 * 1024 * 1024

/** The hand's bound, `maxHandBytes` unless provided otherwise (tests, an embedding program). */
export class MaxHandBytes extends Context.Reference<MaxHandBytes>()("@genway/gateway/tasks/MaxHandBytes", {
  defaultValue: () => maxHandBytes
}) {}

/** What a held task counts towards `MaxHandBytes`: its stored request (UTF-16) and 1 KB. */
export const heldBytes = (task: Task) => 1024 + 2 * task.request.length

/**
 * A held task taken up with less lease than this left is not run by this worker (its lease runs
 * out and any worker claims it afresh): a pool too busy to take it up on time would otherwise
 * poll it past its lease, while another worker may have claimed it too.
 */
const staleInHandMs = keepMarginMs / 2

const millis = (d: Duration.DurationInput) => Duration.toMillis(Duration.decode(d))

/** Exponential back-off with jitter, never shorter than the vendor's hint (see `Cadence`). */
export const backoffMs = Cadence.backoffMs

const failure = (code: number, title: string, detail: string) => new TaskInfo.TaskError({ code, title, detail })

/** One item of a mirrored result: a vendor URL kept as is, or a copy in the media store (recorded on completion). */
type Mirrored = { readonly url: string } | Written

const isCopy = (m: Mirrored): m is Written => "key" in m

const lostSubmit = failure(
  TaskInfo.TaskErrorCode.ExecutionError,
  Errors.titles[3001],
  "the vendor's answer to the submission was lost and it offers no way to look the task up; " +
    "the task was not resubmitted, to avoid a second job"
)

const make = Effect.gen(function*() {
  const store = yield* TaskStore
  const media = yield* MediaStore
  const vendors = yield* Vendors
  const settings = yield* Settings
  const registry = yield* Registry.Registry
  const progressWriter = yield* Progress.ProgressWriter
  const entries = Registry.indexById(registry.entries)
  const owner = `worker-${randomUUID()}`
  const signal = yield* Queue.sliding<void>(1)
  /** The tasks this worker polls again under the lease it holds, by when each is next due. */
  const hand = Hand.make<Task>()
  const handBytes = yield* MaxHandBytes

  /**
   * Keeps `task`, found still running in the same state, for its next poll at `at` without
   * writing it (only a progress figure is written, see `apply`), when this worker's lease on it
   * lasts until `keepMarginMs` past then: the database still holds it leased (so no other worker
   * claims it), at the version this worker last read (so whatever this worker writes next, by
   * compare-and-set, still applies — and fails, as before, if the task was cancelled meanwhile).
   * A poll is a read: at a 5 s cadence a task is polled four times under one lease, then the lease
   * alone is renewed (`renewAndKeep`), instead of the task being claimed and written back each
   * time. Whatever ends the worker (a crash, a stop) ends its hand; its leases run out or are
   * released (the held tasks written back), and the tasks are claimed again, as before.
   * `current` is the time now (a slow poll may have ended past `at`).
   */
  const keep = (task: Task, at: number, current: number): Option.Option<Task> => {
    if (!holdable(task, task.leaseUntil, at, current)) return Option.none()
    const kept: Task = { ...task, nextRunAt: at }
    hand.add(kept, at, heldBytes(task))
    return Option.some(kept)
  }

  /** Whether `task` can be held for its poll at `at` under this worker's lease ending at `leaseUntil`. */
  const holdable = (task: Task, leaseUntil: number | null, at: number, current: number) =>
    task.leaseOwner === owner && task.leaseUntil !== null && leaseUntil !== null &&
    Math.max(at, current) + keepMarginMs <= leaseUntil && hand.weight() + heldBytes(task) <= handBytes

  /**
   * Whether `task`, which `keep` refused, is kept once its lease is renewed: it is this worker's,
   * the hand has room for it, and a lease of `leaseMs` from now lasts `keepMarginMs` past its next
   * poll at `at` (a cadence longer than that is written back, as before). Renewing is one row of a
   * batched update (`TaskStore.renewHeld`), where writing the task back and claiming it again
   * cost two, the claim reading the whole row back: with 10,000 tasks in flight at a 5 s cadence
   * that cycle came every 20 s for each task (bench/JOURNAL.md, "Leases renewed in hand").
   * A task stays with the worker that claimed it while the worker lives; at shutdown its hand is
   * written back (`writeBackHand`), and a worker that dies leaves its leases to run out.
   */
  const renewable = (task: Task, at: number, current: number) => holdable(task, current + leaseMs, at, current)

  /**
   * Renews the lease on `task` and keeps it for its poll at `at`; `None` (nothing written) when the
   * lease is gone or the task changed meanwhile (a cancel): another worker's or nobody's to poll.
   * A renewed task the hand cannot take after all (it filled meanwhile) is written back.
   */
  const renewAndKeep = (task: Task, at: number) =>
    Effect.flatMap(Clock.currentTimeMillis, (current) =>
      Effect.flatMap(store.renewHeld(task, owner, current + leaseMs), (renewed) => {
        if (Option.isNone(renewed)) return Effect.succeed(Option.none<Task>())
        return Effect.flatMap(Clock.currentTimeMillis, (after) => {
          const kept = keep(renewed.value, at, after)
          return Option.isSome(kept) ? Effect.succeed(kept) : store.reschedule(renewed.value, at)
        })
      }))

  /**
   * Runs one vendor call (or mirror) of `task` while renewing its lease. `task` is the row as this
   * worker last wrote it; the step makes no write while `work` runs, so its version is current.
   */
  const guarded = <A, E, R>(task: Task, work: Effect.Effect<A, E, R>) =>
    Lease.guarded({
      id: task.id,
      leaseMs,
      heartbeatMs,
      heldUntil: task.leaseUntil ?? 0,
      renew: (until) => store.renewLease(task, owner, until)
    }, work)

  /** The step stops here: the task is another worker's (or cancelled) now, and nothing is written. */
  const leaseLost = (task: Task, e: Lease.LeaseLost) =>
    Effect.logWarning(`stopped working on a task: ${e.reason}`).pipe(Effect.annotateLogs("task", task.id))

  const pollDelay = (entry: ModelEntry.ModelEntry, hint: Duration.DurationInput | undefined, first: boolean) =>
    Cadence.pollDelay(entry, { override: settings.pollIntervalMs, hint, first })

  const finish = (task: Task, now: number, patch: TaskPatch, note: string, also?: Effect.Effect<unknown, SqlError>) =>
    Effect.tap(
      store.update(task, { ...patch, finishedAt: now, leaseOwner: null, leaseUntil: null }, now, note, also),
      // Only the worker whose update applied cleans up: a stale one must not take inputs away.
      (applied) => (Option.isSome(applied) && TaskBodies.hasSpool(task.request) ? media.dropSpool(task.id) : Effect.void)
    )

  const fail = (task: Task, now: number, error: TaskInfo.TaskError) =>
    finish(task, now, { status: "failed", error }, `failed: ${error.code}`)

  const retryLater = (task: Task, now: number, reason: string, hint: Duration.DurationInput | undefined, patch: TaskPatch = {}) =>
    Effect.flatMap(Cadence.backoff(task.attempts, hint), (delay) => store.update(
      task,
      {
        ...patch,
        attempts: task.attempts + 1,
        nextRunAt: now + delay,
        leaseOwner: null,
        leaseUntil: null
      },
      now,
      `retry: ${reason}`
    ))

  const accepted = (task: Task, entry: ModelEntry.ModelEntry, now: number, s: VendorAdapter.Submitted) =>
    Effect.flatMap(pollDelay(entry, s.pollAfter, true), (delay) => store.update(
      task,
      {
        status: s.status,
        submitState: "submitted",
        upstreamRef: s.ref,
        submittedAt: now,
        attempts: 0,
        nextRunAt: now + delay,
        leaseOwner: null,
        leaseUntil: null
      },
      now,
      "submitted"
    ))

  /**
   * The result's items: a vendor URL kept as is, or an object copied to the media store. The copies
   * are written, not yet recorded: their rows go in with the update that completes the task (see
   * `apply`), so a task is never completed without them, and rows of a task that did not complete
   * are never written. (A copy whose completion never commits — a crash, then a failure — stays in
   * the store without a row, as a partial temporary file would; a retried mirror replaces it.)
   */
  const mirror = (task: Task, entry: ModelEntry.ModelEntry, adapter: VendorAdapter.VendorAdapter, sources: ReadonlyArray<VendorAdapter.MediaSource>, now: number) =>
    Effect.forEach(sources, (source, index) => {
      if (source._tag === "Url" && !entry.mirror) return Effect.succeed<Mirrored>({ url: source.url })
      const expiresAt = entry.retention === null ? null : now + millis(entry.retention)
      return Effect.flatMap(adapter.download(source), (d): Effect.Effect<Mirrored, unknown> =>
        media.write(task.id, index, d.contentType, d.bytes ?? (d.body as Stream.Stream<Uint8Array, unknown>), expiresAt))
    }).pipe((e) => spanned(e, "task.mirror", { captureStackTrace: false, attributes: { "genway.task_id": task.id, "genway.model": entry.id } }))

  /**
   * After a copy whose task changed meanwhile: the copies go only if the task ended without a
   * result (a cancel, a failure). Copies are keyed by task and index, so a task another worker has
   * taken over (or already completed) uses these very keys for its own copies, which must stay.
   */
  const dropOrphanedCopies = (id: string, result: ReadonlyArray<ResultItem>) =>
    Effect.flatMap(store.findById(id), (now) =>
      Option.isSome(now) && now.value.status !== "failed"
        ? Effect.void
        : media.discard(result.flatMap((item) => ("media" in item ? [item.media] : []))))

  const apply = (task: Task, entry: ModelEntry.ModelEntry, adapter: VendorAdapter.VendorAdapter, now: number, outcome: VendorAdapter.PollOutcome) => {
    switch (outcome._tag) {
      case "Running": {
        const progress = outcome.progress
        const write = Effect.flatMap(pollDelay(entry, outcome.pollAfter, false), (delay) => {
          const status = outcome.status === "pending" && task.status === "processing" ? "processing" : outcome.status
          if (status !== task.status) {
            return store.update(task, { status, attempts: 0, nextRunAt: now + delay, leaseOwner: null, leaseUntil: null }, now)
          }
          // Still where it was (most polls): kept in hand under the lease (renewed first when it
          // runs short), or else written with the other polls ending now.
          return Effect.flatMap(Clock.currentTimeMillis, (current) => {
            const kept = keep(task, now + delay, current)
            if (Option.isSome(kept)) return Effect.succeed(kept)
            return renewable(task, now + delay, current) ? renewAndKeep(task, now + delay) : store.reschedule(task, now + delay)
          })
        })
        // Progress only from a poll whose write applied, or whose task is kept under this worker's
        // lease: a poll that outlived its lease writes nothing. (A task cancelled while kept may
        // get its progress row written once more; progress is shown only while a task runs.) The
        // figure is written behind the poll, with the others of the same moment (tasks/Progress.ts).
        return progress === undefined ? write : Effect.tap(write, (applied) =>
          Option.isSome(applied) ? progressWriter.record(task.id, progress, now) : Effect.void)
      }
      case "Failed":
        return fail(task, now, outcome.error)
      case "Completed":
        if (outcome.media.length === 0) {
          return fail(task, now, failure(3001, Errors.titles[3001], "the vendor reported success without any result"))
        }
        return Effect.gen(function*() {
          // Media is written to temporary files renamed into place, so a mirror cut midway (lease
          // lost, crash) leaves no partial object; the next owner mirrors again from the start.
          return yield* guarded(task, mirror(task, entry, adapter, outcome.media, now)).pipe(
            Effect.matchEffect({
              onFailure: (e) => (e instanceof Lease.LeaseLost ? Effect.as(leaseLost(task, e), Option.none<Task>()) : onError(task, now, e, false)),
              onSuccess: (mirrored) => {
                const result = mirrored.map((m): ResultItem => (isCopy(m) ? { media: m.key } : m))
                const written = mirrored.filter(isCopy)
                return finish(
                  task,
                  now,
                  { status: "completed", result, reportedSeconds: outcome.reportedSeconds ?? null },
                  `completed with ${result.length} ${entry.result ?? "items"}`,
                  written.length === 0 ? undefined : media.record(written)
                ).pipe(
                  Effect.tap((done) => (Option.isNone(done) ? dropOrphanedCopies(task.id, result) : Effect.void))
                )
              }
            })
          )
        })
    }
  }

  const onError = (task: Task, now: number, error: VendorAdapter.AdapterError | unknown, duringSubmit: boolean) => {
    if (error instanceof VendorAdapter.Rejected) return fail(task, now, error.error)
    if (error instanceof VendorAdapter.Retryable) {
      return retryLater(task, now, error.reason, error.retryAfter, duringSubmit ? { submitState: "new" } : {})
    }
    if (error instanceof VendorAdapter.OutcomeUnknown) {
      // The submit may have reached the vendor: keep "submitting" so the next step reconciles.
      return retryLater(task, now, error.reason, undefined)
    }
    return Effect.zipRight(
      Effect.logError("unexpected error while working on a task", error).pipe(Effect.annotateLogs("task", task.id)),
      retryLater(task, now, "internal error", undefined)
    )
  }

  const submit = (task: Task, entry: ModelEntry.ModelEntry, adapter: VendorAdapter.VendorAdapter, upstream: VendorAdapter.UpstreamTask, now: number) =>
    Effect.gen(function*() {
      // Record the intent first: after a crash, "submitting" tells the next owner to reconcile.
      const at = yield* Clock.currentTimeMillis
      const marked = yield* store.update(task, { submitState: "submitting", leaseUntil: at + leaseMs }, now)
      if (Option.isNone(marked)) return
      yield* guarded(marked.value, adapter.submit(upstream)).pipe(
        Effect.matchEffect({
          onSuccess: (s) => accepted(marked.value, entry, now, s),
          // Cut midway: the task stays "submitting", so its next owner reconciles (or fails it with 3001).
          onFailure: (e) => (e instanceof Lease.LeaseLost ? leaseLost(marked.value, e) : onError(marked.value, now, e, true))
        })
      )
    })

  /** One step of one claimed task. */
  const step = (task: Task) =>
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const entry = entries.get(task.entryId)
      if (entry === undefined) {
        return yield* fail(task, now, failure(3001, Errors.titles[3001], `model ${task.entryId} is no longer served by this gateway`))
      }
      if (now >= task.deadlineAt) {
        return yield* fail(
          task,
          now,
          failure(3001, Errors.titles[3001], `no result before the task deadline (${Duration.format(Duration.decode(entry.poll.deadline))})`)
        )
      }
      const adapter = vendors.adapter(task.vendor, task.mode)
      if (adapter === undefined) {
        return yield* retryLater(task, now, `vendor ${task.vendor} is not configured for live tasks`, "1 minute")
      }
      const body = yield* TaskBodies.fromStored(task.request, media.unspool)
      const upstream: VendorAdapter.UpstreamTask = {
        taskId: task.id,
        entry,
        body,
        upstreamModel: task.upstreamModel,
        hints: task.hints,
        ...(task.upstreamRef !== null ? { upstreamRef: task.upstreamRef } : {}),
        ...(task.submittedAt !== null ? { submittedAt: task.submittedAt } : {})
      }
      switch (task.submitState) {
        case "new":
          return yield* submit(task, entry, adapter, upstream, now)
        case "submitting": {
          if (adapter.reconcile === undefined) return yield* fail(task, now, lostSubmit)
          // A lookup only, under the claim's lease: if it outlives the lease, the writes below
          // (compare-and-set, `submit` included) find the row changed and stop.
          const found = yield* Effect.either(adapter.reconcile(upstream))
          if (found._tag === "Left") return yield* onError(task, now, found.left, false)
          if (found.right !== undefined) return yield* accepted(task, entry, now, found.right)
          // The vendor never saw it: submitting now cannot create a second job.
          return yield* submit(task, entry, adapter, upstream, now)
        }
        case "submitted": {
          // A read only (see `leaseMs`): its outcome is written by compare-and-set, the mirror guarded.
          const outcome = yield* Effect.either(adapter.poll({ ...upstream, upstreamRef: task.upstreamRef! }))
          if (outcome._tag === "Left") return yield* onError(task, now, outcome.left, false)
          return yield* apply(task, entry, adapter, now, outcome.right).pipe(
            Effect.catchAll((e) => onError(task, now, e, false))
          )
        }
      }
    }).pipe(
      Effect.catchAllCause((cause) =>
        Effect.logError("task step failed; the lease will expire and the task will be retried", cause).pipe(
          Effect.annotateLogs("task", task.id)
        )
      ),
      (e) => spanned(e, "task.step", { root: true, captureStackTrace: false, attributes: { "genway.task_id": task.id, "genway.model": task.entryId } })
    )

  /** Up to `limit` held tasks due at `now`, less those whose lease is nearly gone (see `staleInHandMs`). */
  const takeHeld = (now: number, limit: number): Array<Task> =>
    hand.takeDue(now, limit).filter((t) => t.leaseUntil! - now >= staleInHandMs)

  /**
   * Takes up to `limit` due tasks: held ones and ones claimed from the database under this
   * worker's lease; records how late each was taken up. The database is asked for at least a
   * quarter of `limit`, so that new and orphaned tasks are not held back behind a busy hand; what
   * it does not fill, the hand does. When the database fails, what was in hand still runs.
   */
  const claim = (limit: number) =>
    Effect.flatMap(Clock.currentTimeMillis, (now) => {
      const first = hand.size() === 0 ? [] : takeHeld(now, limit - Math.ceil(limit / 4))
      const claimed = store.claimDue(owner, now, leaseMs, limit - first.length)
      const fromDatabase = first.length === 0 ? claimed : Effect.catchAllCause(claimed, (cause) =>
        Effect.as(Effect.logError("claiming due tasks failed", cause), [] as ReadonlyArray<Task>))
      return Effect.map(fromDatabase, (rows) => {
        const rest = hand.size() === 0 ? [] : takeHeld(now, limit - first.length - rows.length)
        const all = [...first, ...rows, ...rest]
        TaskMetrics.claimed(all, now)
        return all
      })
    })

  /**
   * At shutdown: each held task is written back with its next poll time (its lease given up),
   * so the replica that takes it polls it then, not at once with every other held task.
   */
  const writeBackHand = Effect.suspend(() =>
    Effect.forEach(hand.takeAll(), (task) => store.reschedule(task, task.nextRunAt), { concurrency: "unbounded", discard: true }))

  /** Claims one batch of due tasks and runs it to the end (tests drive the workers with it); returns how many were claimed. */
  const runOnce = Effect.flatMap(claim(settings.workerBatch), (claimed) =>
    Effect.as(Effect.forEach(claimed, step, { concurrency: settings.workerConcurrency, discard: true }), claimed.length))

  /**
   * Runs steps until interrupted, refilled as they finish (see `WorkPool`): a slow vendor call
   * holds its own slot only, not the tasks claimed with it.
   */
  const loop = WorkPool.run({
    slots: settings.workerConcurrency,
    batch: settings.workerBatch,
    claim: (limit) => claim(limit).pipe(Effect.catchAllCause((cause) => Effect.as(Effect.logError("claiming due tasks failed", cause), []))),
    run: step,
    wake: Queue.take(signal),
    idleMs,
    coalesceMs: WorkPool.coalesceMs
  })

  /** Wakes the loop now (after a create). */
  const wake = Queue.offer(signal, undefined).pipe(Effect.asVoid)

  return { runOnce, loop, wake, owner, writeBackHand } as const
})

/** The scheduler. */
export class Scheduler extends Context.Tag("@genway/gateway/Scheduler")<Scheduler, Effect.Effect.Success<typeof make>>() {}

/** The scheduler, without starting its loop. */
export const layer = Layer.effect(Scheduler, make)

/** Runs the scheduler loop for the lifetime of the layer. */
export const layerWorker = Layer.scopedDiscard(Effect.gen(function*() {
  const scheduler = yield* Scheduler
  const store = yield* TaskStore
  const released = yield* store.releaseAllLeasesIfEmbedded
  if (released > 0) yield* Effect.logInfo(`resuming ${released} task(s) left in flight by the previous run`)
  // Runs after the loop is interrupted (finalizers run in reverse): this process's tasks are free
  // for another replica (or the next start) at once, not when their leases expire; the ones it
  // held between polls keep their next poll time.
  yield* Effect.addFinalizer(() =>
    scheduler.writeBackHand.pipe(
      Effect.catchAllCause((cause) => Effect.logWarning("could not write back held tasks at shutdown", cause)),
      Effect.zipRight(store.releaseLeasesOf(scheduler.owner)),
      Effect.catchAllCause((cause) => Effect.logWarning("could not release task leases at shutdown", cause))
    ))
  yield* Effect.forkScoped(scheduler.loop)
}))

/**
 * The contract every task adapter keeps, as test cases each vendor runs against its own emulator
 * with its own fault switches: a 429 is retryable with its hint and creates nothing; a 503 and a
 * malformed answer are retryable; a task state the vendor never documented keeps the task running
 * and is logged; and no error text — submit refusal, failed task, poll refusal — carries a secret
 * or the base URL, even when the vendor echoes them. The adapter is built the way the gateway
 * builds it (the vendor's manifest, from its variables), so the shared scrubbing is what is tested.
 */
import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import type * as HttpClient from "@effect/platform/HttpClient"
import * as assert from "node:assert/strict"
import type { VendorAdapter } from "@genway/core"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Logger from "effect/Logger"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"

/** One case, to run as `it.scoped(name, () => run)`. */
export interface ContractCase {
  readonly name: string
  readonly run: Effect.Effect<void, unknown, Scope.Scope>
}

/** A vendor's emulator and adapter, as the cases need them. */
export interface Subject<F> {
  /** Built from the vendor's manifest with the emulator's base URL and secrets as its variables. */
  readonly adapter: VendorAdapter.VendorAdapter
  readonly inject: (kind: "submit" | "poll", fault: F, times?: number) => Effect.Effect<void>
  readonly acceptedSubmits: Effect.Effect<number>
  /** Values no error text may contain: the secrets and the base URL. */
  readonly hidden: ReadonlyArray<string>
}

/** What the cases need of an emulator. */
export interface Emulated<F> {
  readonly baseUrl: string
  readonly inject: (kind: "submit" | "poll", fault: F, times?: number) => Effect.Effect<void>
  readonly acceptedSubmits: Effect.Effect<number>
}

/**
 * A subject from a fresh emulator and the vendor's live task surface (its manifest's `tasks`),
 * read with `variables(emulator)` as the only environment; every variable's value is hidden.
 */
export const subject = <F, E extends Emulated<F>>(
  emulator: Effect.Effect<E, never, Scope.Scope>,
  tasks: Effect.Effect<Option.Option<VendorAdapter.VendorAdapter>, unknown, HttpClient.HttpClient>,
  variables: (emulator: E) => Readonly<Record<string, string>>
): Effect.Effect<Subject<F>, unknown, Scope.Scope> =>
  Effect.gen(function*() {
    const e = yield* emulator
    const env = variables(e)
    const built = yield* Effect.withConfigProvider(tasks, ConfigProvider.fromMap(new Map(Object.entries(env))))
    if (Option.isNone(built)) return yield* Effect.die(new Error("the vendor's variables did not make it live"))
    return {
      adapter: built.value,
      inject: (kind: "submit" | "poll", fault: F, times?: number) => e.inject(kind, fault, times),
      acceptedSubmits: e.acceptedSubmits,
      hidden: [...Object.values(env), new URL(e.baseUrl).host]
    }
  }).pipe(Effect.provide(FetchHttpClient.layer))

/** The vendor's fault switches. */
export interface Faults<F> {
  /** A 429 with a `Retry-After`-like hint of `seconds`. */
  readonly rateLimited: (seconds: number) => F
  /** A 503. */
  readonly unavailable: F
  /** A 503 with a `Retry-After`-like hint of `seconds`, for vendors that give one. */
  readonly unavailableFor?: (seconds: number) => F
  /** A 500 in the vendor's error envelope. */
  readonly serverError: F
  /** A 200 whose body is cut off. */
  readonly malformedJson: F
  /** A poll reporting a state the vendor never documented. */
  readonly unknownState: F
  /** An error answer (4xx) to a submit whose message is `text`. */
  readonly refuse: (text: string) => F
  /** A poll finding the task failed with `text` as the vendor's message. */
  readonly failTask: (text: string) => F
  /** The connection cut without an answer; with `afterAccept`, a submit is accepted (and counted) first. */
  readonly drop: (afterAccept: boolean) => F
}

/** What the cases are about. */
export interface ContractOptions<F> {
  readonly setup: Effect.Effect<Subject<F>, unknown, Scope.Scope>
  /** A valid task for the vendor. */
  readonly task: () => VendorAdapter.UpstreamTask
  readonly faults: Faults<F>
}

const assertClean = (value: unknown, hidden: ReadonlyArray<string>) => {
  const text = `${JSON.stringify(value)} ${String(value)}`
  for (const h of hidden) assert.ok(!text.includes(h), `error text carries a hidden value: ${text.slice(0, 300)}`)
}

const echo = (hidden: ReadonlyArray<string>) => `echo: ${hidden.map((h) => `${h}/v1/x?key=${h}`).join(" ")} end`

/** The shared cases. */
export const cases = <F>(options: ContractOptions<F>): ReadonlyArray<ContractCase> => {
  const { faults, setup, task } = options
  const submitted = (subject: Subject<F>) =>
    Effect.map(Effect.sync(task), (t) => t).pipe(
      Effect.flatMap((t) => Effect.map(subject.adapter.submit(t), (s) => ({ ...t, upstreamRef: s.ref })))
    )
  return [
    {
      name: "a 429 on submit is retryable with the vendor's hint and creates nothing",
      run: Effect.gen(function*() {
        const subject = yield* setup
        yield* subject.inject("submit", faults.rateLimited(7))
        const error = yield* Effect.flip(subject.adapter.submit(task()))
        assert.equal(error._tag, "Retryable")
        assert.ok(error._tag === "Retryable" && error.retryAfter !== undefined, "the hint is kept")
        if (error._tag === "Retryable" && error.retryAfter !== undefined) {
          assert.equal(Math.round(Duration.toSeconds(Duration.decode(error.retryAfter))), 7)
        }
        assert.equal(yield* subject.acceptedSubmits, 0)
      })
    },
    {
      name: "a 503 on submit is retryable and creates nothing",
      run: Effect.gen(function*() {
        const subject = yield* setup
        yield* subject.inject("submit", faults.unavailable)
        const error = yield* Effect.flip(subject.adapter.submit(task()))
        assert.equal(error._tag, "Retryable")
        assert.equal(yield* subject.acceptedSubmits, 0)
      })
    },
    {
      name: "a 503 (with its hint where the vendor gives one), a 500 or a malformed answer on poll is retryable; the submit is not resent",
      run: Effect.gen(function*() {
        const subject = yield* setup
        const t = yield* submitted(subject)
        yield* subject.inject("poll", faults.unavailable)
        assert.equal((yield* Effect.flip(subject.adapter.poll(t)))._tag, "Retryable")
        if (faults.unavailableFor !== undefined) {
          yield* subject.inject("poll", faults.unavailableFor(3))
          const busy = yield* Effect.flip(subject.adapter.poll(t))
          assert.ok(busy._tag === "Retryable" && busy.retryAfter !== undefined, "the hint is kept")
          if (busy._tag === "Retryable" && busy.retryAfter !== undefined) {
            assert.equal(Math.round(Duration.toSeconds(Duration.decode(busy.retryAfter))), 3)
          }
        }
        yield* subject.inject("poll", faults.serverError)
        assert.equal((yield* Effect.flip(subject.adapter.poll(t)))._tag, "Retryable")
        yield* subject.inject("poll", faults.malformedJson)
        assert.equal((yield* Effect.flip(subject.adapter.poll(t)))._tag, "Retryable")
        assert.equal(yield* subject.acceptedSubmits, 1)
      })
    },
    {
      name: "a create accepted but answered by a cut connection or broken JSON is OutcomeUnknown, sent once",
      run: Effect.gen(function*() {
        const subject = yield* setup
        yield* subject.inject("submit", faults.drop(true))
        assert.equal((yield* Effect.flip(subject.adapter.submit(task())))._tag, "OutcomeUnknown")
        assert.equal(yield* subject.acceptedSubmits, 1)
        yield* subject.inject("submit", faults.malformedJson)
        assert.equal((yield* Effect.flip(subject.adapter.submit(task())))._tag, "OutcomeUnknown")
        assert.equal(yield* subject.acceptedSubmits, 2)
      })
    },
    {
      name: "a poll whose connection is cut is retryable",
      run: Effect.gen(function*() {
        const subject = yield* setup
        const t = yield* submitted(subject)
        yield* subject.inject("poll", faults.drop(false))
        assert.equal((yield* Effect.flip(subject.adapter.poll(t)))._tag, "Retryable")
      })
    },
    {
      name: "an unknown vendor state keeps the task running and is logged",
      run: Effect.gen(function*() {
        const subject = yield* setup
        const t = yield* submitted(subject)
        yield* subject.inject("poll", faults.unknownState)
        const logs: Array<string> = []
        const logger = Logger.make(({ logLevel, message }) => void logs.push(`${logLevel.label} ${String(message)}`))
        const outcome = yield* subject.adapter.poll(t).pipe(Effect.provide(Logger.replace(Logger.defaultLogger, logger)))
        assert.equal(outcome._tag, "Running")
        assert.ok(logs.some((l) => l.startsWith("WARN") && /unknown/i.test(l)), `logged: ${logs.join(" | ")}`)
      })
    },
    {
      name: "no error text carries a secret or the base URL, even when the vendor echoes them",
      run: Effect.gen(function*() {
        const subject = yield* setup
        const text = echo(subject.hidden)
        yield* subject.inject("submit", faults.refuse(text))
        const refused = yield* Effect.flip(subject.adapter.submit(task()))
        assert.equal(refused._tag, "Rejected")
        assertClean(refused, subject.hidden)

        const t = yield* submitted(subject)
        yield* subject.inject("poll", faults.failTask(text))
        const failed = yield* subject.adapter.poll(t)
        assert.equal(failed._tag, "Failed")
        assertClean(failed, subject.hidden)

        yield* subject.inject("poll", faults.refuse(text))
        assertClean(yield* Effect.either(subject.adapter.poll(t)), subject.hidden)
        yield* subject.inject("submit", faults.rateLimited(1))
        assertClean(yield* Effect.flip(subject.adapter.submit(task())), subject.hidden)
      })
    }
  ]
}

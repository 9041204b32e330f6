/**
 * The all-or-none contract of `VendorConfig.allOrNone`, as test cases each adapter runs against
 * its own variables: none set (or all blank) is `None`; a complete group parses and keeps its
 * secrets redacted; each missing variable is named; malformed base URLs are named; no error ever
 * echoes a secret or URL credentials. Independent of the test runner: each case is an Effect that
 * dies with an assertion error.
 */
import * as assert from "node:assert/strict"
import type * as Config from "effect/Config"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"

/** One case, to run as `it.effect(name, () => run)`. */
export interface ConfigCase {
  readonly name: string
  readonly run: Effect.Effect<void>
}

/** What the cases are about. */
export interface ConfigCaseOptions<A> {
  /** The adapter's config. */
  readonly config: Config.Config<Option.Option<A>>
  /** The name of the base URL variable. */
  readonly baseUrl: string
  /** A complete, valid environment; every value but the base URL's is a secret. */
  readonly complete: Readonly<Record<string, string>>
  /** Checks the value read from `complete` (the vendor's own fields). */
  readonly expect: (value: A) => void
  /** More malformed base URLs to refuse, besides `malformedUrls`. */
  readonly malformed?: ReadonlyArray<string>
  /** More text no error and no shown value may contain, besides the secrets themselves. */
  readonly hidden?: ReadonlyArray<string>
}

/** Runs `effect` (a config, or anything reading one) with exactly the variables `env`. */
export const read = <A, E, R>(effect: Effect.Effect<A, E, R>, env: Readonly<Record<string, string>>): Effect.Effect<A, E, R> =>
  Effect.withConfigProvider(effect, ConfigProvider.fromMap(new Map(Object.entries(env))))

/** Malformed base URLs every adapter refuses (`pw` is the password that must not be echoed). */
export const malformedUrls = [
  "not a url",
  "ftp://api.example.test",
  "https://user:pw@api.example.test",
  "https://api.example.test/v1?a=1",
  "https://api.example.test/v1#top"
] as const

/** The standard cases for one adapter's variables. */
export const configCases = <A>(options: ConfigCaseOptions<A>): ReadonlyArray<ConfigCase> => {
  const names = Object.keys(options.complete)
  const secrets = [
    ...names.filter((name) => name !== options.baseUrl).map((name) => options.complete[name]!),
    ...(options.hidden ?? [])
  ]
  /** Reading `env` fails with an error that names `named` and shows no secret. */
  const refusal = (env: Readonly<Record<string, string>>, named: string) =>
    Effect.flip(read(options.config, env)).pipe(
      Effect.orDieWith(() => new assert.AssertionError({ message: "expected a ConfigError, but the variables were read" })),
      Effect.map((error) => {
        const text = String(error)
        assert.ok(text.includes(named), `the error names ${named}: ${text}`)
        for (const secret of secrets) assert.ok(!text.includes(secret), "the error does not echo a secret")
        assert.ok(!text.includes("pw"), "the error does not echo URL credentials")
      })
    )
  return [
    {
      name: "is None when no variable is set, or all are blank (sandboxed)",
      run: Effect.gen(function*() {
        assert.ok(Option.isNone(yield* Effect.orDie(read(options.config, {}))))
        for (const blank of [(i: number) => (i % 2 === 0 ? "" : " "), (i: number) => (i % 2 === 0 ? " " : "")]) {
          const env = Object.fromEntries(names.map((name, i) => [name, blank(i)]))
          assert.ok(Option.isNone(yield* Effect.orDie(read(options.config, env))), "blank values count as unset")
        }
      })
    },
    {
      name: "reads a complete group; its secrets stay redacted",
      run: Effect.gen(function*() {
        const value = yield* Effect.orDie(read(options.config, options.complete))
        assert.ok(Option.isSome(value))
        options.expect(value.value)
        const shown = `${JSON.stringify(value.value)} ${String(value.value)} ${
          Object.values(value.value as object).map(String).join(" ")
        }`
        for (const secret of secrets) assert.ok(!shown.includes(secret), "no secret shows in the value")
      })
    },
    {
      name: "names each missing variable when only some are set",
      run: Effect.forEach(
        names,
        (missing) => refusal(Object.fromEntries(Object.entries(options.complete).filter(([name]) => name !== missing)), missing),
        { discard: true }
      )
    },
    {
      name: "names the base URL variable when the URL is malformed",
      run: Effect.forEach(
        [...malformedUrls, ...(options.malformed ?? [])],
        (url) => refusal({ ...options.complete, [options.baseUrl]: url }, options.baseUrl),
        { discard: true }
      )
    }
  ]
}

import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Either from "effect/Either"
import { Server } from "../src/testing/index.js"

type Kind = "submit" | "poll"

type Fault = Server.TransportFault | { readonly _tag: "RateLimited" } | { readonly _tag: "FailTask" }

/**
 * A tiny task API: POST /tasks accepts, GET /tasks/:id answers; faults as every emulator has them,
 * each kind held back by `latency`.
 */
const emulatorWith = (latency: Server.Latency<Kind>) =>
  Effect.gen(function*() {
    let accepted = 0
    const recorder = new Server.Recorder<Kind, Fault>()
    const server = yield* Server.emulate(recorder, {
      classify: (method, path) =>
        method === "POST" && path === "/tasks" ? "submit" : method === "GET" && path.startsWith("/tasks/") ? "poll" : "other",
      refuse: (fault) => (fault._tag === "RateLimited" ? { _tag: "Json", status: 429, body: { code: "Throttled" } } : undefined),
      answer: {
        submit: (_request, fault) => {
          accepted++
          return { _tag: "Json", status: 200, body: { id: `t${accepted}`, failing: fault?._tag === "FailTask" } }
        },
        poll: (request) => ({ _tag: "Json", status: 200, body: { id: request.path.slice("/tasks/".length) } }),
        other: () => ({ _tag: "Json", status: 404, body: { code: "NotFound" } })
      }
    }, latency)
    return { ...server, recorder, accepted: () => accepted }
  })

const emulator = emulatorWith({})

const call = (origin: string, method: "GET" | "POST", path: string) =>
  Effect.flatMap(HttpClient.HttpClient, (client) =>
    client.execute(HttpClientRequest.make(method)(`${origin}${path}`)).pipe(
      Effect.flatMap((response) => Effect.map(response.text, (text) => ({ status: response.status, text }))),
      Effect.either
    ))

describe("Server.emulate", () => {
  it.scoped("logs every request with its kind, parsed body and lower-case headers", () =>
    Effect.gen(function*() {
      const emu = yield* emulator
      const client = yield* HttpClient.HttpClient
      yield* client.execute(
        HttpClientRequest.post(`${emu.origin}/tasks?x=1`).pipe(HttpClientRequest.setHeader("X-Custom", "v"), HttpClientRequest.bodyUnsafeJson({ a: 1 }))
      )
      yield* call(emu.origin, "GET", "/nowhere")
      const [create, other] = yield* emu.recorder.requests
      assert.strictEqual(create!.kind, "submit")
      assert.deepStrictEqual(create!.body, { a: 1 })
      assert.deepStrictEqual(create!.query, { x: "1" })
      assert.strictEqual(create!.headers["x-custom"], "v")
      assert.strictEqual(other!.kind, "other")
      assert.isUndefined(other!.body)
    }).pipe(Effect.provide(FetchHttpClient.layer)))

  it.scoped("faults apply to the next requests of their kind, in order", () =>
    Effect.gen(function*() {
      const emu = yield* emulator
      yield* emu.recorder.inject("submit", { _tag: "RateLimited" }, 2)
      yield* emu.recorder.inject("submit", { _tag: "FailTask" })
      const statuses = []
      for (let i = 0; i < 4; i++) {
        const r = yield* call(emu.origin, "POST", "/tasks")
        statuses.push(Either.isRight(r) ? r.right.status : 0)
      }
      assert.deepStrictEqual(statuses, [429, 429, 200, 200])
      assert.strictEqual(emu.accepted(), 2)
      const polled = yield* call(emu.origin, "GET", "/tasks/t1")
      assert.strictEqual(Either.isRight(polled) && polled.right.status, 200)
    }).pipe(Effect.provide(FetchHttpClient.layer)))

  it.scoped("Drop cuts the connection; with afterAccept the submit was accepted first", () =>
    Effect.gen(function*() {
      const emu = yield* emulator
      yield* emu.recorder.inject("submit", { _tag: "Drop" })
      assert.isTrue(Either.isLeft(yield* call(emu.origin, "POST", "/tasks")))
      assert.strictEqual(emu.accepted(), 0)
      yield* emu.recorder.inject("submit", { _tag: "Drop", afterAccept: true })
      assert.isTrue(Either.isLeft(yield* call(emu.origin, "POST", "/tasks")))
      assert.strictEqual(emu.accepted(), 1)
    }).pipe(Effect.provide(FetchHttpClient.layer)))

  it.scoped("MalformedJson answers 200 with a cut-off document, after accepting", () =>
    Effect.gen(function*() {
      const emu = yield* emulator
      yield* emu.recorder.inject("submit", { _tag: "MalformedJson" })
      const r = yield* call(emu.origin, "POST", "/tasks")
      assert.isTrue(Either.isRight(r))
      if (Either.isRight(r)) {
        assert.strictEqual(r.right.status, 200)
        assert.throws(() => JSON.parse(r.right.text))
      }
      assert.strictEqual(emu.accepted(), 1)
    }).pipe(Effect.provide(FetchHttpClient.layer)))

  it.live("Slow holds the request back in real time", () =>
    Effect.scoped(
      Effect.gen(function*() {
        const emu = yield* emulator
        yield* emu.recorder.inject("poll", { _tag: "Slow", delay: "150 millis" })
        const started = Date.now()
        const fiber = yield* Effect.fork(call(emu.origin, "GET", "/tasks/t9"))
        yield* emu.recorder.awaitRequests(1)
        const r = yield* Fiber.join(fiber)
        assert.isTrue(Either.isRight(r))
        assert.isAtLeast(Date.now() - started, 140)
      }).pipe(Effect.provide(FetchHttpClient.layer))
    ))
})

describe("Server.emulate latency", () => {
  it.live("holds every request of its kind, and acts on a held create only once the wait is over", () =>
    Effect.scoped(
      Effect.gen(function*() {
        const emu = yield* emulatorWith({ submit: "1 second" })
        const started = Date.now()
        const submit = yield* Effect.fork(call(emu.origin, "POST", "/tasks"))
        yield* emu.recorder.awaitRequests(1)
        // Another kind is not held: the poll is answered while the create still waits.
        const polled = yield* call(emu.origin, "GET", "/tasks/t0")
        assert.isTrue(Either.isRight(polled))
        assert.strictEqual(emu.accepted(), 0, "the create was received, not yet acted on")
        const r = yield* Fiber.join(submit)
        assert.isTrue(Either.isRight(r))
        assert.isAtLeast(Date.now() - started, 990)
        assert.strictEqual(emu.accepted(), 1)
      }).pipe(Effect.provide(FetchHttpClient.layer))
    ))
})

describe("Server.emulate unanswered", () => {
  it.live("a request whose client hung up while its answer was held is listed; answered ones are not", () =>
    Effect.scoped(
      Effect.gen(function*() {
        const emu = yield* emulatorWith({ poll: "300 millis" })
        // This client gives up after 50 ms, while the emulator holds the answer.
        const abandoned = yield* call(emu.origin, "GET", "/tasks/t1").pipe(Effect.timeout("50 millis"), Effect.either)
        assert.isTrue(Either.isLeft(abandoned))
        yield* call(emu.origin, "GET", "/tasks/t2")
        const unanswered = yield* emu.unanswered
        assert.deepStrictEqual(unanswered.map((r) => r.path), ["/tasks/t1"])
        assert.strictEqual(unanswered[0]!.kind, "poll")
      }).pipe(Effect.provide(FetchHttpClient.layer))
    ))
})

describe("Server.Journal", () => {
  it.effect("wakes waiters once enough entries arrived", () =>
    Effect.gen(function*() {
      const journal = new Server.Journal<number>()
      const waiting = yield* Effect.fork(journal.awaitCount(2))
      journal.add(1)
      assert.isNull(yield* Fiber.poll(waiting).pipe(Effect.map((o) => (o._tag === "Some" ? o : null))))
      journal.add(2)
      yield* Fiber.join(waiting)
      assert.deepStrictEqual(yield* journal.all, [1, 2])
      assert.strictEqual(yield* journal.size, 2)
    }))
})

describe("Server.isDue", () => {
  it("on the Nth poll (3 by default), or once old enough", () => {
    assert.isFalse(Server.isDue({})({ polls: 2, createdAt: 0 }, 0))
    assert.isTrue(Server.isDue({})({ polls: 3, createdAt: 0 }, 0))
    const byTime = Server.isDue({ completeAfter: "10 seconds" })
    assert.isFalse(byTime({ polls: 100, createdAt: 0 }, 9_999))
    assert.isTrue(byTime({ polls: 0, createdAt: 0 }, 10_000))
    assert.isTrue(Server.isDue({ completeAfter: "10 seconds", completeAfterPolls: 1 })({ polls: 1, createdAt: 0 }, 0))
  })
})

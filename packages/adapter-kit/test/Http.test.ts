import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import * as Headers from "@effect/platform/Headers"
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientError from "@effect/platform/HttpClientError"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as HttpClientResponse from "@effect/platform/HttpClientResponse"
import { assert, describe, it } from "@effect/vitest"
import { CallLimit, VendorAdapter } from "@genway/core"
import * as Chunk from "effect/Chunk"
import * as Duration from "effect/Duration"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import * as Fiber from "effect/Fiber"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/TestClock"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import { Http } from "../src/index.js"
import { Fixtures, Server } from "../src/testing/index.js"

const request = HttpClientRequest.post("http://127.0.0.1:1/create")
const systemError = (code: string) => Object.assign(new Error(code), { code })
const transport = (cause: unknown) => new HttpClientError.RequestError({ request, reason: "Transport", cause })

describe("Http.noAnswer: did the request leave this process?", () => {
  it("connection refused, name not resolved, host unreachable: never sent", () => {
    for (const code of ["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "EHOSTUNREACH", "ENETUNREACH", "UND_ERR_CONNECT_TIMEOUT"]) {
      // fetch wraps the system error in a TypeError.
      const error = transport(new TypeError("fetch failed", { cause: systemError(code) }))
      assert.deepStrictEqual(Http.noAnswer(error), { _tag: "Lost", reason: `connection failed (${code})`, sent: false })
    }
  })

  it("every address refused (an AggregateError): never sent", () => {
    const refused = Object.assign(new AggregateError([systemError("ECONNREFUSED"), systemError("ECONNREFUSED")]), { code: "ECONNREFUSED" })
    assert.deepStrictEqual(Http.noAnswer(transport(refused)), { _tag: "Lost", reason: "connection failed (ECONNREFUSED)", sent: false })
  })

  it("a reset or a timeout may hide an accepted request: sent", () => {
    assert.deepStrictEqual(Http.noAnswer(transport(systemError("ECONNRESET"))), {
      _tag: "Lost",
      reason: "connection failed (ECONNRESET)",
      sent: true
    })
    assert.deepStrictEqual(Http.noAnswer(transport(undefined)), { _tag: "Lost", reason: "connection failed", sent: true })
    const mixed = Object.assign(new AggregateError([systemError("ECONNREFUSED"), systemError("ETIMEDOUT")]), { code: "ECONNREFUSED" })
    assert.isTrue((Http.noAnswer(transport(mixed)) as { readonly sent: boolean }).sent)
  })

  it("an answer that broke off was sent", () => {
    const response = HttpClientResponse.fromWeb(request, new Response("{}"))
    const error = new HttpClientError.ResponseError({ request, response, reason: "Decode", cause: systemError("ECONNRESET") })
    assert.deepStrictEqual(Http.noAnswer(error), { _tag: "Lost", reason: "answer cut off (ECONNRESET)", sent: true })
  })

  it("a request that cannot be encoded is unsendable", () => {
    assert.deepStrictEqual(Http.noAnswer(new HttpClientError.RequestError({ request, reason: "Encode" })), { _tag: "Unsendable" })
    assert.deepStrictEqual(Http.noAnswer(new HttpClientError.RequestError({ request, reason: "InvalidUrl" })), { _tag: "Unsendable" })
  })
})

describe("Http.lost: the outcome of an exchange without an answer", () => {
  const sent: Http.NoAnswer = { _tag: "Lost", reason: "no answer in time", sent: true }
  const notSent: Http.NoAnswer = { _tag: "Lost", reason: "connection failed (ECONNREFUSED)", sent: false }

  it("a create that may have reached the vendor is OutcomeUnknown", () => {
    const error = Http.lost({ vendor: "vendor-x", phase: "submit" })(sent)
    assert.instanceOf(error, VendorAdapter.OutcomeUnknown)
    assert.strictEqual((error as VendorAdapter.OutcomeUnknown).reason, "vendor-x: no answer in time after the create request was sent")
  })

  it("a create that provably never left is Retryable", () => {
    const error = Http.lost({ vendor: "vendor-x", phase: "submit" })(notSent)
    assert.instanceOf(error, VendorAdapter.Retryable)
    assert.strictEqual((error as VendorAdapter.Retryable).reason, "vendor-x: connection failed (ECONNREFUSED) during submit")
  })

  it("any other step is Retryable, sent or not", () => {
    for (const phase of ["poll", "reconcile", "download"]) {
      assert.instanceOf(Http.lost({ vendor: "vendor-x", phase })(sent), VendorAdapter.Retryable)
      assert.instanceOf(Http.lost({ vendor: "vendor-x", phase })(notSent), VendorAdapter.Retryable)
    }
  })

  it("an unsendable request fails the task (3001), with the adapter's refusal when it has one", () => {
    const error = Http.lost({ vendor: "vendor-x", phase: "poll" })({ _tag: "Unsendable" })
    assert.instanceOf(error, VendorAdapter.Rejected)
    assert.deepStrictEqual({ ...(error as VendorAdapter.Rejected).error }, {
      code: 3001,
      title: "Execution error",
      detail: "the request to vendor-x could not be encoded"
    })
    const own = Http.lost({
      vendor: "vendor-x",
      phase: "submit",
      rejected: (code, detail) => new VendorAdapter.Rejected({ error: { code, title: "Own title", detail } as never })
    })({ _tag: "Unsendable" })
    assert.strictEqual((own as VendorAdapter.Rejected).error.title, "Own title")
  })
})

describe("Http retry hints", () => {
  const at = Date.parse("2030-01-01T00:00:00Z")
  const hint = (value: string) => {
    const d = Http.retryAfterAt(Headers.fromInput({ "retry-after": value }), at)
    return d === undefined ? undefined : Duration.toMillis(d)
  }

  it("Retry-After in seconds, fractions included", () => {
    assert.strictEqual(hint("7"), 7000)
    assert.strictEqual(hint("0"), 0)
    assert.strictEqual(hint("1.5"), 1500)
  })

  it("Retry-After as an HTTP date, counted from now; a past date means now", () => {
    assert.strictEqual(hint("Tue, 01 Jan 2030 00:00:30 GMT"), 30_000)
    assert.strictEqual(hint("Mon, 31 Dec 2029 23:00:00 GMT"), 0)
  })

  it("absent, blank or nonsense: no hint", () => {
    assert.isUndefined(Http.retryAfterAt(Headers.empty, at))
    assert.isUndefined(hint(""))
    assert.isUndefined(hint("   "))
    assert.isUndefined(hint("soon"))
  })

  it("number headers: non-negative numbers only", () => {
    assert.strictEqual(Http.numberHeader(Headers.fromInput({ "retry-after-ms": "250" }), "retry-after-ms"), 250)
    assert.isUndefined(Http.numberHeader(Headers.fromInput({ "retry-after-ms": "-1" }), "retry-after-ms"))
    assert.isUndefined(Http.numberHeader(Headers.fromInput({ "retry-after-ms": "x" }), "retry-after-ms"))
    assert.isUndefined(Http.numberHeader(Headers.fromInput({ "retry-after-ms": " " }), "retry-after-ms"))
    assert.isUndefined(Http.numberHeader(Headers.empty, "retry-after-ms"))
  })

  it.effect("retryAfter reads the Effect clock", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(at)
      const d = yield* Http.retryAfter(Headers.fromInput({ "retry-after": "Tue, 01 Jan 2030 00:01:00 GMT" }))
      assert.strictEqual(Fixtures.millis(d), 60_000)
    }))

  it("transient statuses: 408, 429 and every 5xx", () => {
    assert.deepStrictEqual([400, 401, 404, 408, 409, 429, 500, 503, 599].filter(Http.isTransientStatus), [408, 429, 500, 503, 599])
  })
})

describe("Http JSON helpers", () => {
  it("parseObject takes JSON objects only; stringAt strings only", () => {
    assert.deepStrictEqual(Http.parseObject("{\"a\": \"b\"}"), { a: "b" })
    assert.isUndefined(Http.parseObject("[1]"))
    assert.isUndefined(Http.parseObject("{\"a\": "))
    assert.strictEqual(Http.stringAt({ a: "b" }, "a"), "b")
    assert.isUndefined(Http.stringAt({ a: 1 }, "a"))
    assert.isUndefined(Http.stringAt("a", "a"))
  })
})

describe("Http.scrubber", () => {
  it("removes secrets and the base URL, and bounds the length", () => {
    const scrub = Http.scrubber({ secrets: ["sk-123", ""], baseUrl: "https://internal.example/v1" })
    assert.strictEqual(
      scrub("key sk-123 rejected at https://internal.example/v1/videos"),
      "key [redacted] rejected at /videos"
    )
    assert.lengthOf(scrub("x".repeat(5000)), 1000)
  })
})

/** A test server on 127.0.0.1 answering with `handler`, its requests logged. */
const server = <K extends string>(classify: (method: string, path: string) => K | "other", handler: Server.Handler<K>) =>
  Effect.gen(function*() {
    const recorder = new Server.Recorder<K, never>()
    const running = yield* Server.serve(recorder, classify, handler)
    return { ...running, recorder }
  })

/** A port nothing listens on. */
const closedPort = Effect.promise(() =>
  new Promise<number>((resolve) => {
    const s = http.createServer()
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address() as AddressInfo
      s.close(() => resolve(port))
    })
  })
)

const live = <A, E>(effect: Effect.Effect<A, E, HttpClient.HttpClient | Scope.Scope>) =>
  Effect.provide(effect, FetchHttpClient.layer)

describe("Http.exchange against a real server", () => {
  it.scoped("reads the whole answer", () =>
    live(Effect.gen(function*() {
      const s = yield* server(() => "any", () => ({ _tag: "Json", status: 201, body: { id: "t1" }, headers: { "retry-after": "3" } }))
      const client = yield* HttpClient.HttpClient
      const answer = yield* Http.exchange(client, HttpClientRequest.post(`${s.origin}/create`), "5 seconds")
      assert.strictEqual(answer.status, 201)
      assert.strictEqual(answer.headers["retry-after"], "3")
      assert.deepStrictEqual(JSON.parse(answer.text), { id: "t1" })
    })))

  it.scoped("a refused connection never left: Retryable even for a create", () =>
    live(Effect.gen(function*() {
      const port = yield* closedPort
      const client = yield* HttpClient.HttpClient
      const error = yield* Effect.flip(Http.exchange(client, HttpClientRequest.post(`http://127.0.0.1:${port}/create`), "5 seconds"))
      assert.strictEqual(error._tag, "Lost")
      if (error._tag === "Lost") assert.isFalse(error.sent)
      assert.instanceOf(Http.lost({ vendor: "v", phase: "submit" })(error), VendorAdapter.Retryable)
    })))

  it.scoped("a connection cut after the request was sent: OutcomeUnknown for a create", () =>
    live(Effect.gen(function*() {
      const s = yield* server(() => "any", () => ({ _tag: "Drop" }))
      const client = yield* HttpClient.HttpClient
      const error = yield* Effect.flip(Http.exchange(client, HttpClientRequest.post(`${s.origin}/create`), "5 seconds"))
      assert.strictEqual(error._tag, "Lost")
      if (error._tag === "Lost") assert.isTrue(error.sent)
      assert.instanceOf(Http.lost({ vendor: "v", phase: "submit" })(error), VendorAdapter.OutcomeUnknown)
      assert.instanceOf(Http.lost({ vendor: "v", phase: "poll" })(error), VendorAdapter.Retryable)
    })))

  it.scoped("no answer in time: sent", () =>
    live(Effect.gen(function*() {
      const s = yield* server(() => "any", async () => {
        await s.wait(60_000)
        return { _tag: "Json", status: 200, body: {} }
      })
      const client = yield* HttpClient.HttpClient
      const fiber = yield* Effect.fork(Http.exchange(client, HttpClientRequest.post(`${s.origin}/create`), "10 seconds"))
      yield* s.recorder.awaitRequests(1)
      yield* TestClock.adjust("10 seconds")
      assert.deepStrictEqual(yield* Effect.flip(Fiber.join(fiber)), { _tag: "Lost", reason: "no answer in time", sent: true })
    })))
})

const bytesOf = (body: Stream.Stream<Uint8Array, unknown>) =>
  Effect.map(Stream.runCollect(body), (chunks) => Buffer.concat(Chunk.toArray(chunks)).toString("utf8"))

describe("Http.download", () => {
  const media = (contentType = "video/mp4"): Server.Reply => ({
    _tag: "Bytes",
    status: 200,
    bytes: new TextEncoder().encode("MEDIA"),
    contentType
  })

  it.scoped("follows redirects itself; the key goes to the vendor's origin only", () =>
    live(Effect.gen(function*() {
      const storage = yield* server(() => "blob", () => media())
      const api = yield* server(() => "file", () => ({ _tag: "Redirect", location: `${storage.origin}/blob?token=t` }))
      const client = yield* HttpClient.HttpClient
      const result = yield* Http.download(client, { _tag: "Url", url: `${api.origin}/file` }, {
        vendor: "vendor-x",
        timeout: "5 seconds",
        key: { origin: api.origin, authorize: HttpClientRequest.bearerToken("sk-key") }
      })
      assert.strictEqual(result.contentType, "video/mp4")
      assert.strictEqual(yield* bytesOf(result.body), "MEDIA")
      const [toApi] = yield* api.recorder.requests
      const [toStorage] = yield* storage.recorder.requests
      assert.strictEqual(toApi!.headers["authorization"], "Bearer sk-key")
      assert.isUndefined(toStorage!.headers["authorization"])
      assert.strictEqual(toStorage!.query["token"], "t")
    })))

  it.scoped("without a key no credentials are sent", () =>
    live(Effect.gen(function*() {
      const s = yield* server(() => "blob", () => media())
      const client = yield* HttpClient.HttpClient
      yield* Http.download(client, { _tag: "Url", url: `${s.origin}/blob` }, { vendor: "vendor-x", timeout: "5 seconds" })
      const [sent] = yield* s.recorder.requests
      assert.isUndefined(sent!.headers["authorization"])
    })))

  it.scoped("endless redirects and unusable addresses fail the task", () =>
    live(Effect.gen(function*() {
      const s = yield* server(() => "loop", () => ({ _tag: "Redirect", location: "/again" }))
      const client = yield* HttpClient.HttpClient
      const options = { vendor: "vendor-x", timeout: "5 seconds" } as const
      const loop = yield* Effect.flip(Http.download(client, { _tag: "Url", url: `${s.origin}/start` }, options))
      assert.instanceOf(loop, VendorAdapter.Rejected)
      assert.strictEqual((loop as VendorAdapter.Rejected).error.detail, "vendor-x's result download redirected too often")
      assert.lengthOf(yield* s.recorder.requests, 6)
      for (const url of ["not a url", "file:///etc/passwd"]) {
        const bad = yield* Effect.flip(Http.download(client, { _tag: "Url", url }, options))
        assert.strictEqual((bad as VendorAdapter.Rejected).error.detail, "vendor-x returned an unusable result address")
      }
    })))

  it.scoped("error statuses: transient ones retry with their hint, others fail the task; errors never name the URL", () =>
    live(Effect.gen(function*() {
      let status = 503
      const s = yield* server(() => "blob", () => ({ _tag: "Json", status, body: { error: "x" }, headers: { "retry-after": "4" } }))
      const client = yield* HttpClient.HttpClient
      const url = `${s.origin}/blob?signature=secret`
      const busy = yield* Effect.flip(Http.download(client, { _tag: "Url", url }, { vendor: "vendor-x", timeout: "5 seconds" }))
      assert.instanceOf(busy, VendorAdapter.Retryable)
      assert.strictEqual(Fixtures.millis((busy as VendorAdapter.Retryable).retryAfter), 4000)
      status = 403
      const gone = yield* Effect.flip(Http.download(client, { _tag: "Url", url }, { vendor: "vendor-x", timeout: "5 seconds" }))
      assert.instanceOf(gone, VendorAdapter.Rejected)
      assert.strictEqual((gone as VendorAdapter.Rejected).error.code, 3001)
      for (const error of [busy, gone]) assert.notInclude(JSON.stringify(error) + String(error), "secret")
    })))

  it.scoped("an adapter's own failure mapping sees the whole error answer", () =>
    live(Effect.gen(function*() {
      const s = yield* server(() => "blob", () => ({ _tag: "Json", status: 404, body: { error: { message: "expired" } } }))
      const client = yield* HttpClient.HttpClient
      const error = yield* Effect.flip(Http.download(client, { _tag: "Url", url: `${s.origin}/blob` }, {
        vendor: "vendor-x",
        timeout: "5 seconds",
        failure: (answer) => Effect.fail(new VendorAdapter.Retryable({ reason: `${answer.status} ${answer.text}` }))
      }))
      assert.strictEqual((error as VendorAdapter.Retryable).reason, "404 {\"error\":{\"message\":\"expired\"}}")
    })))

  it.scoped("a generic announced type gives way to the source's; inline bytes pass through", () =>
    live(Effect.gen(function*() {
      const s = yield* server(() => "blob", () => media("application/octet-stream"))
      const client = yield* HttpClient.HttpClient
      const options = { vendor: "vendor-x", timeout: "5 seconds" } as const
      const typed = yield* Http.download(client, { _tag: "Url", url: `${s.origin}/blob`, contentType: "video/mp4" }, options)
      assert.strictEqual(typed.contentType, "video/mp4")
      const untyped = yield* Http.download(client, { _tag: "Url", url: `${s.origin}/blob` }, options)
      assert.strictEqual(untyped.contentType, "application/octet-stream")
      const inline = yield* Http.download(client, { _tag: "Bytes", bytes: new Uint8Array([1, 2]), contentType: "image/png" }, options)
      assert.strictEqual(inline.contentType, "image/png")
      // Whole as `bytes` (stored in one write) and as the stream, alike.
      assert.deepStrictEqual([...(inline.bytes ?? [])], [1, 2])
      assert.deepStrictEqual([...Chunk.toReadonlyArray(yield* Stream.runCollect(inline.body))].map((c) => [...c]), [[1, 2]])
      assert.strictEqual(typed.bytes, undefined)
      assert.lengthOf(yield* s.recorder.requests, 2)
    })))
})

describe("Http.deadline: a time limit without Effect.timeoutFail's two fibers", () => {
  const annotation = FiberRef.unsafeMake("unset")

  it.live("on the live clock: a value or failure passes through, with the fiber-locals it set", () =>
    Effect.gen(function*() {
      const value = yield* Http.deadline(Effect.zipRight(FiberRef.set(annotation, "set inside"), Effect.succeed(42)), "10 seconds", () => "late")
      assert.strictEqual(value, 42)
      assert.strictEqual(yield* FiberRef.get(annotation), "set inside")
      const failed = yield* Effect.flip(Http.deadline(Effect.fail("refused"), "10 seconds", () => "late"))
      assert.strictEqual(failed, "refused")
    }))

  it.live("on the live clock: past the limit, the effect is interrupted first, then fails with onTimeout", () =>
    Effect.gen(function*() {
      const events: Array<string> = []
      const hung = Effect.never.pipe(Effect.onInterrupt(() => Effect.sync(() => events.push("interrupted"))))
      const error = yield* Effect.flip(Http.deadline(hung, "20 millis", () => {
        events.push("timed out")
        return "late"
      }))
      assert.strictEqual(error, "late")
      assert.deepStrictEqual(events, ["interrupted", "timed out"])
    }))

  it.live("on the live clock: interrupting the caller interrupts the effect", () =>
    Effect.gen(function*() {
      const started = yield* Deferred.make<void>()
      const stopped = yield* Deferred.make<void>()
      const hung = Effect.zipRight(Deferred.succeed(started, undefined), Effect.never).pipe(Effect.onInterrupt(() => Deferred.succeed(stopped, undefined)))
      const fiber = yield* Effect.fork(Http.deadline(hung, "10 minutes", () => "late"))
      yield* Deferred.await(started)
      yield* Fiber.interrupt(fiber)
      assert.isTrue(yield* Deferred.isDone(stopped))
    }))

  it.effect("under the TestClock: the limit follows test time", () =>
    Effect.gen(function*() {
      const fiber = yield* Effect.fork(Effect.flip(Http.deadline(Effect.never, "30 seconds", () => "late")))
      yield* TestClock.adjust("29 seconds")
      assert.isTrue((yield* Fiber.poll(fiber))._tag === "None")
      yield* TestClock.adjust("1 second")
      assert.strictEqual(yield* Fiber.join(fiber), "late")
    }))
})

describe("Http.within: a time limit the client enforces, without a forked fiber", () => {
  /** A client that answers nothing (within's choice of path is what is tested here). */
  const silent = (): HttpClient.HttpClient => HttpClient.make(() => Effect.never)

  it.live("with an enforcing client, self runs on the caller's fiber under an active limit, inactive afterwards", () =>
    Effect.gen(function*() {
      const outer = yield* Effect.fiberId
      let seen: CallLimit.CallLimit | undefined
      const inner = yield* Http.within(
        CallLimit.markEnforcing(silent()),
        Effect.zipLeft(Effect.fiberId, Effect.tap(FiberRef.get(CallLimit.current), (l) => Effect.sync(() => void (seen = l)))),
        "1 second",
        () => "timeout"
      )
      assert.deepStrictEqual(inner, outer)
      assert.isDefined(seen)
      assert.isFalse(seen!.active)
      assert.isFalse(seen!.expired)
      assert.isUndefined(CallLimit.active(yield* FiberRef.get(CallLimit.current)))
    }).pipe(Effect.withTracerEnabled(false)))

  it.live("inside another within, the inner limit is in force while its effect runs, the outer one again after it", () =>
    Effect.gen(function*() {
      const client = CallLimit.markEnforcing(silent())
      const inForce = Effect.map(FiberRef.get(CallLimit.current), CallLimit.active)
      const [outerLimit, innerLimit, afterInner] = yield* Http.within(
        client,
        Effect.gen(function*() {
          const o = yield* inForce
          const i = yield* Http.within(client, inForce, "5 seconds", () => "timeout")
          return [o, i, yield* inForce] as const
        }),
        "1 second",
        () => "timeout"
      )
      assert.isDefined(outerLimit)
      assert.isDefined(innerLimit)
      assert.notStrictEqual(innerLimit, outerLimit)
      assert.isFalse(innerLimit!.active)
      assert.strictEqual(innerLimit!.outer, outerLimit)
      // The inner limit ended; the outer one was in force again until its own effect ended.
      assert.strictEqual(afterInner, outerLimit)
      assert.isFalse(outerLimit!.active)
      assert.isUndefined(yield* inForce)
    }).pipe(Effect.withTracerEnabled(false)))

  it.live("an interrupted effect leaves its limit inactive; a joined fiber's limit does not become the joiner's", () =>
    Effect.gen(function*() {
      const client = CallLimit.markEnforcing(silent())
      const started = yield* Deferred.make<CallLimit.CallLimit | undefined>()
      const waiting = Effect.zipRight(
        Effect.flatMap(FiberRef.get(CallLimit.current), (l) => Deferred.succeed(started, l)),
        Effect.never
      )
      const fiber = yield* Effect.fork(Http.within(client, waiting, "10 seconds", () => "timeout"))
      const limit = yield* Deferred.await(started)
      assert.isTrue(limit!.active)
      yield* Fiber.interrupt(fiber)
      assert.isFalse(limit!.active)
      assert.isFalse(limit!.expired)

      const joined = yield* Effect.fork(Http.within(client, Effect.succeed("done"), "1 second", () => "timeout"))
      assert.strictEqual(yield* Fiber.join(joined), "done")
      assert.isUndefined(yield* FiberRef.get(CallLimit.current))
    }).pipe(Effect.withTracerEnabled(false)))

  it.live("a failure after the client marked the limit expired is the timeout; another failure stays itself", () =>
    Effect.gen(function*() {
      const client = CallLimit.markEnforcing(silent())
      const expiring = Effect.flatMap(FiberRef.get(CallLimit.current), (l) => {
        l!.expired = true
        return Effect.fail("aborted by the client")
      })
      assert.strictEqual(yield* Effect.flip(Http.within(client, expiring, "1 second", () => "timeout")), "timeout")
      assert.strictEqual(yield* Effect.flip(Http.within(client, Effect.fail("refused"), "1 second", () => "timeout")), "refused")
    }).pipe(Effect.withTracerEnabled(false)))

  it.live("any other client, or tracing on: self runs in a forked fiber (Http.deadline), no limit on the fiber", () =>
    Effect.gen(function*() {
      const outer = yield* Effect.fiberId
      const probe = Effect.zip(Effect.fiberId, FiberRef.get(CallLimit.current))
      const [plainId, plainLimit] = yield* Http.within(silent(), probe, "1 second", () => "timeout").pipe(Effect.withTracerEnabled(false))
      assert.notDeepEqual(plainId, outer)
      assert.isUndefined(plainLimit)
      const [tracedId, tracedLimit] = yield* Http.within(CallLimit.markEnforcing(silent()), probe, "1 second", () => "timeout").pipe(
        Effect.withTracerEnabled(true)
      )
      assert.notDeepEqual(tracedId, outer)
      assert.isUndefined(tracedLimit)
    }))
})

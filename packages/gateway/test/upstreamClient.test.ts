/**
 * The lean upstream client (platform/UpstreamClient.ts) over a real local server: answers and
 * bodies as the platform's client gives them, a body read twice is read once, an interrupted call
 * aborts its request at the server, a refused connection is a Transport error, and a traced call
 * goes through the platform's client (which sends `traceparent`).
 */
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import { assert, describe, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Either from "effect/Either"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { setFlagsFromString } from "node:v8"
import { runInNewContext } from "node:vm"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { Responses as VendorAResponses } from "@genway/adapter-vendor-a"
import { Chat as VendorDChat } from "@genway/adapter-vendor-d"
import { CallLimit, type Chat } from "@genway/core"
import * as Upstream from "../src/observability/Upstream.js"
import * as UpstreamClient from "../src/platform/UpstreamClient.js"

/** A local server answering with `handler`, for the scope. */
const serve = (handler: (req: IncomingMessage, res: ServerResponse) => void) =>
  Effect.acquireRelease(
    Effect.async<{ readonly base: string; readonly close: () => void }>((resume) => {
      const server = createServer(handler)
      server.listen(0, "127.0.0.1", () => {
        const { port } = server.address() as AddressInfo
        let open = true
        const close = () => {
          if (open) server.close()
          open = false
        }
        resume(Effect.succeed({ base: `http://127.0.0.1:${port}`, close }))
      })
      server.on("connection", (s) => server.once("close", () => s.destroy()))
    }),
    (s) => Effect.sync(() => s.close())
  )

/** A full garbage collection, asked for (V8's `gc`, exposed for this test file). */
setFlagsFromString("--expose-gc")
const collectGarbage = runInNewContext("gc") as () => void

/** With the tracer off, as the gateway runs without OTLP: the lean path (a traced call goes through the platform's client). */
const lean = Effect.withTracerEnabled(false)

/** The client, built for the test's scope (its pools close with it). */
const client = Effect.map(
  Layer.build(UpstreamClient.layer.pipe(Layer.provide(NodeHttpClient.layerUndici))),
  (context) => Context.get(context, HttpClient.HttpClient)
)

/** A call's failure is a `RequestError` "Transport". */
const assertTransport = (error: { readonly _tag: string; readonly reason?: string }) => {
  assert.strictEqual(error._tag, "RequestError")
  assert.strictEqual(error.reason, "Transport")
}

/**
 * An event stream that sends one event and stays open, its answer being read by a forked reader
 * that has seen that event; `closed` completes when the server sees the connection close.
 */
const readingFirstEvent = Effect.gen(function*() {
  const closed = yield* Deferred.make<void>()
  const { base } = yield* serve((req, res) => {
    req.socket.on("close", () => Deferred.unsafeDone(closed, Effect.void))
    res.writeHead(200, { "content-type": "text/event-stream" })
    res.write("data: 1\n\n")
  })
  const http = yield* client
  const response = yield* http.get(`${base}/events`)
  const first = yield* Deferred.make<void>()
  const reader = yield* Effect.fork(Stream.runForEach(response.stream, () => Deferred.succeed(first, undefined)))
  yield* Deferred.await(first)
  return { response, reader, closed }
})

describe("upstream client", () => {
  it.scoped("answers: status, headers, a JSON body read twice (read once), a posted body received", () =>
    Effect.gen(function*() {
      let received = ""
      const { base } = yield* serve((req, res) => {
        let body = ""
        req.on("data", (c) => (body += c))
        req.on("end", () => {
          received = `${req.method} ${req.url} ${req.headers["x-test"]} ${body}`
          res.writeHead(201, { "content-type": "application/json", "x-answer": "yes" })
          res.end(JSON.stringify({ ok: true }))
        })
      })
      const http = yield* client
      const response = yield* http.execute(
        HttpClientRequest.post(`${base}/v1/things?a=1`).pipe(
          HttpClientRequest.setHeader("x-test", "t"),
          HttpClientRequest.setUrlParam("b", "2"),
          HttpClientRequest.bodyUnsafeJson({ n: 1 })
        )
      )
      assert.strictEqual(response.status, 201)
      assert.strictEqual(response.headers["x-answer"], "yes")
      assert.deepStrictEqual(yield* response.json, { ok: true })
      assert.strictEqual(yield* response.text, '{"ok":true}')
      assert.strictEqual(received, 'POST /v1/things?a=1&b=2 t {"n":1}')
    }).pipe(lean))

  it.scoped("streams a body chunk by chunk", () =>
    Effect.gen(function*() {
      const { base } = yield* serve((_req, res) => {
        res.writeHead(200, { "content-type": "text/event-stream" })
        res.write("data: 1\n\n")
        setImmediate(() => res.end("data: 2\n\n"))
      })
      const http = yield* client
      const response = yield* http.get(`${base}/events`)
      assert.isFalse(Upstream.inHand(response))
      const chunks = yield* Stream.runCollect(Stream.decodeText(response.stream))
      assert.strictEqual(Chunk.join(chunks, ""), "data: 1\n\ndata: 2\n\n")
    }).pipe(lean))

  it.scoped("a streamed answer larger than the body's buffer arrives whole, read slowly, as text and as bytes", () =>
    Effect.gen(function*() {
      // 4 MiB in 64 KiB writes: the body's reader lags, so the connection is paused and resumed.
      const part = Buffer.alloc(64 * 1024)
      const parts = Array.from({ length: 64 }, (_, i) => Buffer.from(part.fill(97 + (i % 26))))
      const whole = Buffer.concat(parts)
      const { base } = yield* serve((_req, res) => {
        res.writeHead(200, { "content-type": "text/plain; charset=utf-8" })
        for (const p of parts) res.write(p)
        res.end()
      })
      const http = yield* client
      const slow = yield* http.get(`${base}/big`)
      assert.isFalse(Upstream.inHand(slow))
      let received = 0
      yield* Stream.runForEach(slow.stream, (chunk) => Effect.sync(() => void (received += chunk.length)).pipe(Effect.zipLeft(Effect.yieldNow())))
      assert.strictEqual(received, whole.length)
      const asText = yield* http.get(`${base}/big`)
      assert.strictEqual(yield* asText.text, whole.toString("utf8"))
      const asBytes = yield* http.get(`${base}/big`)
      assert.isTrue(Buffer.from(yield* asBytes.arrayBuffer).equals(whole))
    }).pipe(lean))

  it.scoped("a streamed form answer is read as form data", () =>
    Effect.gen(function*() {
      const { base } = yield* serve((_req, res) => {
        res.writeHead(200, { "content-type": "multipart/form-data; boundary=b0" })
        res.end('--b0\r\ncontent-disposition: form-data; name="n"\r\n\r\nv1\r\n--b0--\r\n')
      })
      const http = yield* client
      const form = yield* (yield* http.get(`${base}/form`)).formData
      assert.strictEqual(form.get("n"), "v1")
    }).pipe(lean))

  it.scoped("an informational head before the answer is passed over; repeated headers are all kept", () =>
    Effect.gen(function*() {
      const { base } = yield* serve((_req, res) => {
        res.writeEarlyHints({ link: "</a.css>; rel=preload" })
        res.setHeader("set-cookie", ["a=1", "b=2"])
        res.setHeader("x-many", ["one", "two"])
        res.writeHead(202, { "content-type": "application/json" })
        res.end('{"n":2}')
      })
      const http = yield* client
      const response = yield* http.get(`${base}/hints`)
      assert.strictEqual(response.status, 202)
      assert.deepStrictEqual(yield* response.json, { n: 2 })
      assert.strictEqual(response.headers["x-many"], "one, two")
      assert.deepStrictEqual(Object.keys(response.cookies.cookies).sort(), ["a", "b"])
    }).pipe(lean))

  it.scoped("a streamed body whose reader is interrupted midway aborts its request at the server", () =>
    Effect.gen(function*() {
      const { closed, reader } = yield* readingFirstEvent
      yield* Fiber.interrupt(reader)
      yield* Deferred.await(closed)
    }).pipe(lean))

  it.scopedLive("an unread streamed answer, dropped, is destroyed once collected, also when a forked fiber's result held it: its connection is closed", () =>
    Effect.gen(function*() {
      for (const forked of [false, true]) {
        const closed = yield* Deferred.make<void>()
        const { base } = yield* serve((req, res) => {
          req.socket.on("close", () => Deferred.unsafeDone(closed, Effect.void))
          res.writeHead(200, { "content-type": "application/octet-stream" })
          // More than the body's buffer: the connection pauses and stays open until the body goes.
          res.write(Buffer.alloc(256 * 1024))
        })
        const http = yield* client
        const call = http.get(`${base}/media`)
        yield* Effect.asVoid(forked ? Effect.flatMap(Effect.fork(call), Fiber.join) : call)
        // Collected only by a full collection: asked for until the server sees the connection close
        // (an event; the test's time limit bounds the wait).
        while (!(yield* Deferred.isDone(closed))) {
          collectGarbage()
          yield* Effect.sleep("20 millis")
        }
      }
    }).pipe(lean), 20_000)

  it.scoped("a URL that is not http(s) is a Transport error, not a defect", () =>
    Effect.gen(function*() {
      const http = yield* client
      assertTransport(yield* Effect.flip(http.get("ws://127.0.0.1:1/x")))
    }).pipe(lean))

  it.scoped("a streamed body destroyed before its end without a reason fails its reader", () =>
    Effect.gen(function*() {
      const { reader, response } = yield* readingFirstEvent
      // What the unread answers' registry does to a body: destroy() without an error.
      ;(response as unknown as { readonly body: { destroy(): void } }).body.destroy()
      const error = yield* Effect.flip(Fiber.join(reader))
      assert.strictEqual(error._tag, "ResponseError")
    }).pipe(lean))

  it.scoped("an interrupted call aborts its request at the server", () =>
    Effect.gen(function*() {
      const arrived = yield* Deferred.make<void>()
      const aborted = yield* Deferred.make<void>()
      const { base } = yield* serve((req) => {
        // Never answers: the call waits for its head until it is interrupted.
        req.socket.on("close", () => Deferred.unsafeDone(aborted, Effect.void))
        Deferred.unsafeDone(arrived, Effect.void)
      })
      const http = yield* client
      const call = yield* Effect.fork(http.get(`${base}/slow`))
      yield* Deferred.await(arrived)
      yield* Fiber.interrupt(call)
      yield* Deferred.await(aborted)
    }).pipe(lean))

  it.scopedLive("a JSON answer is read whole within its exchange: the exchange returns once the body has ended", () =>
    Effect.gen(function*() {
      const wrote = yield* Deferred.make<void>()
      let finish: () => void = () => {}
      const { base } = yield* serve((_req, res) => {
        // No Content-Length: sent in chunks, the second only when the test says so.
        res.writeHead(200, { "content-type": "application/json; charset=utf-8" })
        res.write('\ufeff{"whole":')
        finish = () => res.end('"yes","bytes":[1,2]}')
        Deferred.unsafeDone(wrote, Effect.void)
      })
      const http = yield* client
      const call = yield* Effect.fork(http.get(`${base}/whole`))
      yield* Deferred.await(wrote)
      // The head has been sent, the body has not ended: the exchange is still waiting (a check
      // that cannot fail spuriously: with the body unfinished, no correct client can answer).
      yield* Effect.sleep("50 millis")
      assert.isTrue(Option.isNone(yield* Fiber.poll(call)))
      finish()
      const response = yield* Fiber.join(call)
      // It says so, and the upstream instrumentation reads nothing more of it.
      assert.isTrue(Upstream.inHand(response))
      // A byte-order mark is not text (as undici's own read); the bytes are as sent.
      assert.strictEqual(yield* response.text, '{"whole":"yes","bytes":[1,2]}')
      assert.deepStrictEqual(yield* response.json, { whole: "yes", bytes: [1, 2] })
      const expected = Buffer.from('\ufeff{"whole":"yes","bytes":[1,2]}')
      assert.deepStrictEqual(Buffer.from(yield* response.arrayBuffer), expected)
      const streamed = yield* Stream.runCollect(response.stream)
      assert.deepStrictEqual(Buffer.concat(Chunk.toReadonlyArray(streamed)), expected)
    }).pipe(lean))

  it.scoped("a JSON answer cut off midway: the exchange answers, and every read of its body fails as a body read (Decode)", () =>
    Effect.gen(function*() {
      const { base } = yield* serve((_req, res) => {
        res.writeHead(200, { "content-type": "application/json", "content-length": "100" })
        res.write('{"cut":')
        setImmediate(() => res.destroy())
      })
      const http = yield* client
      const response = yield* http.get(`${base}/cut`)
      assert.strictEqual(response.status, 200)
      for (const read of [response.text, response.json, Effect.asVoid(response.arrayBuffer), Stream.runDrain(response.stream)]) {
        const error = yield* Effect.flip(read)
        assert.strictEqual(error._tag, "ResponseError")
        assert.strictEqual(error._tag === "ResponseError" ? error.reason : undefined, "Decode")
      }
    }).pipe(lean))

  it.scoped("an interrupted call whose JSON answer is still arriving aborts its request at the server", () =>
    Effect.gen(function*() {
      const started = yield* Deferred.make<void>()
      const aborted = yield* Deferred.make<void>()
      const { base } = yield* serve((req, res) => {
        req.socket.on("close", () => Deferred.unsafeDone(aborted, Effect.void))
        res.writeHead(200, { "content-type": "application/json" })
        res.write("[")
        Deferred.unsafeDone(started, Effect.void)
      })
      const http = yield* client
      const call = yield* Effect.fork(http.get(`${base}/trickle`))
      yield* Deferred.await(started)
      yield* Fiber.interrupt(call)
      yield* Deferred.await(aborted)
    }).pipe(lean))

  it.scoped("a refused connection is a Transport error", () =>
    Effect.gen(function*() {
      const { base, close } = yield* serve((_req, res) => res.end())
      close()
      const http = yield* client
      assertTransport(yield* Effect.flip(http.get(`${base}/gone`)))
    }).pipe(lean))

  it.scoped("with the tracer on, a call goes through the platform's client, which sends traceparent", () =>
    Effect.gen(function*() {
      let traceparent: string | undefined
      const { base } = yield* serve((req, res) => {
        traceparent = req.headers["traceparent"] as string | undefined
        res.end("ok")
      })
      const http = yield* client
      yield* Effect.flatMap(http.get(`${base}/traced`), (r) => r.text).pipe(Effect.withTracerEnabled(true))
      assert.match(traceparent ?? "", /^00-[0-9a-f]{32}-[0-9a-f]{16}-0[01]$/)
      traceparent = undefined
      yield* Effect.flatMap(http.get(`${base}/plain`), (r) => r.text).pipe(Effect.withTracerEnabled(false))
      assert.isUndefined(traceparent)
    }))

  describe("time limits (CallLimit)", () => {
    /** A limit ending `ms` from now, for the exchanges made by `effect`. */
    const limited = <A, E, R>(effect: Effect.Effect<A, E, R>, ms: number) => {
      const limit: CallLimit.CallLimit = { at: Date.now() + ms, expired: false, active: true }
      return Effect.map(Effect.either(Effect.locally(effect, CallLimit.current, limit)), (result) => ({ result, limit }))
    }

    it.scoped("the lean client says it enforces limits, and so does it measured; the platform's client does not", () =>
      Effect.gen(function*() {
        const http = yield* client
        assert.isTrue(CallLimit.isEnforcing(http))
        assert.isTrue(CallLimit.isEnforcing(Upstream.instrument(http)))
        const platform = yield* Effect.map(Layer.build(NodeHttpClient.layerUndici), (c) => Context.get(c, HttpClient.HttpClient))
        assert.isFalse(CallLimit.isEnforcing(platform))
        assert.isFalse(CallLimit.isEnforcing(Upstream.instrument(platform)))
      }))

    it.scopedLive("a vendor that never answers: the exchange fails at the limit, aborted at the server", () =>
      Effect.gen(function*() {
        const aborted = yield* Deferred.make<void>()
        const { base } = yield* serve((req) => req.on("close", () => Deferred.unsafeDone(aborted, Effect.void)))
        const http = yield* client
        const { limit, result } = yield* limited(http.get(`${base}/silent`), 100)
        assert.isTrue(result._tag === "Left" && result.left._tag === "RequestError" && result.left.reason === "Transport")
        assert.isTrue(limit.expired)
        yield* Deferred.await(aborted)
      }).pipe(lean))

    it.scopedLive("a body that stops midway: its read fails at the limit", () =>
      Effect.gen(function*() {
        const { base } = yield* serve((_req, res) => {
          res.writeHead(200, { "content-type": "application/json" })
          res.write("{\"partial\":")
        })
        const http = yield* client
        const { limit, result } = yield* limited(Effect.flatMap(http.get(`${base}/stalled`), (r) => r.text), 100)
        assert.isTrue(result._tag === "Left" && result.left._tag === "ResponseError")
        assert.isTrue(limit.expired)
      }).pipe(lean))

    it.scopedLive("an exchange that ends in time is untouched; a limit already over fails the next one at once", () =>
      Effect.gen(function*() {
        const { base } = yield* serve((_req, res) => res.end("fine"))
        const http = yield* client
        const ok = yield* limited(Effect.flatMap(http.get(`${base}/quick`), (r) => r.text), 10_000)
        assert.deepStrictEqual(ok.result, Either.right("fine"))
        assert.isFalse(ok.limit.expired)
        const over: CallLimit.CallLimit = { at: Date.now() - 1, expired: false, active: true }
        const late = yield* Effect.either(Effect.locally(http.get(`${base}/late`), CallLimit.current, over))
        assert.isTrue(late._tag === "Left" && late.left._tag === "RequestError")
        assert.isTrue(over.expired)
        // A limit whose effect has ended (inactive) bounds nothing.
        const ended: CallLimit.CallLimit = { at: Date.now() - 1, expired: false, active: false }
        const after = yield* Effect.flatMap(Effect.locally(http.get(`${base}/after`), CallLimit.current, ended), (r) => r.text)
        assert.strictEqual(after, "fine")
        assert.isFalse(ended.expired)
      }).pipe(lean))

    it.scopedLive("a body read once is the same text on every later read, even after the exchange's limit has passed", () =>
      Effect.gen(function*() {
        const { base } = yield* serve((_req, res) => res.end('{"read":"once"}'))
        const http = yield* client
        const limit = { at: Date.now() + 10_000, expired: false, active: true }
        const response = yield* Effect.locally(http.get(`${base}/once`), CallLimit.current, limit as CallLimit.CallLimit)
        assert.strictEqual(yield* response.text, '{"read":"once"}')
        // The limit runs out after the body was read: the text is in hand, nothing is read again.
        limit.at = Date.now() - 1
        assert.strictEqual(yield* response.text, '{"read":"once"}')
        assert.deepStrictEqual(yield* response.json, { read: "once" })
        assert.isFalse(limit.expired)
      }).pipe(lean))

    it.scopedLive("vendor-a's create through the gateway's client: a silent vendor is a 504 at the create limit, as through the platform's client", () =>
      Effect.gen(function*() {
        const { base } = yield* serve(() => {})
        const config = { baseUrl: base, apiKey: Redacted.make("k") }
        const timeouts = { create: "150 millis" } as const
        const lean = yield* VendorAResponses.make(config, { timeouts }).pipe(Effect.provideService(HttpClient.HttpClient, Upstream.instrument(yield* client)))
        const viaLean = yield* Effect.flip(lean.create({ model: "m", input: "x" }))
        assert.strictEqual(viaLean._tag, "UpstreamUnavailable")
        assert.strictEqual(viaLean.status, 504)
        const platform = yield* Effect.map(Layer.build(NodeHttpClient.layerUndici), (c) => Context.get(c, HttpClient.HttpClient))
        const forked = yield* VendorAResponses.make(config, { timeouts }).pipe(Effect.provideService(HttpClient.HttpClient, platform))
        const viaPlatform = yield* Effect.flip(forked.create({ model: "m", input: "x" }))
        assert.strictEqual(viaPlatform._tag, "UpstreamUnavailable")
        assert.strictEqual(viaPlatform.status, 504)
      }).pipe(lean))

    it.scopedLive("vendor-d's chat through the gateway's client: a silent vendor is a 504 at the stream's start limit and at the answer limit, as through the platform's client", () =>
      Effect.gen(function*() {
        const { base } = yield* serve(() => {})
        const config = { baseUrl: base, apiKey: Redacted.make("k") }
        const options = { timeouts: { open: "150 millis", complete: "150 millis" }, retry: { retries: 0 } } as const
        const request = { model: "m", messages: [{ role: "user" as const, parts: [{ _tag: "Text" as const, text: "x" }] }] }
        const platform = yield* Effect.map(Layer.build(NodeHttpClient.layerUndici), (c) => Context.get(c, HttpClient.HttpClient))
        for (const http of [Upstream.instrument(yield* client), platform]) {
          const chat = yield* VendorDChat.make(config, options).pipe(Effect.provideService(HttpClient.HttpClient, http))
          // Each at its limit (150 ms), not later: a forgotten limit would wait for the test's own timeout.
          let started = Date.now()
          const opening = yield* Effect.flip(chat.stream(request))
          assert.isBelow(Date.now() - started, 1_000)
          assert.strictEqual(opening._tag, "ChatUpstreamError")
          assert.strictEqual((opening as Chat.ChatUpstreamError).status, 504)
          assert.match(opening.message, /did not start streaming in time/)
          started = Date.now()
          const answering = yield* Effect.flip(chat.complete(request))
          assert.isBelow(Date.now() - started, 1_000)
          assert.strictEqual((answering as Chat.ChatUpstreamError).status, 504)
          assert.match(answering.message, /did not answer in time/)
        }
      }).pipe(lean))
  })
})

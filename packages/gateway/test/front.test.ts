/**
 * The gateway's own listener (http/Front.ts) over real sockets: which requests it answers and
 * which it hands to the platform's handler; its answers byte for byte the platform's (status,
 * headers, empty, byte, raw, piped and streamed bodies, a stream failing midway, cookies, a
 * handler's defect); the request
 * in context (headers, URL, search parameters, route, body); a request's scope closed once the
 * answer is written; a client that goes away interrupting the handler. Then the whole gateway
 * served both ways answers the same.
 */
import * as HttpRouter from "@effect/platform/HttpRouter"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import { assert, describe, it } from "@effect/vitest"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import { createServer, type IncomingMessage, request as httpRequest, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { Readable } from "node:stream"
import * as Front from "../src/http/Front.js"
import * as Harness from "./harness.js"

/** A listener on a free loopback port for the scope; its base URL. */
const listen = (listener: (req: IncomingMessage, res: ServerResponse) => void) =>
  Effect.acquireRelease(
    Effect.async<{ readonly base: string; readonly close: () => void }>((resume) => {
      const server = createServer(listener)
      server.on("connection", (s) => server.once("close", () => s.destroy()))
      server.listen(0, "127.0.0.1", () => {
        const { port } = server.address() as AddressInfo
        resume(Effect.succeed({ base: `http://127.0.0.1:${port}`, close: () => server.close() }))
      })
    }),
    (s) => Effect.sync(() => s.close())
  )

/** Status, headers (without `date`) and body text of one request. */
const call = (url: string, init: RequestInit = {}) =>
  Effect.promise(async () => {
    const r = await fetch(url, init)
    const headers = Object.fromEntries([...r.headers].filter(([k]) => k !== "date"))
    return { status: r.status, headers, body: await r.text() }
  })

/** Who served each request: the front, or the fallback (the platform's handler). */
const served: Array<string> = []

/** The routes of the tests, each answering with one kind of body. */
const routes: HttpRouter.HttpRouter<HttpServerResponse.HttpServerResponse, never> = HttpRouter.empty.pipe(
  HttpRouter.post("/json", Effect.succeed(HttpServerResponse.unsafeJson({ a: 1, b: "ü" }, { status: 201, headers: { "x-one": "1" } }))),
  HttpRouter.get("/empty", Effect.succeed(HttpServerResponse.empty({ status: 204, headers: { "x-two": "2" } }))),
  HttpRouter.get("/text", Effect.succeed(HttpServerResponse.text("plain text", { contentType: "text/plain; charset=utf-8" }))),
  HttpRouter.get("/raw", Effect.succeed(HttpServerResponse.raw("raw string", { contentType: "text/x-raw" }))),
  HttpRouter.get("/piped", Effect.sync(() => HttpServerResponse.raw(Readable.from(["one ", "two ", "three"]), { contentType: "text/x-piped" }))),
  HttpRouter.get("/piped-fails", Effect.sync(() => {
    const source = new Readable({ read() {} })
    source.push("one ")
    setTimeout(() => source.destroy(new Error("the source failed")), 20)
    return HttpServerResponse.raw(source, { contentType: "text/x-piped" })
  })),
  HttpRouter.get("/stream", Effect.succeed(HttpServerResponse.stream(Stream.make("a", "b", "c").pipe(Stream.encodeText), { contentType: "text/event-stream" }))),
  HttpRouter.get("/stream-fails", Effect.succeed(HttpServerResponse.stream(Stream.concat(Stream.make("a"), Stream.fail("broken")).pipe(Stream.encodeText)))),
  HttpRouter.get("/cookie", Effect.succeed(HttpServerResponse.unsafeSetCookie(HttpServerResponse.text("c"), "session", "s1", { path: "/" }))),
  HttpRouter.get("/defect", Effect.die(new Error("boom"))),
  HttpRouter.get("/fails-respondably", Effect.fail(HttpServerResponse.text("a teapot", { status: 418 }))),
  HttpRouter.post("/echo", Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const search = yield* HttpServerRequest.ParsedSearchParams
    const route = yield* HttpRouter.RouteContext
    const body = yield* request.text
    return HttpServerResponse.unsafeJson({
      method: request.method,
      url: request.url,
      originalUrl: request.originalUrl,
      header: request.headers["x-probe"] ?? null,
      remote: Option.getOrNull(request.remoteAddress),
      search,
      route: route.route.path,
      params: route.params,
      body
    })
  }).pipe(Effect.orDie)),
  HttpRouter.get("/items/:id", Effect.map(HttpRouter.params, (p) => HttpServerResponse.text(`item ${p.id}`))),
  // A route under a prefix: the router shortens its URL.
  HttpRouter.concat(HttpRouter.empty.pipe(
    HttpRouter.get("/inner", Effect.map(HttpServerRequest.HttpServerRequest, (r) => HttpServerResponse.text(r.url))),
    HttpRouter.prefixAll("/pre")
  ))
)

/** The front over `routes`, recording who served; the platform's handler as its fallback. */
const front = Effect.gen(function*() {
  const platform = yield* NodeHttpServer.makeHandler(routes)
  const listener = yield* Front.make(
    routes,
    (_request, route) => Effect.zipRight(Effect.sync(() => served.push(`front ${route.path}`)), Front.handlerOf(route)),
    (req, res) => {
      served.push(`platform ${req.method} ${req.url}`)
      platform(req, res)
    }
  )
  return yield* listen(listener)
})

/** The platform's handler alone over the same routes. */
const platform = Effect.flatMap(NodeHttpServer.makeHandler(routes), listen)

describe("the front", () => {
  it.scoped("answers static routes itself and hands routes with parameters, HEAD and unknown paths to the platform", () =>
    Effect.gen(function*() {
      const { base } = yield* front
      served.length = 0
      assert.strictEqual((yield* call(`${base}/json`, { method: "POST" })).status, 201)
      assert.strictEqual((yield* call(`${base}/json?x=1`, { method: "POST" })).status, 201)
      assert.strictEqual((yield* call(`${base}/items/7`)).body, "item 7")
      assert.strictEqual((yield* call(`${base}/pre/inner`)).body, "/inner")
      assert.strictEqual((yield* call(`${base}/text`, { method: "HEAD" })).status, 200)
      assert.strictEqual((yield* call(`${base}/nowhere`)).status, 404)
      assert.strictEqual((yield* call(`${base}/json`)).status, 404)
      // Any other spelling of a static path is the router's to match (or not), as before.
      for (const path of ["/JSON", "/json/", "/json;x", "/%6Ason"]) yield* call(`${base}${path}`, { method: "POST" })
      assert.deepStrictEqual(served, [
        "front /json",
        "front /json",
        "platform GET /items/7",
        "platform GET /pre/inner",
        "platform HEAD /text",
        "platform GET /nowhere",
        "platform GET /json",
        "platform POST /JSON",
        "platform POST /json/",
        "platform POST /json;x",
        "platform POST /%6Ason"
      ])
      // A request asking to upgrade the connection is answered as any other (the gateway upgrades none).
      served.length = 0
      const upgraded = yield* Effect.async<number>((resume) => {
        const req = httpRequest(`${base}/json`, { method: "POST", headers: { connection: "upgrade", upgrade: "h2c" } }, (res) => {
          res.resume()
          resume(Effect.succeed(res.statusCode ?? 0))
        })
        req.on("error", () => resume(Effect.succeed(-1)))
        req.end()
      })
      assert.strictEqual(upgraded, 201)
      assert.deepStrictEqual(served, ["front /json"])
    }))

  it.scoped("answers as the platform's server does: status, headers and every kind of body", () =>
    Effect.gen(function*() {
      const ours = yield* front
      const theirs = yield* platform
      const cases: ReadonlyArray<readonly [string, RequestInit]> = [
        ["/json", { method: "POST" }],
        ["/empty", {}],
        ["/text", {}],
        ["/raw", {}],
        ["/piped", {}],
        ["/stream", {}],
        ["/stream-fails", {}],
        ["/cookie", {}],
        ["/defect", {}],
        ["/fails-respondably", {}]
      ]
      served.length = 0
      for (const [path, init] of cases) {
        const a = yield* call(`${ours.base}${path}`, init)
        const b = yield* call(`${theirs.base}${path}`, init)
        assert.deepStrictEqual(a, b, path)
      }
      assert.deepStrictEqual(served, cases.map(([path]) => `front ${path}`))
      assert.strictEqual((yield* call(`${ours.base}/piped`)).body, "one two three")
      assert.strictEqual((yield* call(`${ours.base}/stream`)).body, "abc")
      assert.include((yield* call(`${ours.base}/cookie`)).headers["set-cookie"], "session=s1")
      assert.strictEqual((yield* call(`${ours.base}/defect`)).status, 500)
      assert.deepStrictEqual(yield* Effect.map(call(`${ours.base}/fails-respondably`), (r) => [r.status, r.body]), [418, "a teapot"])
      // A piped source that fails midway: the answer is cut, both ways (the client's read fails).
      for (const base of [ours.base, theirs.base]) {
        const read = yield* Effect.promise(() => fetch(`${base}/piped-fails`).then((r) => r.text()).then(() => "complete", () => "cut"))
        assert.strictEqual(read, "cut", base)
      }
    }))

  it.scoped("gives the handler the request, its search parameters, its route and its body", () =>
    Effect.gen(function*() {
      const ours = yield* front
      const theirs = yield* platform
      const init = { method: "POST", headers: { "x-probe": "p" }, body: "the body" }
      const a = JSON.parse((yield* call(`${ours.base}/echo?x=1&x=2&y=3&constructor=c&__proto__=p`, init)).body)
      const b = JSON.parse((yield* call(`${theirs.base}/echo?x=1&x=2&y=3&constructor=c&__proto__=p`, init)).body)
      assert.deepStrictEqual(a, {
        method: "POST",
        url: "/echo?x=1&x=2&y=3&constructor=c&__proto__=p",
        originalUrl: "/echo?x=1&x=2&y=3&constructor=c&__proto__=p",
        header: "p",
        remote: "127.0.0.1",
        search: JSON.parse('{"x":["1","2"],"y":"3","constructor":"c","__proto__":"p"}'),
        route: "/echo",
        params: {},
        body: "the body"
      })
      assert.deepStrictEqual(a, b)
    }))

  it.scoped("closes each request's scope once its answer is written, and interrupts a handler whose client went away", () =>
    Effect.gen(function*() {
      const forkedStarted = yield* Deferred.make<void>()
      const forkedEnded = yield* Deferred.make<void>()
      const abandoned = yield* Deferred.make<void>()
      const started = yield* Deferred.make<void>()
      const scoped = HttpRouter.empty.pipe(
        // Forks a fiber into the request's scope and answers once it runs: the fiber ends with the scope.
        HttpRouter.get(
          "/forks",
          Effect.forkScoped(Effect.onInterrupt(Effect.zipRight(Deferred.succeed(forkedStarted, undefined), Effect.never), () => Deferred.succeed(forkedEnded, undefined))).pipe(
            Effect.zipRight(Deferred.await(forkedStarted)),
            Effect.as(HttpServerResponse.text("forked"))
          )
        ),
        // Never answers: only the client's going away ends it.
        HttpRouter.get("/hangs", Effect.zipRight(Deferred.succeed(started, undefined), Effect.onInterrupt(Effect.never, () => Deferred.succeed(abandoned, undefined))))
      )
      const fallback = yield* NodeHttpServer.makeHandler(scoped)
      const { base } = yield* listen(yield* Front.make(scoped, (_r, route) => Front.handlerOf(route), fallback))
      assert.strictEqual((yield* call(`${base}/forks`)).body, "forked")
      yield* Deferred.await(forkedEnded)
      const req = httpRequest(`${base}/hangs`)
      req.on("error", () => {})
      req.end()
      yield* Deferred.await(started)
      req.destroy()
      yield* Deferred.await(abandoned)
    }))

  it.scoped("a request with a small body starts once its body is parsed; its client going away, even before it starts, interrupts it", () =>
    Effect.gen(function*() {
      const abandoned = yield* Deferred.make<void>()
      const scoped = HttpRouter.empty.pipe(
        HttpRouter.post("/echo-body", Effect.flatMap(HttpServerRequest.HttpServerRequest, (r) => Effect.map(Effect.orDie(r.text), (t) => HttpServerResponse.text(`got ${t}`)))),
        HttpRouter.post("/hangs", Effect.onInterrupt(Effect.never, () => Deferred.succeed(abandoned, undefined)))
      )
      const fallback = yield* NodeHttpServer.makeHandler(scoped)
      const { base } = yield* listen(yield* Front.make(scoped, (_r, route) => Front.handlerOf(route), fallback))
      const echoed = yield* call(`${base}/echo-body`, { method: "POST", body: "small" })
      assert.strictEqual(echoed.body, "got small")
      // Sent whole, then gone at once: whether the close comes before the handler starts or after,
      // the handler ends interrupted.
      const req = httpRequest(`${base}/hangs`, { method: "POST", headers: { "content-length": "5" } })
      req.on("error", () => {})
      req.end("small", () => req.destroy())
      yield* Deferred.await(abandoned)
    }))
})

const e2 = "/vendors/vendor-a/v1/responses"
const e4 = "/vendors/vendor-b/v1/vid2.5-t2v-preview/generation"
const origin = "https://app.example"

/** Requests on static routes (and, for contrast, one with a parameter and one matching nothing). */
const probes: ReadonlyArray<readonly [string, () => ReturnType<typeof Harness.post>]> = [
  ["healthz", () => Harness.get("/healthz")],
  ["healthz, from an allowed origin", () => HttpClientRequest.setHeader(Harness.get("/healthz"), "origin", origin)],
  ["models", () => Harness.get("/v1/models")],
  ["E2 store:false, the client's request id", () => HttpClientRequest.setHeader(Harness.post(e2, { model: "responses", input: "kites", store: false }), "x-request-id", "client-chosen-id")],
  ["E2 kept", () => Harness.post(e2, { model: "responses", input: "kites" })],
  ["E2 stream, from an allowed origin", () => HttpClientRequest.setHeader(Harness.post(e2, { model: "responses", input: "kites", stream: true }), "origin", origin)],
  ["E2 invalid", () => Harness.post(e2, { model: "responses", input: "x", temprature: 1 })],
  ["E2 unknown token", () => Harness.post(e2, { model: "responses", input: "x" }, "not-a-token")],
  ["E1 stream", () => Harness.post("/v1/chat/completions", { model: "vendor-d/image-model-2.5-flash-image-preview", stream: true, messages: [{ role: "user", content: "a kite" }] })],
  ["E4 create", () => Harness.post(e4, { prompt: "kites" })],
  ["E4 bad duration", () => Harness.post(e4, { prompt: "kites", duration: 7 })],
  ["task, unknown id", () => Harness.get(`${e4}/no-such-task`)],
  ["unknown path", () => Harness.get("/v1/nowhere")]
]

/** Ids, times and durations blanked: what differs between any two answers. */
const blank = (text: string) =>
  text
    .replace(/"(id|created_at|created|request_id|task_id|response_id|completed_at|item_id)":\s*("[^"]*"|\d+)/g, '"$1":_')
    .replace(/(resp|msg|task|rs|chatcmpl)_[A-Za-z0-9]+/g, "$1_…")
    .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, "uuid")
    .replace(/dur=[0-9.]+/g, "dur=_")

/** What must not differ between two servings: status, headers (values blanked as bodies, without `date`) and body. */
const shapeOf = (r: { readonly status: number; readonly headers: Readonly<Record<string, string>>; readonly text: string }) => ({
  status: r.status,
  headers: Object.fromEntries(Object.entries(r.headers).filter(([h]) => h !== "date").sort(([a], [b]) => a.localeCompare(b)).map(([h, v]) => [h, blank(v)])),
  body: blank(r.text)
})

describe("the gateway, served by the front and by the platform's server alone", () => {
  it.scoped("answers every probe the same way", () =>
    Effect.gen(function*() {
      const servings: Array<ReadonlyArray<ReturnType<typeof shapeOf>>> = []
      for (const platformOnly of [true, false]) {
        const context = yield* Layer.build(Harness.layer({ platformOnly, settings: { corsOrigins: [origin] } }))
        servings.push(yield* Effect.forEach(probes, ([, request]) => Effect.map(Harness.send(request()), shapeOf)).pipe(Effect.provide(context)))
      }
      const [platform, front] = servings
      probes.forEach(([name], i) => assert.deepStrictEqual(front![i], platform![i], name))
      // The probes say something: the answers differ from one another, and carry what they should.
      const byName = new Map(probes.map(([name], i) => [name, front![i]!]))
      assert.strictEqual(byName.get("E4 bad duration")!.status, 400)
      assert.strictEqual(byName.get("E2 unknown token")!.status, 401)
      assert.strictEqual(byName.get("E4 create")!.status, 202)
      assert.strictEqual(byName.get("E2 store:false, the client's request id")!.headers["x-request-id"], "client-chosen-id")
      assert.strictEqual(byName.get("healthz, from an allowed origin")!.headers["access-control-allow-origin"], origin)
      assert.strictEqual(byName.get("E2 stream, from an allowed origin")!.headers["access-control-allow-origin"], origin)
      assert.include(byName.get("E2 stream, from an allowed origin")!.body, "response.completed")
    }))
})

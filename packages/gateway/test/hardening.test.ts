/**
 * Issue 16, items 2–8, each over real HTTP with Node's own client (so duplicate headers, chunked
 * bodies and slow sockets are exactly what goes on the wire): nesting depth, event streams that
 * fail, chunked bodies over the limit, two Authorization headers, private data files, request-body
 * bytes in flight per tenant and per process, and the server's header and request timeouts.
 */
import * as HttpServer from "@effect/platform/HttpServer"
import { Registry } from "@genway/registry"
import { assert, describe, layer } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/TestClock"
import * as fs from "node:fs"
import * as http from "node:http"
import * as net from "node:net"
import * as path from "node:path"
import * as Files from "../src/platform/Files.js"
import * as Gateway from "../src/Gateway.js"
import { tooDeep } from "../src/http/Body.js"
import { makeBudget } from "../src/http/Limits.js"
import { ResponsesService } from "../src/responses/Service.js"
import * as Harness from "./harness.js"
import { type Answer, raw } from "./rawHttp.js"
import { validBodies } from "./bodies.js"

const e2 = "/vendors/vendor-a/v1/responses"
const e1 = "/v1/chat/completions"
const pathOf = (endpoint: string) => Registry.entries.find((e) => e.endpoints.includes(endpoint))!.path
const e3 = pathOf("E3")
const e4 = pathOf("E4")
const e5 = pathOf("E5")
const e8 = pathOf("E8")

/** The port of the test server. */
const port = Effect.map(HttpServer.HttpServer, (server) => (server.address as HttpServer.TcpAddress).port)

const json = (token: string = Harness.tokenA) => ({ "content-type": "application/json", authorization: `Bearer ${token}` })

/** An array nested `depth` levels deep. */
const nested = (depth: number): unknown => JSON.parse("[".repeat(depth) + "]".repeat(depth))

describe("hardening", () => {
  layer(Harness.layer())((it) => {
    it.effect("2: JSON nested deeper than 64 levels is a 400 naming the field, on every surface", () =>
      Effect.gen(function*() {
        const p = yield* port
        const deep = nested(3000)
        const cases: ReadonlyArray<readonly [string, Record<string, unknown>, string]> = [
          [e1, { model: "image-model-2.5-flash-image-preview", messages: deep }, "messages"],
          [e2, { model: "responses", input: "hi", metadata: { a: deep } }, "metadata.a"],
          [e2, { model: "responses", input: "hi", tools: deep, store: true }, "tools"],
          [e2, { model: "responses", input: "hi", text: { format: deep }, stream: true }, "text.format"],
          [e2, { model: "responses", input: "hi", reasoning: deep, store: false }, "reasoning"],
          [e3, { ...validBodies.E3, ref_images_url: deep }, "ref_images_url"],
          [e8, { ...validBodies.E8, voice_list: deep }, "voice_list"]
        ]
        for (const [route, body, field] of cases) {
          const answer = yield* raw(p, { path: route, headers: json(), body: [JSON.stringify(body)] })
          assert.strictEqual(answer.status, 400, `${route} ${field}: ${answer.text.slice(0, 200)}`)
          const param = answer.json.error.param as string
          assert.isTrue(param.startsWith(field), `${route}: param ${param} should name ${field}`)
          assert.include(answer.text, "nested deeper than 64")
        }
        // 64 levels in all (the body is the first) are accepted as far as nesting goes.
        const atLimit = yield* raw(p, { path: e4, headers: json(), body: [JSON.stringify({ ...validBodies.E4, extra: nested(63) })] })
        assert.notInclude(atLimit.text, "nested deeper")
        const overLimit = yield* raw(p, { path: e4, headers: json(), body: [JSON.stringify({ ...validBodies.E4, extra: nested(64) })] })
        assert.strictEqual(overLimit.status, 400)
        assert.strictEqual(overLimit.json.error.param, "extra[0][0][0][0][0][0][0]")
      }))

    it("2: the depth check walks without recursion", () => {
      assert.deepStrictEqual(tooDeep(nested(200_000)), Array.from({ length: 64 }, () => 0))
      assert.isUndefined(tooDeep({ a: [{ b: 1 }], c: "x" }))
      assert.deepStrictEqual(tooDeep({ ok: [1], bad: { x: [[[]]] } }, 3), ["bad", "x", 0])
    })

    it.effect("4: a chunked body over the limit is a clean 413 JSON, like one with Content-Length", () =>
      Effect.gen(function*() {
        const p = yield* port
        const chunk = Buffer.alloc(64 * 1024, "a")
        const body = ['{"prompt":"', ...Array.from({ length: 32 }, () => chunk), '"}']
        const chunked = yield* raw(p, { path: e4, headers: json(), body })
        assert.isUndefined(chunked.error, chunked.error)
        assert.strictEqual(chunked.status, 413)
        assert.strictEqual(chunked.json.error.code, 413)
        assert.include(chunked.json.error.detail, "1000000 bytes")
        const length = body.reduce((n, c) => n + Buffer.byteLength(c), 0)
        const declared = yield* raw(p, { path: e4, headers: { ...json(), "content-length": length }, body })
        assert.strictEqual(declared.status, 413)
        // Within the limit, chunked is fine.
        const small = yield* raw(p, { path: e4, headers: json(), body: ['{"prompt":', '"a cat"}'] })
        assert.strictEqual(small.status, 202, small.text)
      }))

    it.effect("5: two Authorization headers are refused with a 400, whichever comes first", () =>
      Effect.gen(function*() {
        const p = yield* port
        for (const pair of [[Harness.tokenA, Harness.tokenB], [Harness.tokenA, "wrong"], ["wrong", Harness.tokenA]]) {
          const answer = yield* raw(p, {
            path: e4,
            headers: { "content-type": "application/json", authorization: pair.map((t) => `Bearer ${t}`) } as unknown as http.OutgoingHttpHeaders,
            body: [JSON.stringify(validBodies.E4)]
          })
          assert.strictEqual(answer.status, 400, answer.text)
          assert.strictEqual(answer.json.error.param, "authorization")
        }
        const openai = yield* raw(p, {
          path: e2,
          headers: { "content-type": "application/json", authorization: [`Bearer ${Harness.tokenA}`, `Bearer ${Harness.tokenA}`] } as unknown as http.OutgoingHttpHeaders,
          body: [JSON.stringify({ model: "responses", input: "hi" })]
        })
        assert.strictEqual(openai.status, 400)
        assert.strictEqual(openai.json.error.type, "invalid_request_error")
        const one = yield* raw(p, { path: e4, headers: json(), body: [JSON.stringify(validBodies.E4)] })
        assert.strictEqual(one.status, 202)
      }))
  })

  const dataDir = path.join(Harness.tempDir(), "data")
  // Results as files (a small one is kept in its database row by default): their mode is checked here.
  layer(Harness.layer({ settings: { dataDir, mediaInlineBytes: 0 } }))((it) => {
    it.effect("6: the data folder is 0700; the database, media and spooled inputs are 0600", () =>
      Effect.gen(function*() {
        const p = yield* port
        const mode = (file: string) => fs.statSync(file).mode & 0o777
        assert.strictEqual(mode(dataDir), 0o700)
        assert.strictEqual(mode(path.join(dataDir, "media")), 0o700)
        assert.strictEqual(mode(path.join(dataDir, "genway.db")), 0o600)
        const created = yield* raw(p, { path: e5, headers: json(), body: [JSON.stringify(validBodies.E5)] })
        assert.strictEqual(created.status, 202, created.text)
        yield* TestClock.adjust("5 seconds")
        yield* Harness.work
        yield* TestClock.adjust("5 seconds")
        yield* Harness.work
        const files: Array<string> = []
        const walk = (dir: string) => {
          for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
            const full = path.join(dir, entry.name)
            if (entry.isDirectory()) {
              assert.strictEqual(mode(full), 0o700, full)
              walk(full)
            } else files.push(full)
          }
        }
        walk(dataDir)
        assert.isTrue(files.some((f) => f.includes(`${path.sep}media${path.sep}`)), `no media among ${files.join(", ")}`)
        assert.isTrue(files.some((f) => f.endsWith("-wal")))
        for (const file of files) assert.strictEqual(mode(file), 0o600, file)
      }))

    it("6: an existing database file created 0644 is made 0600", () => {
      const file = path.join(Harness.tempDir(), "old.db")
      fs.writeFileSync(file, "", { mode: 0o644 })
      fs.chmodSync(file, 0o644)
      Files.privateFile(file)
      assert.strictEqual(fs.statSync(file).mode & 0o777, 0o600)
    })
  })

  layer(Harness.layer({ settings: { tenantBodyBytesInFlight: 1_500_000, bodyBytesInFlight: 1_800_000 } }))((it) => {
    it.effect("7: request-body bytes in flight are bounded per tenant (429) and per process (503), with Retry-After", () =>
      Effect.gen(function*() {
        const p = yield* port
        let release!: () => void
        const hold = new Promise<void>((r) => (release = r))
        // Tenant A holds 1 MB in flight: a body still arriving.
        const holding = yield* Effect.fork(raw(p, {
          path: e5,
          headers: json(Harness.tokenA),
          body: ['{"prompt":"', Buffer.alloc(1_000_000, "a")],
          hold
        }))
        const filler = (bytes: number) => JSON.stringify({ prompt: "x".repeat(bytes - 14) })
        // Until the server has counted all of A's bytes (> 1,000,000), a second request of A passes
        // (1,000,000 + 500,000 fits in 1,500,000); then it is a 429.
        let tenant: Answer | undefined
        const deadline = Date.now() + 10_000
        while (Date.now() < deadline) {
          const answer = yield* raw(p, { path: e5, headers: json(Harness.tokenA), body: [filler(500_000)] })
          if (answer.status === 429) {
            tenant = answer
            break
          }
          yield* Effect.promise(() => new Promise((r) => setTimeout(r, 20)))
        }
        assert.isDefined(tenant, "tenant A was never limited")
        assert.strictEqual(tenant!.headers["retry-after"], "1")
        assert.strictEqual(tenant!.json.error.code, 429)
        // Another tenant within its own budget but over the process's: 503.
        const process = yield* raw(p, { path: e5, headers: { ...json(Harness.tokenB), "content-length": 900_000 }, body: [filler(900_000)] })
        assert.strictEqual(process.status, 503, process.text.slice(0, 200))
        assert.strictEqual(process.headers["retry-after"], "1")
        // Chunked bodies are counted as they arrive.
        const chunked = yield* raw(p, { path: e5, headers: json(Harness.tokenB), body: [filler(400_000), Buffer.alloc(500_000, " ")] })
        assert.strictEqual(chunked.status, 503)
        // Within both budgets: served.
        const fits = yield* raw(p, { path: e4, headers: json(Harness.tokenB), body: [JSON.stringify(validBodies.E4)] })
        assert.strictEqual(fits.status, 202, fits.text)
        // Once A's request is answered, its bytes are free again.
        release()
        const done = yield* Effect.fromFiber(holding)
        assert.strictEqual(done.status, 400)
        const again = yield* raw(p, { path: e5, headers: json(Harness.tokenA), body: [filler(800_000)] })
        assert.strictEqual(again.status, 400, again.text.slice(0, 200))
      }), 30_000)

    it("7: a request alone is always admitted; reservations are released", () => {
      const budget = makeBudget(100, 50)
      assert.isUndefined(budget.reserve("a", 80, 0))
      assert.strictEqual(budget.wouldExceed("a", 1), "tenant")
      assert.strictEqual(budget.wouldExceed("b", 30), "process")
      assert.isUndefined(budget.wouldExceed("b", 20))
      budget.release("a", 80)
      assert.isUndefined(budget.wouldExceed("a", 50))
    })
  })
})

/**
 * Opens a connection to the gateway on `port`, writes `head`, then one `drip` every 50 ms; answers
 * how long until the gateway closed the connection and what it sent back (gives up after 10 s).
 */
const trickle = (port: number, head: string, drip: string) =>
  new Promise<{ readonly closedAfterMs: number; readonly received: string }>((resolve) => {
    const started = Date.now()
    let received = ""
    const socket = net.connect(port, "127.0.0.1")
    socket.setEncoding("utf8")
    socket.on("data", (d: string) => (received += d))
    socket.write(head)
    const timer = setInterval(() => socket.write(drip), 50)
    const giveUp = setTimeout(() => socket.destroy(), 10_000)
    socket.on("error", () => {})
    socket.on("close", () => {
      clearInterval(timer)
      clearTimeout(giveUp)
      resolve({ closedAfterMs: Date.now() - started, received })
    })
  })

/** A gateway served by `Gateway.http` (the production server), whose E2 streams can be made to fail. */
const productionServer = Layer.unwrapEffect(Effect.map(Effect.promise(Harness.freePort), (p) => {
  const settings = Harness.settingsOn(p, {
    headersTimeoutMs: 300,
    requestTimeoutMs: 600
  })
  const services = Gateway.services(Effect.succeed(new Map()), Registry.layer(Registry.entries))
  const faulty = Layer.effect(
    ResponsesService,
    Effect.map(ResponsesService, (real) => ({
      ...real,
      stream: (request: Parameters<typeof real.stream>[0]) => {
        const fault = (request.body["metadata"] as Record<string, string> | undefined)?.["fault"]
        if (fault === "before") return Effect.succeed(Stream.die(new Error("boom before")))
        if (fault === "after") {
          return Effect.map(real.stream(request), (s) => Stream.concat(Stream.take(s, 2), Stream.die(new Error("boom after"))))
        }
        if (fault === "empty") return Effect.succeed(Stream.empty)
        return real.stream(request)
      }
    }))
  ).pipe(Layer.provide(services))
  return Gateway.http.pipe(
    Layer.provideMerge(Layer.merge(services, faulty)),
    Layer.provideMerge(settings),
    Layer.merge(Layer.succeed(Port, p))
  )
}))

class Port extends Effect.Tag("test/Port")<Port, number>() {}

describe("hardening on the production server", () => {
  layer(productionServer)((it) => {
    it.effect("3: an E2 stream failing before its first event is an HTTP error; after it, an error event then the end", () =>
      Effect.gen(function*() {
        const p = yield* Port
        const body = (fault: string) => [JSON.stringify({ model: "responses", input: "hi", stream: true, metadata: { fault } })]
        for (const fault of ["before", "empty"]) {
          const before = yield* raw(p, { path: e2, headers: json(), body: body(fault) })
          assert.strictEqual(before.status, 500, `${fault}: ${before.status} ${before.text}`)
          assert.strictEqual(before.json.error.type, "api_error")
          assert.notInclude(before.text, "boom")
        }
        const after = yield* raw(p, { path: e2, headers: json(), body: body("after") })
        assert.strictEqual(after.status, 200)
        const events = after.text.split("\n").filter((l) => l.startsWith("event: ")).map((l) => l.slice(7))
        assert.strictEqual(events.length, 3, after.text)
        assert.strictEqual(events.at(-1), "error")
        const last = JSON.parse(after.text.trim().split("\n").filter((l) => l.startsWith("data: ")).at(-1)!.slice(6))
        assert.strictEqual(last.code, "internal_error")
        assert.strictEqual(last.sequence_number, 2)
        assert.notInclude(after.text, "boom")
        const fine = yield* raw(p, { path: e2, headers: json(), body: body("none") })
        assert.strictEqual(fine.status, 200)
        assert.include(fine.text, "event: response.completed")
      }))

    it.effect("8: a client sending its headers a byte at a time is cut off after the header timeout", () =>
      Effect.gen(function*() {
        const p = yield* Port
        const outcome = yield* Effect.promise(() => trickle(p, "GET /healthz HTTP/1.1\r\nHost: gateway\r\nX-Slow: ", "a"))
        assert.isBelow(outcome.closedAfterMs, 5_000)
        assert.include(outcome.received, "408")
      }), 20_000)

    it.effect("8: a client trickling its body is cut off after the request timeout", () =>
      Effect.gen(function*() {
        const p = yield* Port
        const head = `POST ${e4} HTTP/1.1\r\nHost: gateway\r\nAuthorization: Bearer ${Harness.tokenA}\r\n` +
          "Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"
        const outcome = yield* Effect.promise(() => trickle(p, head, " "))
        assert.isBelow(outcome.closedAfterMs, 5_000)
        assert.include(outcome.received, "408")
      }), 20_000)
  })
})

/**
 * A request body that arrived with its head (http/Body.ts, `readBuffered`): once Node has parsed
 * the message to its end, the body is taken from the stream's buffer at once, with the limits of a
 * body read as it arrives — the route's size (413), the tenant's and the process's bytes in flight
 * (429, 503), the reservation released when the answer closes. A body still arriving is left to
 * the streamed read.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import * as net from "node:net"
import { readBuffered } from "../src/http/Body.js"
import { HttpError } from "../src/http/Errors.js"
import { type Budget, makeBudget } from "../src/http/Limits.js"

type Seen = {
  readonly req: http.IncomingMessage
  readonly res: http.ServerResponse
}

/**
 * A server whose first request is handed to the test once Node has parsed it to its end (`whole`)
 * or at once (`!whole`); `raw` is written on one connection as it is given.
 */
const exchange = (raw: ReadonlyArray<string>, whole: boolean) =>
  Effect.acquireRelease(
    Effect.async<{ readonly seen: Seen; readonly server: http.Server; readonly socket: net.Socket }>((resume) => {
      let socket: net.Socket
      const server = http.createServer((req, res) => {
        const hand = () => resume(Effect.succeed({ seen: { req, res }, server, socket }))
        if (!whole) return hand()
        // Waits for the parser to reach the message's end, reading nothing from the stream.
        const check = () => (req.complete ? hand() : setImmediate(check))
        check()
      })
      server.listen(0, "127.0.0.1", () => {
        socket = net.connect((server.address() as AddressInfo).port, "127.0.0.1", () => {
          for (const piece of raw) socket.write(piece)
        })
        socket.on("error", () => {})
      })
    }),
    ({ server, socket }) =>
      Effect.async<void>((resume) => {
        socket.destroy()
        server.close(() => resume(Effect.void))
        server.closeAllConnections()
      })
  )

const head = (length: number) => `POST /x HTTP/1.1\r\nhost: t\r\ncontent-type: application/json\r\ncontent-length: ${length}\r\n\r\n`

const statusOf = (result: Buffer | HttpError | undefined) => (result instanceof HttpError ? result.status : undefined)

const read = (seen: Seen, maxBytes: number, budget?: Budget, tenant?: string) => readBuffered(seen.req, seen.res, maxBytes, budget, tenant)

const bytesOf = (result: Buffer | HttpError | undefined) => (Buffer.isBuffer(result) ? result : undefined)

describe("a body that came with its head", () => {
  it.scoped("is taken whole from the buffer, and the stream then ends", () =>
    Effect.gen(function*() {
      const body = JSON.stringify({ model: "m", input: "a paper boat" })
      const { seen } = yield* exchange([head(body.length) + body], true)
      assert.strictEqual(bytesOf(read(seen, 1_000))?.toString("utf8"), body)
      // Nothing is left to read: the stream ends by itself.
      yield* Effect.async<void>((resume) => {
        if (seen.req.readableEnded) return resume(Effect.void)
        seen.req.once("end", () => resume(Effect.void))
      })
      assert.strictEqual(seen.req.readableLength, 0)
    }))

  it.scoped("an empty body is an empty buffer", () =>
    Effect.gen(function*() {
      const { seen } = yield* exchange([head(0)], true)
      assert.strictEqual(bytesOf(read(seen, 1_000))?.length, 0)
    }))

  it.scoped("over the route's size is a 413", () =>
    Effect.gen(function*() {
      const body = JSON.stringify({ input: "x".repeat(200) })
      const { seen } = yield* exchange([head(body.length) + body], true)
      assert.strictEqual(statusOf(read(seen, 100)), 413)
    }))

  it.scoped("counts against the bytes in flight: 429 over the tenant's, 503 over the process's, released when the answer closes", () =>
    Effect.gen(function*() {
      const body = "x".repeat(60)
      // Tenant a already holds 50 of its 100; the process 50 of its 150.
      const tenantFull = makeBudget(150, 100)
      assert.isUndefined(tenantFull.reserve("a", 50, 0))
      const first = yield* exchange([head(body.length) + body], true)
      assert.strictEqual(statusOf(read(first.seen, 1_000, tenantFull, "a")), 429)
      // Tenant b holds 50 of the process's 100: a second tenant's 60 passes the process's bound.
      const processFull = makeBudget(100, 1_000)
      assert.isUndefined(processFull.reserve("b", 50, 0))
      const second = yield* exchange([head(body.length) + body], true)
      assert.strictEqual(statusOf(read(second.seen, 1_000, processFull, "c")), 503)
      // Admitted: its 60 bytes are held until its answer closes.
      const budget = makeBudget(1_000, 100)
      const third = yield* exchange([head(body.length) + body], true)
      assert.strictEqual(bytesOf(read(third.seen, 1_000, budget, "a"))?.length, 60)
      assert.strictEqual(budget.wouldExceed("a", 50), "tenant")
      yield* Effect.async<void>((resume) => {
        third.seen.res.once("close", () => resume(Effect.void))
        third.seen.res.end()
      })
      assert.isUndefined(budget.wouldExceed("a", 50))
    }))

  it.scoped("a body still arriving is left to the streamed read, its stream untouched", () =>
    Effect.gen(function*() {
      const body = JSON.stringify({ input: "half" })
      const { seen } = yield* exchange([head(body.length) + body.slice(0, 5)], false)
      assert.isFalse(seen.req.complete)
      assert.isUndefined(read(seen, 1_000))
      assert.isNull(seen.req.readableFlowing)
    }))
})

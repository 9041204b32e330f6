/**
 * The vendor-neutral part of an emulator: a node:http server on 127.0.0.1 (port 0) tied to a
 * Scope, a request log tests can wait on, per-kind fault queues, and replies that can be
 * delayed, garbled or cut off.
 */
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"

/** One request as the emulator saw it. `body` is the parsed JSON, or the raw text when it is not JSON. */
export interface LoggedRequest<K extends string> {
  readonly kind: K | "other"
  readonly method: string
  readonly path: string
  readonly query: Readonly<Record<string, string>>
  /** Header names in lower case. */
  readonly headers: Readonly<Record<string, string>>
  readonly body: unknown
}

/** What a route answers. */
export type Reply =
  | { readonly _tag: "Json"; readonly status: number; readonly body: unknown; readonly headers?: Readonly<Record<string, string>> }
  | { readonly _tag: "Bytes"; readonly status: number; readonly bytes: Uint8Array; readonly contentType: string }
  | { readonly _tag: "Redirect"; readonly location: string }
  /** Cut the connection without an answer. */
  | { readonly _tag: "Drop" }
  /** A 200 whose JSON body is cut off mid-document. */
  | { readonly _tag: "Garbled" }

/** The handler of one request: classified, logged and body-parsed already. */
export type Handler<K extends string> = (request: LoggedRequest<K>) => Promise<Reply> | Reply

/** The log, fault queues and waiters of one emulator. */
export class Recorder<K extends string, F> {
  readonly log: Array<LoggedRequest<K>> = []
  private readonly faults = new Map<K, Array<F>>()
  private waiters: Array<{ readonly count: number; readonly wake: () => void }> = []

  record(request: LoggedRequest<K>): void {
    this.log.push(request)
    const ready = this.waiters.filter((w) => this.log.length >= w.count)
    this.waiters = this.waiters.filter((w) => this.log.length < w.count)
    for (const w of ready) w.wake()
  }

  /** Queues `fault` for the next `times` requests of `kind`. */
  inject(kind: K, fault: F, times: number): void {
    const queue = this.faults.get(kind) ?? []
    for (let i = 0; i < times; i++) queue.push(fault)
    this.faults.set(kind, queue)
  }

  /** The fault for this request of `kind`, if one is queued. */
  take(kind: K | "other"): F | undefined {
    if (kind === "other") return undefined
    return this.faults.get(kind as K)?.shift()
  }

  /** Completes once the log holds at least `count` requests. */
  awaitRequests(count: number): Effect.Effect<void> {
    return Effect.async<void>((resume) => {
      if (this.log.length >= count) return resume(Effect.void)
      const waiter = { count, wake: () => resume(Effect.void) }
      this.waiters.push(waiter)
      return Effect.sync(() => {
        this.waiters = this.waiters.filter((w) => w !== waiter)
      })
    })
  }
}

const readBody = (req: http.IncomingMessage): Promise<string> =>
  new Promise((resolve, reject) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")))
    req.on("error", reject)
  })

const flattenHeaders = (headers: http.IncomingHttpHeaders): Record<string, string> => {
  const out: Record<string, string> = {}
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined) out[name.toLowerCase()] = Array.isArray(value) ? value.join(", ") : value
  }
  return out
}

/** A running server: its origin (`http://127.0.0.1:<port>`) and a way to wait real time that ends with it. */
export interface Server {
  readonly origin: string
  /** Resolves after `ms` real milliseconds, or never once the server closed. */
  readonly wait: (ms: number) => Promise<void>
}

/**
 * Serves `handler` on 127.0.0.1 until the scope closes; on close every open connection is cut,
 * so pending slow answers never outlive the test.
 */
export const serve = <K extends string>(
  recorder: Recorder<K, unknown>,
  classify: (method: string, path: string) => K | "other",
  handler: Handler<K>
): Effect.Effect<Server, never, Scope.Scope> =>
  Effect.gen(function*() {
    const timers = new Set<NodeJS.Timeout>()
    const write = (res: http.ServerResponse, reply: Reply): void => {
      // The client may have given up (timeout) while a slow answer was pending.
      if (res.destroyed || res.socket === null || res.socket.destroyed) return
      switch (reply._tag) {
        case "Json": {
          const text = JSON.stringify(reply.body)
          res.writeHead(reply.status, { "content-type": "application/json", ...reply.headers })
          res.end(text)
          return
        }
        case "Bytes":
          res.writeHead(reply.status, { "content-type": reply.contentType, "content-length": reply.bytes.length })
          res.end(reply.bytes)
          return
        case "Redirect":
          res.writeHead(302, { location: reply.location })
          res.end()
          return
        case "Drop":
          res.socket?.destroy()
          return
        case "Garbled":
          res.writeHead(200, { "content-type": "application/json" })
          res.end('{"request_id": "9f2c", "resu')
          return
      }
    }
    const server = http.createServer((req, res) => {
      res.on("error", () => undefined)
      const run = async () => {
        const url = new URL(req.url ?? "/", "http://emulator")
        const text = await readBody(req)
        let body: unknown = undefined
        if (text !== "") {
          try {
            body = JSON.parse(text)
          } catch {
            body = text
          }
        }
        const method = req.method ?? "GET"
        const logged: LoggedRequest<K> = {
          kind: classify(method, url.pathname),
          method,
          path: url.pathname,
          query: Object.fromEntries(url.searchParams),
          headers: flattenHeaders(req.headers),
          body
        }
        recorder.record(logged)
        write(res, await handler(logged))
      }
      run().catch(() => res.socket?.destroy())
    })
    yield* Effect.acquireRelease(
      Effect.async<void>((resume) => {
        server.listen(0, "127.0.0.1", () => resume(Effect.void))
      }),
      () =>
        Effect.async<void>((resume) => {
          for (const t of timers) clearTimeout(t)
          timers.clear()
          server.closeAllConnections()
          server.close(() => resume(Effect.void))
        })
    )
    const { port } = server.address() as AddressInfo
    return {
      origin: `http://127.0.0.1:${port}`,
      wait: (ms: number) =>
        new Promise<void>((resolve) => {
          const t = setTimeout(() => {
            timers.delete(t)
            resolve()
          }, ms)
          timers.add(t)
        })
    }
  })

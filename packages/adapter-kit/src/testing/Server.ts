/**
 * The vendor-neutral part of an emulator: a node:http server on 127.0.0.1 (a free port) tied to a
 * Scope, a request log tests can wait on, per-kind fault queues, replies that can be delayed,
 * garbled or cut off, and `emulate`, which applies the transport faults every task emulator
 * offers (`Slow`, `Drop`, `MalformedJson`) the same way. What a vendor answers stays in its emulator.
 */
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import * as Duration from "effect/Duration"
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
  | { readonly _tag: "Garbled"; readonly text?: string }

/** The handler of one request: classified, logged and body-parsed already. */
export type Handler<K extends string> = (request: LoggedRequest<K>) => Promise<Reply> | Reply

/** An append-only list that effects can wait on. */
export class Journal<A> {
  readonly entries: Array<A> = []
  private readonly waiters = new Set<() => boolean>()

  /** Appends `entry` and wakes the waiters it satisfies. */
  add(entry: A): void {
    this.entries.push(entry)
    for (const wake of [...this.waiters]) wake()
  }

  /** Every entry, oldest first. */
  readonly all: Effect.Effect<ReadonlyArray<A>> = Effect.sync(() => [...this.entries])

  /** How many entries there are. */
  readonly size: Effect.Effect<number> = Effect.sync(() => this.entries.length)

  /** Completes once at least `count` entries were added. */
  readonly awaitCount = (count: number): Effect.Effect<void> =>
    Effect.async<void>((resume) => {
      const check = () => {
        if (this.entries.length < count) return false
        this.waiters.delete(check)
        resume(Effect.void)
        return true
      }
      if (check()) return
      this.waiters.add(check)
      return Effect.sync(() => void this.waiters.delete(check))
    })
}

/** What every emulator offers its tests. */
export interface Controls<K extends string, F, R = LoggedRequest<K>> {
  /** Every request received, oldest first. */
  readonly requests: Effect.Effect<ReadonlyArray<R>>
  /** How many creates were accepted (a task was made), including ones whose answer was then lost. */
  readonly acceptedSubmits: Effect.Effect<number>
  /** Applies `fault` to the next `times` (default 1) requests of `kind`, after earlier injections. */
  readonly inject: (kind: K, fault: F, times?: number) => Effect.Effect<void>
  /** Completes once at least `count` requests were received. */
  readonly awaitRequests: (count: number) => Effect.Effect<void>
}

/** The request log, accepted creates and fault queues of one emulator; `controls` is their API for tests. */
export class Recorder<K extends string, F, R = LoggedRequest<K>> {
  private readonly log = new Journal<R>()
  private readonly faults = new Map<string, Array<F>>()
  private accepted = 0

  /** Logs one request. */
  record(request: R): void {
    this.log.add(request)
  }

  /** Counts one accepted create. */
  accept(): void {
    this.accepted++
  }

  /** The fault for this request of `kind`, if one is queued. */
  take(kind: string): F | undefined {
    return this.faults.get(kind)?.shift()
  }

  /** Every request received, oldest first. */
  readonly requests: Effect.Effect<ReadonlyArray<R>> = this.log.all

  /** Queues `fault` for the next `times` (default 1) requests of `kind`, after earlier injections. */
  readonly inject = (kind: K, fault: F, times = 1): Effect.Effect<void> =>
    Effect.sync(() => {
      const queue = this.faults.get(kind) ?? []
      for (let i = 0; i < times; i++) queue.push(fault)
      this.faults.set(kind, queue)
    })

  /** Completes once at least `count` requests were received. */
  readonly awaitRequests = (count: number): Effect.Effect<void> => this.log.awaitCount(count)

  /** The tests' view: `requests`, `acceptedSubmits`, `inject`, `awaitRequests`. */
  readonly controls: Controls<K, F, R> = {
    requests: this.requests,
    acceptedSubmits: Effect.sync(() => this.accepted),
    inject: this.inject,
    awaitRequests: this.awaitRequests
  }
}

/** Real-time timers of an emulator (held answers, slow streams), all cancelled when it stops. */
export class Timers {
  private readonly pending = new Set<NodeJS.Timeout>()

  /** Runs `f` after `ms` real milliseconds, unless the timers are cleared first. */
  after(ms: number, f: () => void): void {
    const timer = setTimeout(() => {
      this.pending.delete(timer)
      f()
    }, ms)
    this.pending.add(timer)
  }

  /** Resolves after `ms` real milliseconds, or never once the timers are cleared. */
  wait(ms: number): Promise<void> {
    return new Promise((resolve) => this.after(ms, resolve))
  }

  /** Cancels every pending timer. */
  clear(): void {
    for (const timer of this.pending) clearTimeout(timer)
    this.pending.clear()
  }
}

/** A request read whole: its bytes, and its body parsed as JSON (else the text; `undefined` when empty). */
export interface Incoming {
  readonly method: string
  readonly url: URL
  /** Header names in lower case, repeated headers joined with ", ". */
  readonly headers: Record<string, string>
  readonly raw: Buffer
  readonly body: unknown
}

/** Reads a request whole. */
export const readIncoming = async (req: http.IncomingMessage): Promise<Incoming> => {
  const chunks: Array<Buffer> = []
  for await (const chunk of req) chunks.push(chunk as Buffer)
  const raw = Buffer.concat(chunks)
  const headers: Record<string, string> = {}
  for (const [name, value] of Object.entries(req.headers)) {
    if (value !== undefined) headers[name.toLowerCase()] = Array.isArray(value) ? value.join(", ") : value
  }
  let body: unknown = undefined
  if (raw.length > 0) {
    const text = raw.toString("utf8")
    try {
      body = JSON.parse(text)
    } catch {
      body = text
    }
  }
  return { method: req.method ?? "GET", url: new URL(req.url ?? "/", "http://emulator"), headers, raw, body }
}

/**
 * Listens on 127.0.0.1 (a free port) until the scope closes, then cancels `timers` and cuts every
 * open connection, so pending slow answers never outlive the test. Returns the server's origin.
 */
export const listen = (server: http.Server, timers?: Timers): Effect.Effect<string, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.async<string>((resume) => {
      server.listen(0, "127.0.0.1", () => resume(Effect.succeed(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)))
    }),
    () =>
      Effect.async<void>((resume) => {
        timers?.clear()
        server.closeAllConnections()
        server.close(() => resume(Effect.void))
      })
  )

/**
 * Writes `reply`, unless the client gave up (a timeout, or it died) while a slow answer was
 * pending; says whether the answer went out.
 */
export const write = (res: http.ServerResponse, reply: Reply): boolean => {
  if (res.destroyed || res.socket === null || res.socket.destroyed) return false
  switch (reply._tag) {
    case "Json": {
      const text = JSON.stringify(reply.body)
      res.writeHead(reply.status, { "content-type": "application/json", ...reply.headers })
      res.end(text)
      return true
    }
    case "Bytes":
      res.writeHead(reply.status, { "content-type": reply.contentType, "content-length": reply.bytes.length })
      res.end(reply.bytes)
      return true
    case "Redirect":
      res.writeHead(302, { location: reply.location })
      res.end()
      return true
    case "Drop":
      res.socket?.destroy()
      return true
    case "Garbled":
      res.writeHead(200, { "content-type": "application/json" })
      res.end(reply.text ?? '{"request_id": "9f2c", "resu')
      return true
  }
}

/** A running server: its origin (`http://127.0.0.1:<port>`) and a way to wait real time that ends with it. */
export interface Server<K extends string = string> {
  readonly origin: string
  /** Resolves after `ms` real milliseconds, or never once the server closed. */
  readonly wait: (ms: number) => Promise<void>
  /**
   * Requests whose answer found the client gone (it timed out, or its process died, while the
   * answer was held back), oldest first: the calls a client abandoned midway.
   */
  readonly unanswered: Effect.Effect<ReadonlyArray<LoggedRequest<K>>>
}

/** Serves `handler` on 127.0.0.1 until the scope closes, logging every request with `recorder`. */
export const serve = <K extends string>(
  recorder: Pick<Recorder<K, unknown>, "record">,
  classify: (method: string, path: string) => K | "other",
  handler: Handler<K>
): Effect.Effect<Server<K>, never, Scope.Scope> =>
  Effect.gen(function*() {
    const timers = new Timers()
    const unanswered = new Journal<LoggedRequest<K>>()
    const server = http.createServer((req, res) => {
      res.on("error", () => undefined)
      const run = async () => {
        const incoming = await readIncoming(req)
        const logged: LoggedRequest<K> = {
          kind: classify(incoming.method, incoming.url.pathname),
          method: incoming.method,
          path: incoming.url.pathname,
          query: Object.fromEntries(incoming.url.searchParams),
          headers: incoming.headers,
          body: incoming.body
        }
        recorder.record(logged)
        if (!write(res, await handler(logged))) unanswered.add(logged)
      }
      run().catch(() => res.socket?.destroy())
    })
    const origin = yield* listen(server, timers)
    return { origin, wait: (ms: number) => timers.wait(ms), unanswered: unanswered.all }
  })

/** Misbehaviours every task emulator offers, with the same meaning. */
export type TransportFault =
  /** The normal answer, after `delay` of real time. */
  | { readonly _tag: "Slow"; readonly delay: Duration.DurationInput }
  /** The connection is cut; with `afterAccept`, a submit is accepted (and counted) first. */
  | { readonly _tag: "Drop"; readonly afterAccept?: boolean }
  /** A 200 whose JSON is cut off; a submit is accepted (and counted) first. */
  | { readonly _tag: "MalformedJson" }

/** A task emulator's routes: how requests are classified, refused by a fault, and answered. */
export interface Routes<K extends string, F extends { readonly _tag: string }> {
  readonly classify: (method: string, path: string) => K | "other"
  /** The vendor's answer to a fault that stands in for the normal one (an error status); `undefined` for any other fault. */
  readonly refuse: (fault: F) => Reply | undefined
  /** The normal answer by request kind; `fault` is the one taken for this request, for faults that shape the answer. */
  readonly answer: { readonly [Kind in K | "other"]: (request: LoggedRequest<K>, fault: F | undefined) => Reply }
}

/**
 * How long every request of a kind is held before the vendor acts on it and answers (real time):
 * a slow vendor, for tests where something must happen while calls are in flight. A create held
 * back is made at the end of its wait, even when its client has gone by then.
 */
export type Latency<K extends string> = Partial<Readonly<Record<K, Duration.DurationInput>>>

/**
 * Serves a task emulator, logging with `recorder`: each request waits out its kind's `latency`,
 * then takes the next fault queued for its kind; a refusing fault answers in the request's stead,
 * `Slow` holds the request back further, `Drop` cuts the connection (after the normal answer was
 * made, with `afterAccept`), `MalformedJson` garbles that answer.
 */
export const emulate = <K extends string, F extends { readonly _tag: string }>(
  recorder: Recorder<K, F>,
  routes: Routes<K, F>,
  latency: Latency<K> = {}
): Effect.Effect<Server<K>, never, Scope.Scope> =>
  Effect.gen(function*() {
    const server: Server<K> = yield* serve<K>(recorder, routes.classify, async (request) => {
      const held = request.kind === "other" ? undefined : latency[request.kind]
      if (held !== undefined) await server.wait(Duration.toMillis(held))
      const fault = recorder.take(request.kind)
      const refused = fault === undefined ? undefined : routes.refuse(fault)
      if (refused !== undefined) return refused
      // Only the tags of `TransportFault` are looked at here.
      const transport = fault as TransportFault | undefined
      if (transport?._tag === "Drop" && transport.afterAccept !== true) return { _tag: "Drop" }
      if (transport?._tag === "Slow") await server.wait(Duration.toMillis(transport.delay))
      const reply = routes.answer[request.kind](request, fault)
      if (transport?._tag === "Drop") return { _tag: "Drop" }
      if (transport?._tag === "MalformedJson") return { _tag: "Garbled" }
      return reply
    })
    return server
  })

/** When an emulated task reports its final state. */
export interface Completion {
  /** On this poll (1-based); default 3 (first state, running state, then final), or never when only `completeAfter` is given. */
  readonly completeAfterPolls?: number
  /** Alternatively or additionally, this long after its creation (Effect clock). */
  readonly completeAfter?: Duration.DurationInput
}

/** Settings every task emulator has; every field has a default. */
export interface TaskOptions extends Completion {
  /** Hand out media URLs that answer with a redirect to the bytes. */
  readonly redirectMedia?: boolean
  /** Hold every create, task query or media download this long before acting on it (default: none). */
  readonly latency?: Latency<"submit" | "poll" | "download">
  /**
   * Hand out result URLs on this origin (`http://host:port`) instead of the emulator's own, with
   * the same paths: another server serves the bytes (a benchmark's endless video, say).
   */
  readonly mediaOrigin?: string
}

/** Whether a task is due to finish: polled often enough, or old enough at `now`. */
export const isDue = (completion: Completion) => {
  const afterMs = completion.completeAfter !== undefined ? Duration.toMillis(completion.completeAfter) : undefined
  const afterPolls = completion.completeAfterPolls ?? (afterMs !== undefined ? Infinity : 3)
  return (task: { readonly polls: number; readonly createdAt: number }, now: number): boolean =>
    task.polls >= afterPolls || (afterMs !== undefined && now - task.createdAt >= afterMs)
}

/** A `Retry-After` header when `seconds` is given. */
export const retryAfterHeader = (seconds: number | undefined): Record<string, string> =>
  seconds !== undefined ? { "retry-after": String(seconds) } : {}

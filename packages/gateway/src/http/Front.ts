/**
 * The gateway's own request listener, in front of the platform's server.
 *
 * A request whose method and path name one of the router's static routes exactly (every create
 * route of the registry, `/healthz`, `/v1/models`, `/metrics`, …) is answered here: its handler
 * runs as one Effect program, forked on a runtime prepared once, and its response is written to
 * Node's response directly. Every other request (routes with parameters, `HEAD`, `OPTIONS`,
 * paths that match nothing) goes to the platform's handler (`NodeHttpServer.makeHandler`) unchanged.
 *
 * Why: on a trivial route the platform's server and router cost about 117 Effect operations and
 * two copies of the fiber's context per request, more than half the gateway's CPU for a route
 * like `/healthz` (bench/JOURNAL.md, "The front"). The program run here is the same application (request
 * id, CORS, observation, the route's error surface); only the framing around it is ours:
 *
 * - the handler runs interruptible inside an uninterruptible program, and a client that goes away
 *   before the answer ends interrupts it, as the platform's router and server do;
 * - the response is written as the platform's Node server writes it (status, headers, and an
 *   empty, byte, raw or streamed body; a stream that fails after its headers ends the answer);
 * - the request in context is a `HttpServerRequest` over Node's message (`FrontRequest`), with the
 *   route (`RouteContext`) and its search parameters (`ParsedSearchParams`) provided as the
 *   router provides them, and a `Scope` of its own, closed once the answer is written or abandoned.
 *
 * With traces exported the gateway does not use this listener: the platform's server makes the
 * server span of each request.
 */
import type * as Headers from "@effect/platform/Headers"
import * as HttpRouter from "@effect/platform/HttpRouter"
import * as ServerError from "@effect/platform/HttpServerError"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as IncomingMessage from "@effect/platform/HttpIncomingMessage"
import * as HttpServerRespondable from "@effect/platform/HttpServerRespondable"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Cookies from "@effect/platform/Cookies"
import type * as Multipart from "@effect/platform/Multipart"
import * as UrlParams from "@effect/platform/UrlParams"
import * as NodeMultipart from "@effect/platform-node/NodeMultipart"
import * as NodeStream from "@effect/platform-node/NodeStream"
import * as Chunk from "effect/Chunk"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type * as Fiber from "effect/Fiber"
import * as Inspectable from "effect/Inspectable"
import * as Option from "effect/Option"
import * as Runtime from "effect/Runtime"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import type * as Http from "node:http"
import { Readable } from "node:stream"
import { pipeline } from "node:stream/promises"

/** What the front provides each request: the request, its route, its search parameters, its scope. */
export type RequestServices = HttpServerRequest.HttpServerRequest | HttpRouter.RouteContext | HttpServerRequest.ParsedSearchParams | Scope.Scope

/** What the front runs for one request: the application around the route's handler. */
export type Answer<E, R> = (
  request: HttpServerRequest.HttpServerRequest,
  route: HttpRouter.Route<E, R>
) => Effect.Effect<HttpServerResponse.HttpServerResponse, unknown, R | RequestServices>

/** The router's static routes (no `:param`, no `*`) by method, then by exact path. */
const staticRoutes = <E, R>(router: HttpRouter.HttpRouter<E, R>) => {
  const table = new Map<string, Map<string, HttpRouter.Route<E, R>>>()
  // A mounted app takes every path under its prefix before the routes: those paths stay with the router.
  const mounted = [...router.mounts].map(([path]) => path)
  for (const route of router.routes) {
    if (route.method === "*" || route.method === "HEAD" || route.method === "OPTIONS") continue
    if (route.path.includes(":") || route.path.includes("*")) continue
    // A route under a prefix (`HttpRouter.prefixAll`) sees its URL shortened by the router.
    if (route.prefix._tag === "Some") continue
    if (mounted.some((p) => route.path === p || route.path.startsWith(`${p}/`))) continue
    let byPath = table.get(route.method)
    if (byPath === undefined) table.set(route.method, byPath = new Map())
    if (!byPath.has(route.path)) byPath.set(route.path, route)
  }
  return table
}

/** The route's context, as the router provides it to a route without parameters (fresh for each request, as there). */
const routeContext = (route: HttpRouter.Route<unknown, unknown>): HttpRouter.RouteContext => ({
  [HttpRouter.RouteContextTypeId]: HttpRouter.RouteContextTypeId,
  params: {},
  route
})

/** `?a=1&a=2&b=3` as `{a: ["1", "2"], b: "3"}`, the router's form of search parameters (no prototype: any key is data). */
const searchOf = (query: string | undefined) => {
  const out: Record<string, string | Array<string>> = Object.create(null)
  if (query === undefined) return out
  for (const [key, value] of new URLSearchParams(query)) {
    const seen = Object.hasOwn(out, key) ? out[key] : undefined
    out[key] = seen === undefined ? value : Array.isArray(seen) ? [...seen, value] : [seen, value]
  }
  return out
}

const decodeError = (request: HttpServerRequest.HttpServerRequest) => (cause: unknown) =>
  new ServerError.RequestError({ request, reason: "Decode", cause })

/** A `HttpServerRequest` over Node's request and response. */
export class FrontRequest extends Inspectable.Class implements HttpServerRequest.HttpServerRequest {
  readonly [HttpServerRequest.TypeId]: HttpServerRequest.TypeId = HttpServerRequest.TypeId
  readonly [IncomingMessage.TypeId]: IncomingMessage.TypeId = IncomingMessage.TypeId
  constructor(
    readonly source: Http.IncomingMessage,
    readonly response: Http.ServerResponse,
    readonly url: string = source.url ?? "/",
    private readonly headersOverride?: Headers.Headers,
    private readonly remoteAddressOverride?: string
  ) {
    super()
  }
  get originalUrl() {
    return this.source.url ?? "/"
  }
  get method() {
    return (this.source.method ?? "GET").toUpperCase() as HttpServerRequest.HttpServerRequest["method"]
  }
  get headers(): Headers.Headers {
    return this.headersOverride ?? (this.source.headers as Headers.Headers)
  }
  private cachedCookies: Record<string, string> | undefined
  get cookies() {
    return this.cachedCookies ??= Cookies.parseHeader(this.headers.cookie ?? "")
  }
  get remoteAddress(): Option.Option<string> {
    return Option.fromNullable(this.remoteAddressOverride ?? this.source.socket?.remoteAddress)
  }
  // The body, read as the platform's request reads it (`IncomingMessage.MaxBodySize` bounds it).
  get stream(): Stream.Stream<Uint8Array, ServerError.RequestError> {
    return NodeStream.fromReadable(() => this.source, decodeError(this))
  }
  private cachedText: Effect.Effect<string, ServerError.RequestError> | undefined
  get text(): Effect.Effect<string, ServerError.RequestError> {
    return this.cachedText ??= Effect.runSync(Effect.cached(Effect.flatMap(IncomingMessage.MaxBodySize, (max) =>
      NodeStream.toString(() => this.source, { onFailure: decodeError(this), maxBytes: Option.getOrUndefined(max) }))))
  }
  get json(): Effect.Effect<unknown, ServerError.RequestError> {
    return Effect.tryMap(this.text, { try: (text) => (text === "" ? null : JSON.parse(text)) as unknown, catch: decodeError(this) })
  }
  get urlParamsBody(): Effect.Effect<UrlParams.UrlParams, ServerError.RequestError> {
    return Effect.flatMap(this.text, (text) => Effect.try({ try: () => UrlParams.fromInput(new URLSearchParams(text)), catch: decodeError(this) }))
  }
  get arrayBuffer(): Effect.Effect<ArrayBuffer, ServerError.RequestError> {
    return Effect.flatMap(IncomingMessage.MaxBodySize, (max) =>
      Effect.map(
        NodeStream.toUint8Array(() => this.source, { onFailure: decodeError(this), maxBytes: Option.getOrUndefined(max) }),
        (bytes) => bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer
      ))
  }
  private cachedMultipart: HttpServerRequest.HttpServerRequest["multipart"] | undefined
  get multipart(): HttpServerRequest.HttpServerRequest["multipart"] {
    return this.cachedMultipart ??= Effect.runSync(Effect.cached(NodeMultipart.persisted(this.source, this.source.headers)))
  }
  get multipartStream(): Stream.Stream<Multipart.Part, Multipart.MultipartError> {
    return NodeMultipart.stream(this.source, this.source.headers)
  }
  get upgrade(): HttpServerRequest.HttpServerRequest["upgrade"] {
    return Effect.fail(new ServerError.RequestError({ request: this, reason: "Decode", description: "not an upgradeable ServerRequest" }))
  }
  modify(options: { readonly url?: string; readonly headers?: Headers.Headers; readonly remoteAddress?: string }) {
    return new FrontRequest(
      this.source,
      this.response,
      options.url ?? this.url,
      options.headers ?? this.headersOverride,
      options.remoteAddress ?? this.remoteAddressOverride
    )
  }
  toJSON(): unknown {
    return IncomingMessage.inspect(this, { _id: "@effect/platform/HttpServerRequest", method: this.method, url: this.originalUrl })
  }
}

/**
 * Writes `response` to Node's response as the platform's Node server does. Completes once the
 * body is handed to Node (a stream: once its last chunk is written).
 */
export const write = (res: Http.ServerResponse, response: HttpServerResponse.HttpServerResponse): Effect.Effect<void, unknown> => {
  if (res.writableEnded) return Effect.void
  let headers: Http.OutgoingHttpHeaders = response.headers
  if (!Cookies.isEmpty(response.cookies)) {
    headers = { ...headers }
    const cookies = Cookies.toSetCookieHeaders(response.cookies)
    const own = headers["set-cookie"]
    if (own !== undefined) cookies.push(...(Array.isArray(own) ? own : [String(own)]))
    headers["set-cookie"] = cookies
  }
  const body = response.body
  switch (body._tag) {
    case "Empty":
      res.writeHead(response.status, headers)
      res.end()
      return Effect.void
    case "Uint8Array":
      res.writeHead(response.status, headers)
      res.end(body.body)
      return Effect.void
    case "Raw": {
      res.writeHead(response.status, headers)
      const raw = body.body as { readonly pipe?: unknown } | string | Uint8Array | null
      if (typeof raw === "object" && raw !== null && "pipe" in raw && typeof raw.pipe === "function") {
        return Effect.tryPromise({
          try: (signal) => pipeline(raw as unknown as NodeJS.ReadableStream, res, { signal, end: true }),
          catch: (cause) => cause
        }).pipe(Effect.interruptible, Effect.tapErrorCause(() => ended(res)))
      }
      res.end(raw as string | Uint8Array)
      return Effect.void
    }
    case "FormData": {
      const web = new Response(body.formData)
      res.writeHead(response.status, { ...headers, ...Object.fromEntries(web.headers) })
      return Effect.tryPromise({
        try: (signal) => pipeline(Readable.fromWeb(web.body! as import("node:stream/web").ReadableStream, { signal }), res, { signal }),
        catch: (cause) => cause
      }).pipe(Effect.interruptible, Effect.tapErrorCause(() => ended(res)))
    }
    case "Stream": {
      res.writeHead(response.status, headers)
      const drained = Effect.unsafeMakeLatch()
      res.on("drain", () => drained.unsafeOpen())
      return body.stream.pipe(
        Stream.runForEachChunk((chunk) => {
          let full = false
          for (const piece of Chunk.toReadonlyArray(chunk)) full = !res.write(piece)
          if (!full) return Effect.void
          drained.unsafeClose()
          // `drain` may have fired between the write and the close: only wait while still full.
          return res.writableNeedDrain ? drained.await : Effect.void
        }),
        Effect.interruptible,
        Effect.matchCauseEffect({ onSuccess: () => Effect.sync(() => res.end()), onFailure: (cause) => Effect.zipRight(ended(res), Effect.failCause(cause)) })
      )
    }
  }
}

/** After a failure: the status if none was sent yet, and the end of the answer. */
const ended = (res: Http.ServerResponse) =>
  Effect.sync(() => {
    if (!res.headersSent) res.writeHead(500)
    if (!res.writableEnded) res.end()
  })

/**
 * The listener: static routes answered by `answer` on a runtime of the current context, anything
 * else passed to `fallback` (the platform's handler).
 */
export const make = <E, R>(
  router: HttpRouter.HttpRouter<E, R>,
  answer: Answer<E, R>,
  fallback: (req: Http.IncomingMessage, res: Http.ServerResponse) => void
): Effect.Effect<(req: Http.IncomingMessage, res: Http.ServerResponse) => void, never, Exclude<R, RequestServices>> =>
  Effect.map(Effect.runtime<Exclude<R, RequestServices>>(), (runtime) => {
    const table = staticRoutes(router)
    const base = runtime.context.unsafeMap
    return function front(req, res) {
      const url = req.url ?? "/"
      const q = url.indexOf("?")
      const found = table.get(req.method ?? "")?.get(q === -1 ? url : url.slice(0, q))
      if (found === undefined) return fallback(req, res)
      const request = new FrontRequest(req, res, url)
      // One copy of the context with the request, its route and its search parameters, as the router makes one.
      const services = new Map(base)
      services.set(HttpServerRequest.HttpServerRequest.key, request)
      services.set(HttpRouter.RouteContext.key, routeContext(found as HttpRouter.Route<unknown, unknown>))
      services.set(HttpServerRequest.ParsedSearchParams.key, searchOf(q === -1 ? undefined : url.slice(q + 1)))
      const answered = Effect.flatMap(answer(request, found), (response) => write(res, response))
      // The request's scope, as the platform's server gives one: what a handler forks or opens
      // in it (a stream's producer, its timer) ends once the answer is written or abandoned. It
      // joins the request's own context, made above for this request alone and read by nothing
      // yet, rather than a copy of that context (`Scope.extend`).
      // The program is uninterruptible throughout (below), so the scope's closing needs no
      // `onExit` (which would make the region uninterruptible once more): the handlers of a
      // `matchCauseEffect` run whichever way the answer ended, an interruption included.
      const program = Effect.flatMap(Scope.make(), (scope) => {
        services.set(Scope.Scope.key, scope)
        return Effect.matchCauseEffect(answered, {
          onFailure: (cause) => Effect.zipRight(Scope.close(scope, Exit.failCause(cause)), Effect.failCause(cause)),
          onSuccess: (a) => Effect.as(Scope.close(scope, Exit.succeed(a)), a)
        })
      }).pipe(
        // As the platform's server: the failure's own answer (a respondable error, a client's
        // going away 499, a defect 500) when nothing was sent yet, else the end of the answer.
        Effect.catchAllCause((cause) =>
          res.headersSent ? ended(res) : Effect.flatMap(ServerError.causeResponse(cause), ([response]) => Effect.orElse(write(res, response), () => ended(res)))
        ),
        Effect.uninterruptible
      )
      // A client gone before the answer ends interrupts the fiber (at once when it starts, if it
      // went away before).
      let fiber: Fiber.RuntimeFiber<void, never> | undefined
      let gone = false
      res.on("close", () => {
        if (res.writableEnded) return
        gone = true
        fiber?.unsafeInterruptAsFork(ServerError.clientAbortFiberId)
      })
      const start = () => {
        fiber = Runtime.runFork(Runtime.make({
          context: Context.unsafeMake(services) as Context.Context<R>,
          fiberRefs: runtime.fiberRefs,
          runtimeFlags: runtime.runtimeFlags
        }))(program as Effect.Effect<void, never, R>)
        if (gone) fiber.unsafeInterruptAsFork(ServerError.clientAbortFiberId)
      }
      // The request event comes as soon as the head is parsed, and the fiber would run at once,
      // before the parser has gone on to the body that came with the head. A request with a small
      // body (a length of at most 5 digits) starts once this turn's reads are done instead
      // (`setImmediate`): a body that arrived with its head is then whole in the stream's buffer and
      // is read without a wait (http/Body.ts). A microtask is too soon: Node runs them between
      // the parser's callbacks.
      const length = req.headers["content-length"]
      if (req.complete || length === undefined || length === "0" || length.length > 5) start()
      else setImmediate(start)
    }
  })

/** `route.handler` as a response (the router's `Respondable` step), interruptible as the router runs it. */
export const handlerOf = <E, R>(route: HttpRouter.Route<E, R>): Effect.Effect<HttpServerResponse.HttpServerResponse, unknown, R | RequestServices> => {
  const handler = Effect.flatMap(route.handler, (r) => HttpServerResponse.isServerResponse(r) ? Effect.succeed(r) : HttpServerRespondable.toResponse(r))
  return route.uninterruptible ? handler : Effect.interruptible(handler)
}

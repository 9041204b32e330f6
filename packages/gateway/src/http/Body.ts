/**
 * Request bodies read defensively: the media type, the route's size limit (with or without
 * `Content-Length`: a clean 413 either way, never a reset connection), the bytes of bodies in flight
 * per process and per tenant (503/429 with `Retry-After` beyond), and the nesting depth of the JSON
 * (400 naming the field beyond `maxJsonDepth`, checked without recursion before anything recursive
 * runs on the value).
 */
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as IncomingMessage from "@effect/platform/HttpIncomingMessage"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as Http from "node:http"
import { Settings } from "../platform/Config.js"
import * as MediaType from "../platform/MediaType.js"
import { HttpError, httpError } from "./Errors.js"
import { type Budget, budgetOf, nodeRequest, nodeResponse, type Over } from "./Limits.js"

/** The deepest nesting of arrays and objects a JSON body may have (the body itself is level 1). */
export const maxJsonDepth = 64

/** Formats a path as `a.b[2].c` (the form of validation errors). */
const formatPath = (path: ReadonlyArray<string | number>): string =>
  path.reduce<string>((acc, key) => (typeof key === "number" ? `${acc}[${key}]` : acc === "" ? key : `${acc}.${key}`), "")

/**
 * The path of the first value nested deeper than `limit`, or `undefined`. Walks with an explicit
 * stack, so no depth of input can overflow the call stack.
 */
export const tooDeep = (value: unknown, limit: number = maxJsonDepth): ReadonlyArray<string | number> | undefined => {
  if (value === null || typeof value !== "object") return undefined
  const stack: Array<{ readonly value: object; readonly path: ReadonlyArray<string | number> }> = [{ value, path: [] }]
  while (stack.length > 0) {
    const { path, value: node } = stack.pop()!
    if (path.length >= limit) return path
    const children: Array<[string | number, unknown]> = Array.isArray(node)
      ? node.map((v, i) => [i, v])
      : Object.entries(node)
    for (let i = children.length - 1; i >= 0; i--) {
      const [key, child] = children[i]!
      if (child !== null && typeof child === "object") stack.push({ value: child, path: [...path, key] })
    }
  }
  return undefined
}

/** A 400 for a body nested beyond the limit, naming the field where it goes too deep. */
const nestingError = (path: ReadonlyArray<string | number>) => {
  const field = formatPath(path.slice(0, 8)) + (path.length > 8 ? "…" : "")
  return httpError(400, `${field}: nested deeper than ${maxJsonDepth} levels of arrays and objects`, {
    param: formatPath(path.slice(0, 8)) || "body"
  })
}

/** The 413 of a body over the route's limit. */
const tooLarge = (maxBytes: number) => httpError(413, `the request body exceeds ${maxBytes} bytes`)

const retryAfter = { "retry-after": "1" }
const overTenant = () =>
  httpError(429, "too many request bytes in flight for this tenant; retry after the current requests finish", {
    headers: retryAfter,
    openAiCode: "rate_limit_exceeded"
  })
const overProcess = () =>
  httpError(503, "the gateway is receiving too many request bytes at once; retry shortly", {
    headers: retryAfter,
    openAiType: "api_error"
  })

/** The refusal of a budget's verdict: 429 over the tenant's bytes in flight, 503 over the process's. */
const overBudget = (over: Over): HttpError | undefined =>
  over === "tenant" ? overTenant() : over === "process" ? overProcess() : undefined

/** The same error, answered with `Connection: close`. */
const withClose = (e: HttpError) =>
  new HttpError({
    status: e.status,
    title: e.title,
    detail: e.detail,
    param: e.param,
    openAiType: e.openAiType,
    openAiCode: e.openAiCode,
    headers: { ...e.headers, connection: "close" }
  })

/** After a refusal, how much more of the body is read and discarded so the answer arrives cleanly. */
const drainBytes = 16 * 1024 * 1024
const drainMs = 2_000

/**
 * The body of a request whose message Node has parsed to its end (`complete`: every byte of it is
 * in the stream's buffer, as for most small bodies, which arrive with their head), taken at once,
 * with the same limits as `readStreamed` — no wait, no listeners: the bytes, or the refusal (413,
 * 429, 503; nothing more can arrive, so it needs no draining). `undefined` when the message is not
 * complete or its stream is being read already.
 */
export const readBuffered = (
  req: Http.IncomingMessage,
  res: Http.ServerResponse | undefined,
  maxBytes: number,
  budget: Budget | undefined,
  tenant: string | undefined
): Buffer | HttpError | undefined => {
  if (!req.complete || req.readableEnded || req.readableFlowing === true || req.readableObjectMode) return undefined
  const bytes = req.readableLength
  if (bytes > maxBytes) return tooLarge(maxBytes)
  if (budget !== undefined && bytes > 0) {
    const refused = overBudget(budget.reserve(tenant, bytes, 0))
    if (refused !== undefined) return refused
    res?.once("close", () => budget.release(tenant, bytes))
  }
  // With no size, `read()` takes the whole buffer as one chunk and lets the stream end.
  const body = bytes === 0 ? null : (req.read() as Buffer | null)
  if (body === null) req.read()
  return body ?? Buffer.alloc(0)
}

/**
 * Reads the body of a Node request still arriving (or not yet parsed to its end), chunk by chunk:
 * counts every chunk against `maxBytes` and the budget, and once a limit is passed keeps reading
 * (discarding) for a bounded while, so the client receives the answer rather than a reset; past
 * that bound the answer closes the connection.
 */
const readStreamed = (
  req: Http.IncomingMessage,
  res: Http.ServerResponse | undefined,
  maxBytes: number,
  budget: Budget | undefined,
  tenant: string | undefined
) =>
  Effect.async<Buffer, HttpError>((resume) => {
    const chunks: Array<Buffer> = []
    let bytes = 0
    let refusal: HttpError | undefined
    let discarded = 0
    let done = false
    let timer: ReturnType<typeof setTimeout> | undefined
    const held = { bytes: 0 }
    const release = () => {
      if (budget !== undefined && held.bytes > 0) budget.release(tenant, held.bytes)
      held.bytes = 0
    }
    // The bytes stay reserved while the request is handled (its body lives on in parsed form).
    res?.once("close", release)
    const cleanup = () => {
      done = true
      if (timer !== undefined) clearTimeout(timer)
      req.off("data", onData)
      req.off("end", onEnd)
      req.off("error", onError)
      req.off("aborted", onError)
    }
    const refuse = (error: HttpError) => {
      refusal = error
      chunks.length = 0
      release()
      timer = setTimeout(() => finish(true), drainMs)
      timer.unref?.()
    }
    const finish = (close: boolean) => {
      if (done) return
      cleanup()
      if (refusal === undefined) return resume(Effect.succeed(Buffer.concat(chunks, bytes)))
      if (close) {
        // Keep discarding whatever still arrives; the answer ends the connection.
        req.on("error", () => {})
        req.resume()
        return resume(Effect.fail(withClose(refusal)))
      }
      return resume(Effect.fail(refusal))
    }
    function onData(chunk: Buffer) {
      if (refusal !== undefined) {
        discarded += chunk.length
        if (discarded > drainBytes) finish(true)
        return
      }
      bytes += chunk.length
      if (bytes > maxBytes) return refuse(tooLarge(maxBytes))
      if (budget !== undefined) {
        const refused = overBudget(budget.reserve(tenant, chunk.length, held.bytes))
        if (refused !== undefined) return refuse(refused)
        held.bytes += chunk.length
      }
      chunks.push(chunk)
    }
    function onEnd() {
      finish(false)
    }
    function onError() {
      if (done) return
      cleanup()
      release()
      resume(Effect.fail(refusal ?? httpError(400, "the request body could not be read")))
    }
    if (req.readableEnded) {
      // Read already (nothing is left to arrive): an empty body rather than a wait forever.
      done = true
      return resume(Effect.succeed(Buffer.alloc(0)))
    }
    req.on("data", onData)
    req.on("end", onEnd)
    req.on("error", onError)
    req.on("aborted", onError)
    req.resume()
    return Effect.sync(() => {
      cleanup()
      release()
    })
  })

/** The parsed body, or the 400 of one that is empty, does not parse or nests too deep. */
const parseJson = (text: string): Effect.Effect<unknown, HttpError> => {
  if (text.length === 0) return Effect.fail(httpError(400, "the request body is empty; send a JSON object", { param: "body" }))
  let json: unknown
  try {
    // V8 parses without recursion; the depth is checked before anything recursive sees the value.
    json = JSON.parse(text)
  } catch (e) {
    return Effect.fail(httpError(400, `malformed JSON: ${(e as Error).message}`, { param: "body" }))
  }
  const deep = tooDeep(json)
  return deep !== undefined ? Effect.fail(nestingError(deep)) : Effect.succeed(json)
}

/**
 * Reads a JSON body of at most `maxBytes`: 415 unless the content type is JSON, 413 when larger,
 * 429/503 when the tenant's or the process's bytes in flight are exhausted, 400 when it does not
 * parse or nests too deep. Parsed once; never re-serialised here.
 *
 * One step of the runtime for a body already whole in Node's buffer (`readBuffered`): the
 * request and the settings are read from the fiber, and the checks, the read and the parse run
 * as plain code; a body still arriving is waited for (`readStreamed`), then parsed.
 */
export const readJson = (maxBytes: number, tenant?: string): Effect.Effect<unknown, HttpError, HttpServerRequest.HttpServerRequest> =>
  Effect.withFiberRuntime((fiber) => {
    const context = fiber.currentContext as Context.Context<HttpServerRequest.HttpServerRequest>
    const request = Context.get(context, HttpServerRequest.HttpServerRequest)
    const type = request.headers["content-type"]
    if (!MediaType.isJson(type)) {
      return Effect.fail(httpError(415, "the request body must be JSON: send Content-Type: application/json"))
    }
    const declared = Number(request.headers["content-length"])
    if (Number.isFinite(declared) && declared > maxBytes) return Effect.fail(tooLarge(maxBytes))
    const req = nodeRequest(request)
    if (req === undefined) {
      return request.text.pipe(
        IncomingMessage.withMaxBodySize(Option.some(maxBytes)),
        Effect.mapError((e) =>
          String(e.cause ?? e).includes("max") || String(e).includes("size")
            ? tooLarge(maxBytes)
            : httpError(400, "the request body could not be read")),
        Effect.flatMap(parseJson)
      )
    }
    const settings = Context.getOption(context as Context.Context<unknown>, Settings)
    const budget = Option.isSome(settings) ? budgetOf(settings.value) : undefined
    if (budget !== undefined && Number.isFinite(declared) && declared > 0) {
      // Refused before a byte is read when the declared size cannot fit.
      const refused = overBudget(budget.wouldExceed(tenant, declared))
      if (refused !== undefined) return Effect.fail(refused)
    }
    const res = nodeResponse(request)
    const buffered = readBuffered(req, res, maxBytes, budget, tenant)
    if (buffered === undefined) return Effect.flatMap(readStreamed(req, res, maxBytes, budget, tenant), (bytes) => parseJson(bytes.toString("utf8")))
    return buffered instanceof HttpError ? Effect.fail(buffered) : parseJson(buffered.toString("utf8"))
  })

/**
 * Resource limits of the HTTP server: the Node server's timeouts (slow clients cannot hold
 * sockets), the bytes of request bodies in flight per process and per tenant, and a refusal of
 * ambiguous credentials (more than one `Authorization` header).
 */
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as NodeHttpServerRequest from "@effect/platform-node/NodeHttpServerRequest"
import type * as Http from "node:http"
import type { GatewaySettings } from "../platform/Config.js"
import { type HttpError, httpError } from "./Errors.js"

/** Defaults of the settings below (DESIGN.md-style operator contract, documented in the README). */
export const defaults = {
  /** `GATEWAY_HEADERS_TIMEOUT_MS`: time allowed to receive a request's headers. */
  headersTimeoutMs: 10_000,
  /** `GATEWAY_REQUEST_TIMEOUT_MS`: time allowed to receive a whole request, body included. */
  requestTimeoutMs: 120_000,
  /** `GATEWAY_BODY_BYTES_IN_FLIGHT`: request-body bytes the process holds at once. */
  bodyBytesInFlight: 256 * 1024 * 1024,
  /** `GATEWAY_TENANT_BODY_BYTES_IN_FLIGHT`: request-body bytes one tenant holds at once. */
  tenantBodyBytesInFlight: 64 * 1024 * 1024
} as const

/** Idle time of a kept-alive connection (above common load balancers' 60 s). */
const keepAliveTimeoutMs = 65_000

/** Options of the Node HTTP server for the settings. */
export const serverOptions = (settings: GatewaySettings): Http.ServerOptions => {
  const headersTimeout = settings.headersTimeoutMs ?? defaults.headersTimeoutMs
  const requestTimeout = Math.max(settings.requestTimeoutMs ?? defaults.requestTimeoutMs, headersTimeout)
  return {
    keepAliveTimeout: keepAliveTimeoutMs,
    headersTimeout,
    requestTimeout,
    // Node checks both timeouts on this period (30 s by default, longer than the timeouts).
    connectionsCheckingInterval: Math.max(50, Math.min(1_000, Math.floor(headersTimeout / 4)))
  }
}

/** The Node request behind an Effect request, when the server is Node's. */
export const nodeRequest = (request: HttpServerRequest.HttpServerRequest): Http.IncomingMessage | undefined => {
  try {
    const req = NodeHttpServerRequest.toIncomingMessage(request) as Http.IncomingMessage | undefined
    return req !== undefined && typeof req.on === "function" && Array.isArray(req.rawHeaders) ? req : undefined
  } catch {
    return undefined
  }
}

/** The Node response of an Effect request, when the server is Node's. */
export const nodeResponse = (request: HttpServerRequest.HttpServerRequest): Http.ServerResponse | undefined => {
  try {
    const res = NodeHttpServerRequest.toServerResponse(request) as Http.ServerResponse | undefined
    return res !== undefined && typeof res.once === "function" ? res : undefined
  } catch {
    return undefined
  }
}

/**
 * The 400 of a request that carries more than one `Authorization` header (Node keeps the first, a
 * proxy in front may read the last, and the two would disagree about the caller), else undefined.
 */
export const duplicateAuthorization = (request: HttpServerRequest.HttpServerRequest): HttpError | undefined => {
  const req = nodeRequest(request)
  if (req === undefined) return undefined
  let count = 0
  for (let i = 0; i < req.rawHeaders.length; i += 2) {
    if (req.rawHeaders[i]!.length === 13 && req.rawHeaders[i]!.toLowerCase() === "authorization") count++
  }
  return count > 1 ? httpError(400, "more than one Authorization header: send exactly one", { param: "authorization" }) : undefined
}

/** Which bound a reservation would pass. */
export type Over = "tenant" | "process" | undefined

/** Bytes of request bodies in flight, per process and per tenant. */
export interface Budget {
  /** Whether a new request of `bytes` would pass a bound. */
  readonly wouldExceed: (tenant: string | undefined, bytes: number) => Over
  /** Reserves `bytes` more for a request already holding `held`; nothing is reserved when over. */
  readonly reserve: (tenant: string | undefined, bytes: number, held: number) => Over
  readonly release: (tenant: string | undefined, bytes: number) => void
}

/**
 * A budget. A request alone (nothing else in flight for its tenant, or in the process) is always
 * admitted: the route's own size limit bounds it, and a lone large request must not starve.
 */
export const makeBudget = (processLimit: number, tenantLimit: number): Budget => {
  let total = 0
  const tenants = new Map<string, number>()
  const check = (tenant: string | undefined, bytes: number, held: number): Over => {
    const mine = tenant === undefined ? 0 : tenants.get(tenant) ?? 0
    if (tenant !== undefined && mine - held > 0 && mine + bytes > tenantLimit) return "tenant"
    if (total - held > 0 && total + bytes > processLimit) return "process"
    return undefined
  }
  return {
    wouldExceed: (tenant, bytes) => check(tenant, bytes, 0),
    reserve: (tenant, bytes, held) => {
      const over = check(tenant, bytes, held)
      if (over !== undefined) return over
      total += bytes
      if (tenant !== undefined) tenants.set(tenant, (tenants.get(tenant) ?? 0) + bytes)
      return undefined
    },
    release: (tenant, bytes) => {
      total = Math.max(0, total - bytes)
      if (tenant === undefined) return
      const left = (tenants.get(tenant) ?? 0) - bytes
      if (left > 0) tenants.set(tenant, left)
      else tenants.delete(tenant)
    }
  }
}

const budgets = new WeakMap<GatewaySettings, Budget>()

/** The budget of a gateway (one per settings, so gateways embedded side by side stay apart). */
export const budgetOf = (settings: GatewaySettings): Budget => {
  let budget = budgets.get(settings)
  if (budget === undefined) {
    budget = makeBudget(
      settings.bodyBytesInFlight ?? defaults.bodyBytesInFlight,
      settings.tenantBodyBytesInFlight ?? defaults.tenantBodyBytesInFlight
    )
    budgets.set(settings, budget)
  }
  return budget
}

/**
 * A gateway inside a test: SQLite in a fresh temporary folder, the HTTP server on an ephemeral
 * port with a client pointed at it, and no background fibers — tests drive the workers with
 * `Scheduler.runOnce` and time with `TestClock`, so nothing waits on wall-clock time.
 */
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as HttpServer from "@effect/platform/HttpServer"
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import type { ModelEntry, VendorAdapter } from "@genway/core"
import { Registry } from "@genway/registry"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as TestClock from "effect/TestClock"
import * as fs from "node:fs"
import { createServer } from "node:http"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import * as Config from "../src/platform/Config.js"
import * as Gateway from "../src/Gateway.js"
import { Scheduler } from "../src/tasks/Scheduler.js"

/** Two bootstrap tokens, each its own tenant. */
export const tokenA = "test-token-a"
export const tokenB = "test-token-b"

/** A fresh data directory. */
export const tempDir = () => fs.mkdtempSync(path.join(os.tmpdir(), "genway-test-"))

/** Options of a test gateway. */
export interface TestGatewayOptions {
  readonly entries?: ReadonlyArray<ModelEntry.ModelEntry>
  /** Live task adapters, built with the gateway's upstream HTTP client. */
  readonly live?: Effect.Effect<ReadonlyMap<string, VendorAdapter.VendorAdapter>, never, HttpClient.HttpClient>
  readonly settings?: Partial<Config.GatewaySettings>
  /** Every request served by the platform's server alone (as with traces exported). */
  readonly platformOnly?: boolean
}

/** The test gateway's layers; the HttpClient it provides talks to the server. */
export const layer = (options: TestGatewayOptions = {}) => Layer.unwrapEffect(Effect.map(Effect.promise(freePort), (port) => layerOn(port, options)))

/** A free loopback port (the test server binds it right after). */
export const freePort = () =>
  new Promise<number>((resolve) => {
    const server = net.createServer().listen(0, "127.0.0.1", () => {
      const { port } = server.address() as net.AddressInfo
      server.close(() => resolve(port))
    })
  })

/** Settings of a test gateway served on `port` on loopback (SQLite in a fresh temp dir, both tokens). */
export const settingsOn = (port: number, overrides: Partial<Config.GatewaySettings> = {}) =>
  Config.layerWith({
    host: "127.0.0.1",
    port,
    publicUrl: `http://127.0.0.1:${port}`,
    dataDir: tempDir(),
    databaseUrl: Option.none(),
    apiKeys: [Redacted.make(tokenA), Redacted.make(tokenB)],
    sandboxDelayMs: 1000,
    pollIntervalMs: Option.none(),
    modelsFile: Option.none(),
    requireLive: false,
    ...overrides
  })

const layerOn = (port: number, options: TestGatewayOptions) => {
  const settings = settingsOn(port, options.settings)
  const services = Gateway.services(
    options.live ?? Effect.succeed(new Map()),
    Registry.layer(options.entries ?? Registry.entries)
  )
  // Served as `genway serve` serves it: the gateway's own listener in front of the platform's
  // (http/Front.ts); with traces on, or `platformOnly`, the platform's alone.
  const node = createServer()
  const server = HttpServer.layerTestClient.pipe(
    Layer.provide(NodeHttpClient.layerWithoutAgent),
    Layer.provide(NodeHttpClient.makeAgentLayer({ keepAlive: false })),
    Layer.provideMerge(NodeHttpServer.layer(() => node, { port, host: "127.0.0.1" }))
  )
  const http = Gateway.serve(node, { platformOnly: options.platformOnly }).pipe(Layer.provideMerge(server))
  return http.pipe(Layer.provideMerge(services), Layer.provideMerge(settings))
}

/** A JSON request with a bearer token. */
export const post = (url: string, body: unknown, token: string | undefined = tokenA, headers: Record<string, string> = {}) =>
  HttpClientRequest.post(url).pipe(
    HttpClientRequest.bodyUnsafeJson(body),
    HttpClientRequest.setHeaders(token === undefined ? headers : { authorization: `Bearer ${token}`, ...headers })
  )

/** A GET with a bearer token. */
export const get = (url: string, token: string | undefined = tokenA) =>
  HttpClientRequest.get(url).pipe(
    HttpClientRequest.setHeaders(token === undefined ? {} : { authorization: `Bearer ${token}` })
  )

/** Sends a request and returns the status, headers and parsed JSON body. */
export const send = (request: HttpClientRequest.HttpClientRequest) =>
  Effect.gen(function*() {
    const client = yield* HttpClient.HttpClient
    const response = yield* client.execute(request)
    const text = yield* response.text
    let json: any = undefined
    try {
      json = text.length > 0 ? JSON.parse(text) : undefined
    } catch {
      json = undefined
    }
    return { status: response.status, headers: response.headers, json, text }
  }).pipe(Effect.scoped)

/** Runs one worker pass. */
export const work = Effect.flatMap(Scheduler, (s) => s.runOnce)

/**
 * Drives the workers and the test clock until the task at `url` is terminal, at most `rounds`
 * simulated seconds; answers its last retrieve either way (callers assert the status).
 */
export const settle = (url: string, rounds = 40) =>
  Effect.gen(function*() {
    for (let i = 0; i < rounds; i++) {
      yield* work
      const r = yield* send(get(url))
      if (r.json.task_info.status === "completed" || r.json.task_info.status === "failed") return r.json
      yield* TestClock.adjust("1 second")
    }
    return (yield* send(get(url))).json
  })

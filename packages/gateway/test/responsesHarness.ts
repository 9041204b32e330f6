/**
 * Model responses (E2) inside a test: the test gateway of `harness.ts` with vendor-a's responses
 * upstream configured from `VENDOR_A_*` (read through a `ConfigProvider`, as in production) and
 * pointed at vendor-a's emulator, or sandboxed; the official OpenAI client pointed at the gateway's
 * real port; the background poller driven by hand.
 */
import * as HttpServer from "@effect/platform/HttpServer"
import type * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as VendorA from "@genway/adapter-vendor-a"
import { Emulator } from "@genway/adapter-vendor-a/testing"
import type { Registry } from "@genway/registry"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import OpenAI from "openai"
import { ResponsesService } from "../src/responses/Service.js"
import * as Harness from "./harness.js"

/** The path of E2 below the gateway's base URL. */
export const e2 = "/vendors/vendor-a/v1/responses"

/** The vendor-a emulator behind a live responses gateway. */
export class ResponsesEmulator extends Context.Tag("test/ResponsesEmulator")<ResponsesEmulator, Emulator.Emulator>() {}

/** `VENDOR_A_*` for an emulator. */
export const configFor = (emulator: Emulator.Emulator) =>
  ConfigProvider.fromMap(new Map([[VendorA.Config.BASE_URL, emulator.baseUrl], [VendorA.Config.API_KEY, emulator.apiKey]]))

/** The layers of a test gateway. */
export type TestGateway = ReturnType<typeof Harness.layer>

/** A test gateway with vendor-a's responses live against `emulator`. */
export const liveGateway = (emulator: Emulator.Emulator, options: Harness.TestGatewayOptions = {}): TestGateway =>
  Harness.layer(options).pipe(Layer.provide(Layer.setConfigProvider(configFor(emulator))))

/** A test gateway whose vendor-a responses are live against a fresh emulator (provided as `ResponsesEmulator`). */
export const liveLayer = (
  emulatorOptions: Emulator.EmulatorOptions = {},
  options: Harness.TestGatewayOptions = {}
): Layer.Layer<ResponsesEmulator | Layer.Layer.Success<TestGateway>, Layer.Layer.Error<TestGateway>> =>
  Layer.unwrapScoped(Effect.map(Emulator.make(emulatorOptions), (emulator) =>
    Layer.merge(Layer.succeed(ResponsesEmulator, emulator), liveGateway(emulator, options))))

/** A test gateway with vendor-a sandboxed (no `VENDOR_A_*`, whatever the environment says). */
export const sandboxLayer = (options: Harness.TestGatewayOptions = {}): TestGateway =>
  Harness.layer(options).pipe(Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map()))))

/** The base URL of the test gateway (`http://127.0.0.1:<port>`). */
export const baseUrl = Effect.map(HttpServer.HttpServer, (server) => {
  const address = server.address
  if (address._tag !== "TcpAddress") throw new Error("the test server is not on TCP")
  return `http://127.0.0.1:${address.port}`
})

/** The official OpenAI client on E2 of the test gateway; no retries unless asked. */
export const client = (token: string = Harness.tokenA, options: { readonly maxRetries?: number } = {}) =>
  Effect.map(baseUrl, (url) => new OpenAI({ apiKey: token, baseURL: `${url}/vendors/vendor-a/v1`, maxRetries: options.maxRetries ?? 0 }))

/** Runs a promise of the OpenAI client; its rejection (a typed error) is the failure. */
export const call = <A>(f: () => Promise<A>) => Effect.tryPromise({ try: f, catch: (e) => e })

/** One pass of the background poller. */
export const poll: Effect.Effect<number, SqlError, ResponsesService | SqlClient.SqlClient | Registry.Registry> = Effect.flatMap(
  ResponsesService,
  (s) => s.runOnce
)

/**
 * Chat completions (E1) inside a test: the test gateway of `harness.ts` with vendor-d's chat
 * upstream configured from `VENDOR_D_*` (read through a `ConfigProvider`, as in production) and
 * pointed at vendor-d's emulator; helpers for the official OpenAI client and raw SSE reads.
 */
import * as HttpServer from "@effect/platform/HttpServer"
import * as VendorD from "@genway/adapter-vendor-d"
import { Emulator } from "@genway/adapter-vendor-d/testing"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as TestClock from "effect/TestClock"
import OpenAI from "openai"
import { HeartbeatInterval, StreamIdleTimeout } from "../src/chat/Http.js"
import * as Harness from "./harness.js"

/** The vendor-d emulator behind a live chat gateway. */
export class ChatEmulator extends Context.Tag("test/ChatEmulator")<ChatEmulator, Emulator.Emulator>() {}

/** Options of a chat test gateway. */
export interface ChatGatewayOptions extends Harness.TestGatewayOptions {
  /** Settings of vendor-d's emulator; omit for a sandboxed vendor-d. */
  readonly emulator?: Emulator.EmulatorOptions
  /** `: keep-alive` interval of streams. */
  readonly heartbeat?: Duration.DurationInput
  /** Longest vendor silence within a stream. */
  readonly idleTimeout?: Duration.DurationInput
}

/** The layers of a test gateway (`harness.ts`). */
type TestGateway = ReturnType<typeof Harness.layer>

/** A test gateway whose vendor-d chat upstream is live against an emulator (provided as `ChatEmulator`). */
export const liveLayer = (
  options: ChatGatewayOptions = {}
): Layer.Layer<Layer.Layer.Success<TestGateway> | ChatEmulator, Layer.Layer.Error<TestGateway>, Layer.Layer.Context<TestGateway>> =>
  Layer.unwrapScoped(Effect.map(Emulator.make(options.emulator ?? {}), (emulator) => {
    const config = ConfigProvider.fromMap(
      new Map([[VendorD.Config.BASE_URL, emulator.baseUrl], [VendorD.Config.API_KEY, emulator.apiKey]])
    )
    return Layer.merge(
      Layer.succeed(ChatEmulator, emulator),
      Harness.layer(options).pipe(
        Layer.provide(Layer.setConfigProvider(config)),
        Layer.provide(streamTimersLayer(options))
      )
    )
  }))

/** A test gateway with vendor-d sandboxed (no `VENDOR_D_*`). */
export const sandboxLayer = (options: Omit<ChatGatewayOptions, "emulator"> = {}): TestGateway =>
  Harness.layer(options).pipe(
    Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map()))),
    Layer.provide(streamTimersLayer(options))
  )

const streamTimersLayer = (options: ChatGatewayOptions) =>
  Layer.mergeAll(
    options.heartbeat === undefined ? Layer.empty : Layer.succeed(HeartbeatInterval, Duration.decode(options.heartbeat)),
    options.idleTimeout === undefined ? Layer.empty : Layer.succeed(StreamIdleTimeout, Duration.decode(options.idleTimeout))
  )

/** The base URL of the test gateway (`http://127.0.0.1:<port>`). */
export const baseUrl = Effect.map(HttpServer.HttpServer, (server) => {
  const address = server.address
  if (address._tag !== "TcpAddress") throw new Error("the test server is not on TCP")
  return `http://127.0.0.1:${address.port}`
})

/** The official OpenAI client pointed at the test gateway, without its own retries. */
export const openai = (token: string = Harness.tokenA) =>
  Effect.map(baseUrl, (url) => new OpenAI({ apiKey: token, baseURL: `${url}/v1`, maxRetries: 0 }))

/** A raw `fetch` of `POST /v1/chat/completions`. */
export const postChat = (body: unknown, init: { readonly token?: string; readonly signal?: AbortSignal } = {}) =>
  Effect.flatMap(baseUrl, (url) =>
    Effect.promise(() =>
      fetch(`${url}/v1/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${init.token ?? Harness.tokenA}`, "content-type": "application/json" },
        body: JSON.stringify(body),
        ...(init.signal !== undefined ? { signal: init.signal } : {})
      })
    ))

/**
 * Runs a promise-returning call while advancing the `TestClock` in small steps, for calls that
 * wait on the gateway's timers (retry backoff, heartbeats) from outside the Effect runtime.
 */
export const withClock = <A>(call: () => Promise<A>, step: Duration.DurationInput = "250 millis") =>
  Effect.gen(function*() {
    const fiber = yield* Effect.fork(Effect.tryPromise(call))
    for (;;) {
      const done = yield* Fiber.poll(fiber)
      if (Option.isSome(done)) return yield* Fiber.join(fiber)
      yield* TestClock.adjust(step)
      yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 5)))
    }
  })

/** A message asking for a picture. */
export const ask = (text: string) => [{ role: "user" as const, content: [{ type: "text" as const, text }] }]

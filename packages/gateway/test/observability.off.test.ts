/**
 * Telemetry off (DESIGN.md §11: "nothing is exported, and nothing measurable is spent, when
 * unset"): the gateway composed as `genway serve` composes it (`Gateway.http` over the services,
 * under the observability layer), with a tracer that records every span it is asked to start.
 * With `OTEL_EXPORTER_OTLP_ENDPOINT` unset, serving E2 (upstream call, kept response) and a task
 * create starts no span at all; set, the same requests do start them (so the recorder sees spans
 * when there are any). Not timed: the cost is measured in the bench.
 */
import { Emulator } from "@genway/adapter-vendor-a/testing"
import { Registry } from "@genway/registry"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Tracer from "effect/Tracer"
import * as http from "node:http"
import type * as net from "node:net"
import * as Gateway from "../src/Gateway.js"
import * as Observability from "../src/observability/Layer.js"
import * as Harness from "./harness.js"
import * as R from "./responsesHarness.js"

/** The tracer in force, wrapped so that every span started is named in `started`. */
const recording = (started: Array<string>) =>
  Layer.unwrapEffect(Effect.map(Effect.tracer, (inner) =>
    Layer.setTracer(Tracer.make({
      span: (name, parent, context, links, startTime, kind, options) => {
        started.push(name)
        return inner.span(name, parent, context, links, startTime, kind, options)
      },
      context: (f, fiber) => inner.context(f, fiber)
    }))))

/** An OTLP/HTTP endpoint that accepts every export (its base URL). */
const sink = Effect.acquireRelease(
  Effect.async<http.Server>((resume) => {
    const server = http.createServer((req, res) => {
      req.resume()
      req.on("end", () => res.writeHead(200, { "content-type": "application/json" }).end("{}"))
    })
    server.listen(0, "127.0.0.1", () => resume(Effect.succeed(server)))
  }),
  (server) => Effect.async<void>((resume) => void server.close(() => resume(Effect.void)))
).pipe(Effect.map((server) => `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`))

/** The names of the spans started while the gateway served E2 twice and one task create. */
const spansOfRequests = (otlpEndpoint: Option.Option<string>) =>
  Effect.gen(function*() {
    const emulator = yield* Emulator.make()
    const port = yield* Effect.promise(Harness.freePort)
    const started: Array<string> = []
    const settings = Harness.settingsOn(port, {
      otlpEndpoint,
      logLevel: Option.some("error")
    })
    // As `genway serve`: observability outermost (it sets the tracer when exporting), then the gateway.
    yield* Layer.build(
      Gateway.http.pipe(
        Layer.provideMerge(Gateway.services(Effect.succeed(new Map()), Registry.layer())),
        Layer.provide(recording(started)),
        Layer.provide(Observability.layer()),
        Layer.provideMerge(settings),
        Layer.provide(Layer.setConfigProvider(R.configFor(emulator)))
      )
    )
    const before = started.length
    const sent = (yield* emulator.requests).length
    const post = (path: string, body: unknown) =>
      Effect.promise(() =>
        fetch(`http://127.0.0.1:${port}${path}`, {
          method: "POST",
          headers: { authorization: `Bearer ${Harness.tokenA}`, "content-type": "application/json" },
          body: JSON.stringify(body)
        }).then(async (r) => ({ status: r.status, text: await r.text() }))
      )
    const kept = yield* post(R.e2, { model: "text-model-1", input: "a paper boat" })
    assert.strictEqual(kept.status, 200, kept.text)
    const notKept = yield* post(R.e2, { model: "text-model-1", input: "a paper boat", store: false })
    assert.strictEqual(notKept.status, 200, notKept.text)
    const task = Registry.entries.find((e) => e.endpoints.includes("E4"))!
    const created = yield* post(task.path, { prompt: "a paper boat", duration: 5 })
    assert.strictEqual(created.status, 202, created.text)
    // The requests did their work: both E2 calls reached the vendor.
    assert.strictEqual((yield* emulator.requests).length - sent, 2)
    return started.slice(before)
  })

describe("telemetry off", () => {
  it.scopedLive("without OTEL_EXPORTER_OTLP_ENDPOINT, serving E2 and a task create starts no span", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* spansOfRequests(Option.none()), [])
    }), 30_000)

  it.scopedLive("with it set, the same requests start the server span and its children", () =>
    Effect.gen(function*() {
      const names = yield* spansOfRequests(Option.some(yield* sink))
      for (const name of ["http.server POST", "validate", "http.client POST", "sql.execute"]) assert.include(names, name)
    }), 30_000)
})

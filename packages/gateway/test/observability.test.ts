/**
 * Observability over real HTTP (DESIGN.md §11): `/metrics` after known traffic (exact counter
 * increments and label sets, valid exposition: `promtool check metrics` when installed, a strict
 * parser always), its optional bearer token, OTLP/HTTP traces under a client's trace id that the
 * vendor receives too, and JSON log lines with their fields and no token or prompt.
 */
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as SqlClient from "@effect/sql/SqlClient"
import { assert, describe, it, layer } from "@effect/vitest"
import { ModelEntry } from "@genway/core"
import { Registry } from "@genway/registry"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as TestClock from "effect/TestClock"
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as http from "node:http"
import type * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import * as Gateway from "../src/Gateway.js"
import { TracingEnabled } from "../src/observability/Http.js"
import * as Config from "../src/platform/Config.js"
import * as TaskCountShards from "../src/platform/migrations/0009_task_count_shards.js"
import { Scheduler } from "../src/tasks/Scheduler.js"
import { TaskStore } from "../src/tasks/Store.js"
import * as Logging from "../src/observability/Logging.js"
import * as Tracing from "../src/observability/Tracing.js"
import { validBodies } from "./bodies.js"
import * as Chat from "./chatHarness.js"
import * as Harness from "./harness.js"
import * as Pg from "./pg.js"

// --- a strict reader of the Prometheus text format -------------------------------------------

interface Exposition {
  /** `name{a="x",b="y"}` (labels sorted) → value. */
  readonly samples: Map<string, number>
  readonly types: Map<string, string>
  readonly labelValues: ReadonlyArray<string>
}

const sampleKey = (name: string, labels: Record<string, string>) => {
  const keys = Object.keys(labels).sort()
  return keys.length === 0 ? name : `${name}{${keys.map((k) => `${k}="${labels[k]}"`).join(",")}}`
}

const familyOf = (name: string, types: Map<string, string>) => {
  if (types.has(name)) return name
  for (const suffix of ["_bucket", "_sum", "_count"]) {
    if (name.endsWith(suffix) && types.has(name.slice(0, -suffix.length))) return name.slice(0, -suffix.length)
  }
  return undefined
}

/** Parses exposition text, failing on anything the format does not allow. */
const parse = (text: string): Exposition => {
  const samples = new Map<string, number>()
  const types = new Map<string, string>()
  const helps = new Set<string>()
  const labelValues: Array<string> = []
  assert.isTrue(text.endsWith("\n"), "the exposition ends with a newline")
  for (const line of text.split("\n")) {
    if (line === "") continue
    let m = /^# HELP ([a-zA-Z_:][a-zA-Z0-9_:]*) (.*)$/.exec(line)
    if (m !== null) {
      assert.isFalse(helps.has(m[1]!), `one HELP for ${m[1]}`)
      helps.add(m[1]!)
      continue
    }
    m = /^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge|histogram|summary|untyped)$/.exec(line)
    if (m !== null) {
      assert.isFalse(types.has(m[1]!), `one TYPE for ${m[1]}`)
      assert.isTrue(helps.has(m[1]!), `HELP before TYPE for ${m[1]}`)
      types.set(m[1]!, m[2]!)
      continue
    }
    assert.isFalse(line.startsWith("#"), `unexpected comment: ${line}`)
    m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line)
    assert.isNotNull(m, `malformed sample line: ${line}`)
    const [, name, rawLabels, rawValue] = m!
    const labels: Record<string, string> = {}
    if (rawLabels !== undefined && rawLabels !== "") {
      const re = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(,|$)/y
      let consumed = 0
      while (consumed < rawLabels.length) {
        re.lastIndex = consumed
        const l = re.exec(rawLabels)
        assert.isNotNull(l, `malformed labels: ${line}`)
        labels[l![1]!] = l![2]!
        labelValues.push(l![2]!)
        consumed = re.lastIndex
      }
    }
    const family = familyOf(name!, types)
    assert.isDefined(family, `sample ${name} has no TYPE before it`)
    assert.isTrue(helps.has(family!), `sample ${name} has no HELP`)
    const value = rawValue === "+Inf" ? Infinity : rawValue === "-Inf" ? -Infinity : Number(rawValue)
    assert.isFalse(Number.isNaN(value) && rawValue !== "NaN", `bad value: ${line}`)
    const key = sampleKey(name!, labels)
    assert.isFalse(samples.has(key), `duplicate sample ${key}`)
    samples.set(key, value)
  }
  // Histograms: cumulative buckets ending in +Inf, which equals _count.
  for (const [family, type] of types) {
    if (type !== "histogram") continue
    const series = new Map<string, Array<[number, number]>>()
    for (const [key, value] of samples) {
      if (!key.startsWith(`${family}_bucket{`)) continue
      const le = /le="([^"]+)"/.exec(key)![1]!
      const rest = key.replace(/,?le="[^"]+"/, "").replace("{,", "{").replace(`${family}_bucket`, family)
      const list = series.get(rest) ?? []
      list.push([le === "+Inf" ? Infinity : Number(le), value])
      series.set(rest, list)
    }
    for (const [rest, buckets] of series) {
      buckets.sort((a, b) => a[0] - b[0])
      for (let i = 1; i < buckets.length; i++) assert.isAtLeast(buckets[i]![1], buckets[i - 1]![1], `${rest} buckets are cumulative`)
      assert.strictEqual(buckets.at(-1)![0], Infinity, `${rest} has a +Inf bucket`)
      const count = samples.get(rest.replace(family, `${family}_count`).replace(/\{\}$/, ""))
      assert.strictEqual(buckets.at(-1)![1], count, `${rest}: +Inf bucket equals _count`)
    }
  }
  return { samples, types, labelValues }
}

const promtool = (() => {
  try {
    execFileSync("promtool", ["--version"], { stdio: "ignore" })
    return true
  } catch {
    return false
  }
})()

/** `promtool check metrics` on the text, when promtool is installed. */
const checkWithPromtool = (text: string) => {
  if (!promtool) return
  try {
    execFileSync("promtool", ["check", "metrics"], { input: text, stdio: ["pipe", "pipe", "pipe"] })
  } catch (e) {
    const err = e as { stdout?: Buffer; stderr?: Buffer }
    assert.fail(`promtool check metrics failed:\n${err.stdout?.toString() ?? ""}${err.stderr?.toString() ?? ""}`)
  }
}

const scrape = (token?: string) =>
  Effect.gen(function*() {
    const r = yield* Harness.send(Harness.get("/metrics", token))
    assert.strictEqual(r.status, 200, r.text)
    assert.match(r.headers["content-type"] ?? "", /^text\/plain; version=0\.0\.4/)
    checkWithPromtool(r.text)
    return { ...parse(r.text), text: r.text }
  })

const value = (e: Exposition, name: string, labels: Record<string, string> = {}) => e.samples.get(sampleKey(name, labels)) ?? 0

const taskEntry = Registry.entries.filter(ModelEntry.isTaskEntry).find((e) => e.endpoints.includes("E4"))!

if (!promtool) console.warn("observability.test.ts: promtool is not installed; /metrics is checked by the strict parser only")

describe("GET /metrics", () => {
  layer(Harness.layer())((it) => {
    it.effect("counts known traffic exactly, by route template, method and status; never ids, tokens or raw paths", () =>
      Effect.gen(function*() {
        const before = yield* scrape()
        assert.strictEqual((yield* Harness.send(Harness.get("/v1/models"))).status, 200)
        assert.strictEqual((yield* Harness.send(HttpClientRequest.get("/v1/models"))).status, 401)
        const created = yield* Harness.send(Harness.post(taskEntry.path, validBodies.E4))
        assert.strictEqual(created.status, 202, created.text)
        const id: string = created.json.task_info.id
        assert.strictEqual((yield* Harness.send(Harness.get(`${taskEntry.path}/${id}`))).status, 200)
        assert.strictEqual((yield* Harness.send(Harness.get("/no/such/thing-secret-path"))).status, 404)
        const after = yield* scrape()

        const delta = (name: string, labels: Record<string, string>) => value(after, name, labels) - value(before, name, labels)
        const requests = "genway_http_requests_total"
        assert.strictEqual(delta(requests, { route: "/v1/models", method: "GET", status: "200" }), 1)
        assert.strictEqual(delta(requests, { route: "/v1/models", method: "GET", status: "401" }), 1)
        assert.strictEqual(delta(requests, { route: taskEntry.path, method: "POST", status: "202" }), 1)
        assert.strictEqual(delta(requests, { route: `${taskEntry.path}/{task_id}`, method: "GET", status: "200" }), 1)
        assert.strictEqual(delta(requests, { route: "unmatched", method: "GET", status: "404" }), 1)
        // The first scrape itself is counted once the second one is answered.
        assert.strictEqual(delta(requests, { route: "/metrics", method: "GET", status: "200" }), 1)
        const total = [...after.samples].filter(([k]) => k.startsWith(`${requests}{`)).reduce((n, [, v]) => n + v, 0)
        const totalBefore = [...before.samples].filter(([k]) => k.startsWith(`${requests}{`)).reduce((n, [, v]) => n + v, 0)
        assert.strictEqual(total - totalBefore, 6)

        assert.strictEqual(after.types.get("genway_http_requests_total"), "counter")
        assert.strictEqual(after.types.get("genway_http_request_duration_seconds"), "histogram")
        assert.strictEqual(delta("genway_http_request_duration_seconds_count", { route: "/v1/models", method: "GET" }), 2)
        assert.isAbove(delta("genway_http_request_duration_seconds_bucket", { route: "/v1/models", method: "GET", le: "+Inf" }), 1)

        // The label sets of the request metrics are exactly {route, method, status}.
        for (const key of after.samples.keys()) {
          if (key.startsWith(`${requests}{`)) assert.match(key, /^genway_http_requests_total\{method="[A-Z]+",route="[^"]+",status="\d{3}"\}$/)
        }
        for (const v of after.labelValues) {
          assert.notInclude(v, id)
          assert.notInclude(v, Harness.tokenA)
          assert.notInclude(v, "secret-path")
        }

        // Tasks by model and status, from the counts table.
        assert.strictEqual(value(after, "genway_tasks", { model: taskEntry.id, status: "pending" }), 1)
        assert.strictEqual(after.types.get("genway_tasks"), "gauge")
        assert.strictEqual(value(after, "genway_tasks_due"), 1)
        assert.strictEqual(after.types.get("genway_tasks_due"), "gauge")

        // A worker pass claims it (poll lag observed) and the task moves on.
        const lagBefore = value(after, "genway_poll_lag_seconds_count")
        assert.strictEqual(yield* Harness.work, 1)
        const worked = yield* scrape()
        assert.strictEqual(value(worked, "genway_poll_lag_seconds_count") - lagBefore, 1)
        const stored = [...worked.samples].filter(([k]) => k.startsWith(`genway_tasks{model="${taskEntry.id}",`))
        assert.strictEqual(stored.reduce((n, [, v]) => n + v, 0), 1)
        assert.strictEqual(value(worked, "genway_tasks_due"), 0)
        // Process metrics come along.
        assert.isTrue(worked.types.has("process_cpu_user_seconds_total"))
      }), 60_000)
  })

  layer(Harness.layer({ settings: { metricsToken: Option.some(Redacted.make("scrape-secret")) } }))((it) => {
    it.effect("with GATEWAY_METRICS_TOKEN: only that bearer token, tenant tokens refused", () =>
      Effect.gen(function*() {
        const none = yield* Harness.send(HttpClientRequest.get("/metrics"))
        assert.strictEqual(none.status, 401)
        assert.include(none.headers["www-authenticate"] ?? "", "Bearer")
        assert.strictEqual((yield* Harness.send(Harness.get("/metrics", Harness.tokenA))).status, 401)
        assert.strictEqual((yield* Harness.send(Harness.get("/metrics", "scrape-secre"))).status, 401)
        const ok = yield* scrape("scrape-secret")
        assert.isTrue(ok.types.has("genway_http_requests_total"))
        assert.isAtLeast(
          value(ok, "genway_http_requests_total", { route: "/metrics", method: "GET", status: "401" }),
          3
        )
      }), 30_000)
  })
})

// --- traces --------------------------------------------------------------------------------

interface ReceivedSpan {
  readonly attributes?: ReadonlyArray<{ readonly key: string; readonly value: unknown }>
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId?: string
  readonly name: string
  readonly kind: number
}

/** An OTLP/HTTP (JSON) receiver collecting spans. */
const receiver = await new Promise<{ readonly url: string; readonly spans: Array<ReceivedSpan>; readonly paths: Array<string> }>(
  (resolve) => {
    const spans: Array<ReceivedSpan> = []
    const paths: Array<string> = []
    const server = http.createServer((req, res) => {
      const chunks: Array<Buffer> = []
      req.on("data", (c: Buffer) => chunks.push(c))
      req.on("end", () => {
        paths.push(req.url ?? "")
        try {
          const body = JSON.parse(Buffer.concat(chunks).toString("utf8"))
          for (const rs of body.resourceSpans ?? []) {
            for (const ss of rs.scopeSpans ?? []) for (const s of ss.spans ?? []) spans.push(s)
          }
        } catch {
          // not JSON: ignored
        }
        res.writeHead(200, { "content-type": "application/json" }).end("{}")
      })
    })
    server.unref()
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as net.AddressInfo
      resolve({ url: `http://127.0.0.1:${port}`, spans, paths })
    })
  }
)

const tracing = Layer.mergeAll(Tracing.layer(receiver.url, "http/json"), Layer.succeed(TracingEnabled, true))

const until = <A>(what: string, f: () => A | undefined, ms = 15_000) =>
  Effect.gen(function*() {
    const deadline = Date.now() + ms
    while (Date.now() < deadline) {
      const a = f()
      if (a !== undefined) return a
      yield* Effect.promise(() => new Promise((r) => setTimeout(r, 50)))
    }
    return assert.fail(`timed out waiting for ${what}`)
  })

describe("traces over OTLP/HTTP", () => {
  layer(Chat.liveLayer().pipe(Layer.provide(tracing)), { excludeTestServices: true })((it) => {
    it.effect("a request's spans under the client's trace id; the vendor receives the same trace id", () =>
      Effect.gen(function*() {
        const emulator = yield* Chat.ChatEmulator
        const before = (yield* emulator.requests).length
        const traceId = "4bf92f3577b34da6a3ce929d0e0e4736"
        const parentId = "00f067aa0ba902b7"
        const url = yield* Chat.baseUrl
        const metricsBefore = yield* scrape()
        const response = yield* Effect.promise(() =>
          fetch(`${url}/v1/chat/completions`, {
            method: "POST",
            headers: {
              authorization: `Bearer ${Harness.tokenA}`,
              "content-type": "application/json",
              traceparent: `00-${traceId}-${parentId}-01`
            },
            body: JSON.stringify({ model: "image-model-2.5-flash-image-preview", messages: [{ role: "user", content: "a cat" }] })
          }).then(async (r) => ({ status: r.status, text: await r.text() }))
        )
        assert.strictEqual(response.status, 200, response.text)
        const metricsAfter = yield* scrape()
        const upstreamLabels = { vendor: "vendor-d", operation: "chat", outcome: "ok" }
        assert.strictEqual(
          value(metricsAfter, "genway_upstream_requests_total", upstreamLabels) -
            value(metricsBefore, "genway_upstream_requests_total", upstreamLabels),
          1
        )
        assert.strictEqual(
          value(metricsAfter, "genway_overhead_seconds_count", { route: "/v1/chat/completions" }) -
            value(metricsBefore, "genway_overhead_seconds_count", { route: "/v1/chat/completions" }),
          1
        )
        assert.strictEqual(
          value(metricsAfter, "genway_upstream_duration_seconds_count", { vendor: "vendor-d", operation: "chat" }) -
            value(metricsBefore, "genway_upstream_duration_seconds_count", { vendor: "vendor-d", operation: "chat" }),
          1
        )

        const sent = (yield* emulator.requests).slice(before)
        assert.strictEqual(sent.length, 1)
        const vendorTraceparent = sent[0]!.headers["traceparent"] ?? ""
        const m = /^00-([0-9a-f]{32})-([0-9a-f]{16})-0[01]$/.exec(vendorTraceparent)
        assert.isNotNull(m, `the vendor got a traceparent: ${vendorTraceparent}`)
        assert.strictEqual(m![1], traceId)

        const spans = yield* until("the request's spans", () => {
          const mine = receiver.spans.filter((s) => s.traceId === traceId)
          const server = mine.find((s) => s.parentSpanId === parentId)
          const upstream = mine.find((s) => s.spanId === m![2])
          const validate = mine.find((s) => s.name === "validate")
          return server !== undefined && upstream !== undefined && validate !== undefined ? mine : undefined
        })
        assert.isTrue(receiver.paths.every((p) => p === "/v1/traces"))
        const server = spans.find((s) => s.parentSpanId === parentId)!
        assert.strictEqual(server.kind, 2, "the server span is SERVER")
        const upstream = spans.find((s) => s.spanId === m![2])!
        assert.strictEqual(upstream.kind, 3, "the vendor's parent is a CLIENT span")
        // The upstream call descends from the server span.
        const byId = new Map(spans.map((s) => [s.spanId, s]))
        const descends = (span: ReceivedSpan) => {
          let cursor: ReceivedSpan | undefined = span
          while (cursor !== undefined && cursor.spanId !== server.spanId) {
            cursor = cursor.parentSpanId === undefined || cursor.parentSpanId === "" ? undefined : byId.get(cursor.parentSpanId)
          }
          return cursor !== undefined
        }
        assert.isTrue(descends(upstream), "the upstream span is a descendant of the server span")
        assert.isTrue(descends(spans.find((s) => s.name === "validate")!), "validation is a child of the server span")
        // No secret reaches the trace backend: neither the client's token nor the vendor's key.
        const exported = JSON.stringify(receiver.spans)
        assert.notInclude(exported, Harness.tokenA)
        assert.notInclude(exported, emulator.apiKey)
        const keyHeader = upstream.attributes?.find((a) => /key/i.test(a.key) && a.key.startsWith("http.request.header."))
        if (keyHeader !== undefined) assert.match(JSON.stringify(keyHeader.value), /redacted/i)
      }), 30_000)
  })
})

// --- logs ----------------------------------------------------------------------------------

describe("LOG_FORMAT=json", () => {
  const lines: Array<string> = []
  const capture = Layer.scopedDiscard(Effect.acquireRelease(
    Effect.sync(() => {
      const original = process.stdout.write.bind(process.stdout)
      process.stdout.write = ((chunk: unknown, ...rest: Array<unknown>) => {
        const s = typeof chunk === "string" ? chunk : Buffer.from(chunk as Uint8Array).toString("utf8")
        if (s.startsWith("{")) {
          lines.push(...s.split("\n").filter((l) => l !== ""))
          return true
        }
        return (original as (...a: Array<unknown>) => boolean)(chunk, ...rest)
      }) as typeof process.stdout.write
      return original
    }),
    (original) => Effect.sync(() => { process.stdout.write = original })
  ))
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "genway-obs-"))

  layer(Harness.layer({ settings: { dataDir } }).pipe(Layer.provide(Logging.layerJson), Layer.provide(capture)))((it) => {
    it.effect("one line per request and per task change, with their fields; no token, no prompt", () =>
      Effect.gen(function*() {
        const prompt = validBodies.E4!.prompt as string
        const created = yield* Harness.send(
          Harness.post(taskEntry.path, validBodies.E4, Harness.tokenA, { "x-request-id": "req-obs-1", "x-sandbox-outcome": "failed:3001" })
        )
        assert.strictEqual(created.status, 202)
        const id: string = created.json.task_info.id
        assert.strictEqual((yield* Harness.send(Harness.get("/v1/models", "not-a-valid-token"))).status, 401)
        yield* Harness.work
        yield* TestClock.adjust("2 seconds")
        yield* Harness.work
        // Lines leave in batches, once per turn of the event loop; this reads them now.
        Logging.flush()

        const parsed = lines.map((l) => JSON.parse(l) as Record<string, unknown>)
        const request = parsed.find((l) => l.request_id === "req-obs-1" && l.status === 202)
        assert.isDefined(request, lines.join("\n"))
        assert.strictEqual(request!.level, "info")
        assert.strictEqual(request!.method, "POST")
        assert.strictEqual(request!.route, taskEntry.path)
        assert.isNumber(request!.duration_ms)
        assert.match(String(request!.time), /^\d{4}-\d\d-\d\dT/)
        assert.isString(request!.msg)
        assert.match(String(request!.tenant), /^[0-9a-f]{8}$/)
        const refused = parsed.find((l) => l.status === 401 && l.route === "/v1/models")
        assert.isDefined(refused)
        assert.isUndefined(refused!.tenant)

        const changes = parsed.filter((l) => l.task_id === id)
        assert.deepStrictEqual(changes[0]!.from, null)
        assert.deepStrictEqual(changes[0]!.to, "pending")
        const last = changes.at(-1)!
        assert.strictEqual(last.to, "failed")
        assert.include(String(last.reason), "3001")
        assert.include(String(last.msg), "→ failed")
        for (const c of changes) {
          assert.strictEqual(c.model, taskEntry.id)
          assert.strictEqual(c.level, "info")
        }
        for (const l of lines) {
          assert.notInclude(l, Harness.tokenA)
          assert.notInclude(l, "not-a-valid-token")
          assert.notInclude(l, prompt)
        }
      }), 30_000)
  })
})

describe("log lines", () => {
  /**
   * Records each `process.stdout.write` call while `f` runs (and what `f` awaits); `written`
   * resolves at the first one.
   */
  const capturingStdout = async <A>(f: (writes: ReadonlyArray<string>, written: Promise<void>) => Promise<A>): Promise<A> => {
    const writes: Array<string> = []
    let wrote = () => {}
    const written = new Promise<void>((resolve) => {
      wrote = resolve
    })
    // What earlier tests logged is written first, outside the capture.
    Logging.flush()
    const original = process.stdout.write
    process.stdout.write = ((chunk: unknown) => {
      writes.push(String(chunk))
      wrote()
      return true
    }) as typeof process.stdout.write
    try {
      return await f(writes, written)
    } finally {
      process.stdout.write = original
    }
  }
  /**
   * Each `process.stdout.write` call while `f` runs, how many happened on its turn of the event
   * loop and on the next, and all of them once the first batch has left.
   */
  const writesOf = (f: () => void) =>
    capturingStdout(async (writes, written) => {
      f()
      const sameTurn = writes.length
      await new Promise((resolve) => setImmediate(resolve))
      const nextTurn = writes.length
      await written
      return { sameTurn, nextTurn, writes }
    })
  const logAll = (logger: ReturnType<typeof Logging.jsonLogger>, n: number) =>
    Effect.runSync(
      Effect.forEach(Array.from({ length: n }, (_, i) => i), (i) =>
        Effect.logInfo(`GET /x ${i}`, Logging.fields({ route: "/x", status: 200 + i, tenant: undefined, note: "two words" }))).pipe(
          Effect.annotateLogs("request_id", "r-1"),
          Effect.provide(Logger.replace(Logger.defaultLogger, logger))
        )
    )

  it("lines are batched past their turn of the event loop and leave in one write, with their fields (undefined ones left out)", async () => {
    const { nextTurn, sameTurn, writes } = await writesOf(() => logAll(Logging.jsonLogger(false), 3))
    assert.strictEqual(sameTurn, 0)
    assert.strictEqual(nextTurn, 0)
    assert.strictEqual(writes.length, 1)
    const parsed = writes[0]!.trimEnd().split("\n").map((l) => JSON.parse(l) as Record<string, unknown>)
    assert.deepStrictEqual(parsed.map((l) => [l.msg, l.request_id, l.route, l.status]), [
      ["GET /x 0", "r-1", "/x", 200],
      ["GET /x 1", "r-1", "/x", 201],
      ["GET /x 2", "r-1", "/x", 202]
    ])
    assert.isFalse(parsed.some((l) => "tenant" in l))
  })

  it("text lines carry the fields as key=value, quoted when they hold spaces", async () => {
    const { writes } = await writesOf(() => logAll(Logging.textLogger(false), 1))
    assert.match(writes.join(""), /^\S+ INFO GET \/x 0 request_id=r-1 route=\/x status=200 note="two words"\n$/)
  })

  it("flush writes what is batched at once", async () => {
    const { sameTurn, writes } = await writesOf(() => {
      logAll(Logging.jsonLogger(false), 2)
      Logging.flush()
    })
    assert.strictEqual(sameTurn, 1)
    assert.strictEqual(writes.length, 1)
    assert.strictEqual(writes[0]!.split("\n").length, 3)
  })

  it("a log pipe that breaks (EPIPE) does not end the process; the next lines are written as before", async () => {
    const epipe = Object.assign(new Error("write EPIPE"), { code: "EPIPE", errno: -32, syscall: "write" })
    // With no listener, emitting `error` throws: the process would end on an uncaught exception.
    assert.doesNotThrow(() => process.stdout.emit("error", epipe))
    const { writes } = await writesOf(() => logAll(Logging.jsonLogger(false), 1))
    assert.strictEqual(writes.length, 1)
  })

  it("releasing the logger layer writes the lines still batched (the last lines of a shutdown)", async () => {
    await capturingStdout(async (writes) => {
      // Resolves before the next turn of the event loop, when the batch would otherwise leave.
      await Effect.runPromise(Effect.logInfo("stopped").pipe(Effect.provide(Logging.layer("text"))))
      assert.strictEqual(writes.length, 1)
      assert.match(writes[0]!, /^\S+ INFO stopped\n$/)
    })
  })
})

// --- task counts kept by triggers ------------------------------------------------------------

/** Tasks created, worked to the end and one deleted: `task_counts` (summed over its shards) always equals a GROUP BY. */
const countsFollowTasks = (ctx: Context.Context<TaskStore | Scheduler | SqlClient.SqlClient>) =>
  Effect.gen(function*() {
    const store = Context.get(ctx, TaskStore)
    const sql = Context.get(ctx, SqlClient.SqlClient)
    const run = Effect.flatMap(Scheduler, (s) => s.runOnce).pipe(Effect.provide(ctx))
    const counted = Effect.gen(function*() {
      const kept = yield* sql`SELECT entry_id, status, SUM(n) AS n FROM task_counts GROUP BY entry_id, status HAVING SUM(n) <> 0 ORDER BY entry_id, status`
      const scanned = yield* sql`SELECT entry_id, status, COUNT(*) AS n FROM tasks GROUP BY entry_id, status ORDER BY entry_id, status`
      const norm = (rows: ReadonlyArray<any>) => rows.map((r) => `${r.entry_id}:${r.status}:${Number(r.n)}`)
      assert.deepStrictEqual(norm(kept), norm(scanned))
      return norm(kept)
    })
    const entries = Registry.entries.filter(ModelEntry.isTaskEntry).slice(0, 2)
    const ids: Array<string> = []
    for (let i = 0; i < 6; i++) {
      const entry = entries[i % 2]!
      const task = Pg.sandboxTask(entry, i, i === 0 ? { "x-sandbox-outcome": "failed:3001" } : {})
      ids.push(task.id)
      yield* store.create(task, 0)
    }
    assert.deepStrictEqual(yield* counted, [`${entries[0]!.id}:pending:3`, `${entries[1]!.id}:pending:3`].sort())
    yield* run
    for (let round = 0; round < 4; round++) {
      yield* TestClock.adjust("1 second")
      yield* run
      yield* counted
    }
    const final = yield* counted
    assert.include(final, `${entries[0]!.id}:failed:1`)
    assert.include(final, `${entries[0]!.id}:completed:2`)
    yield* sql`DELETE FROM tasks WHERE id = ${ids[1]!}`
    assert.include(yield* counted, `${entries[1]!.id}:completed:2`)
  })

describe("task_counts", () => {
  it.scoped("SQLite: triggers keep the counts equal to the tasks", () =>
    Effect.gen(function*() {
      const ctx = yield* Layer.build(
        Gateway.services(Effect.succeed(new Map()), Registry.layer()).pipe(
          Layer.provideMerge(Config.layerWith({ dataDir: Harness.tempDir(), databaseUrl: Option.none(), sandboxDelayMs: 1000, pollIntervalMs: Option.none() }))
        )
      )
      yield* countsFollowTasks(ctx)
    }), 30_000)

  it.scoped.skipIf(!Pg.available("observability.test.ts"))("PostgreSQL: triggers keep the counts equal to the tasks", () =>
    Effect.gen(function*() {
      const { replica } = yield* Pg.privateSchema
      const ctx = yield* Layer.build(replica(Harness.tempDir()))
      yield* countsFollowTasks(ctx)
    }), 60_000)

  // Before the counts were sharded, B's insert waited for A's transaction to end (both updated the
  // one `(model, pending)` row): concurrent creates of a model ran one at a time.
  it.scopedLive.skipIf(!Pg.available("observability.test.ts"))(
    "PostgreSQL: creates of one model on two connections do not wait for each other's count",
    () =>
      Effect.gen(function*() {
        const { replica, schema } = yield* Pg.privateSchema
        const a = yield* Layer.build(replica(Harness.tempDir()))
        const sqlA = Context.get(a, SqlClient.SqlClient)
        const entry = Registry.entries.filter(ModelEntry.isTaskEntry)[0]!
        const inserted = yield* Deferred.make<number>()
        const release = yield* Deferred.make<void>()
        const shardOf = (sql: SqlClient.SqlClient) =>
          Effect.map(sql`SELECT pg_backend_pid() % ${TaskCountShards.shards} AS s`, (rows) => Number(rows[0]!.s))
        // A creates a task and keeps its transaction open: its count row stays locked.
        const held = yield* Effect.fork(sqlA.withTransaction(Effect.gen(function*() {
          yield* Context.get(a, TaskStore).create(Pg.sandboxTask(entry, 0), 0)
          yield* Deferred.succeed(inserted, yield* shardOf(sqlA))
          yield* Deferred.await(release)
        })))
        const shardA = yield* Deferred.await(inserted)
        // B gives up on a lock after 2 s; a connection on A's shard (1 in 64) is set aside for another.
        const url = new URL(Pg.url!)
        url.searchParams.set("options", `-c search_path=${schema} -c lock_timeout=2000`)
        const created = yield* Effect.gen(function*() {
          for (let attempt = 0; attempt < 20; attempt++) {
            const b = yield* Layer.build(replica(Harness.tempDir(), { databaseUrl: Option.some(Redacted.make(url.toString())) }))
            const sqlB = Context.get(b, SqlClient.SqlClient)
            const done = yield* sqlB.withTransaction(Effect.gen(function*() {
              if ((yield* shardOf(sqlB)) === shardA) return false
              yield* Context.get(b, TaskStore).create(Pg.sandboxTask(entry, 1), 0)
              return true
            }))
            if (done) return true
          }
          return false
        }).pipe(Effect.ensuring(Deferred.succeed(release, undefined)))
        assert.isTrue(created, "B created its task while A's transaction was open")
        yield* Fiber.join(held)
        const rows = yield* sqlA`SELECT n FROM task_counts WHERE entry_id = ${entry.id} AND status = 'pending'`
        assert.deepStrictEqual(rows.map((r) => Number(r.n)), [1, 1])
      }),
    60_000
  )
})

// --- the Grafana dashboard -----------------------------------------------------------------

describe("docs/grafana-dashboard.json", () => {
  it("is importable, covers the operator's questions, and every query parses", () => {
    const file = path.join(__dirname, "..", "..", "..", "docs", "grafana-dashboard.json")
    const dashboard = JSON.parse(fs.readFileSync(file, "utf8"))
    assert.strictEqual(dashboard.__inputs[0].pluginId, "prometheus")
    const exprs: Array<string> = dashboard.panels.flatMap((p: any) => p.targets.map((t: any) => t.expr as string))
    const all = exprs.join("\n")
    for (const metric of [
      "genway_http_requests_total", "genway_overhead_seconds_bucket", "genway_tasks", "genway_tasks_due",
      "genway_poll_lag_seconds_bucket", "genway_webhook_deliveries_total"
    ]) assert.include(all, metric)
    // Only metrics of DESIGN.md §11.
    const known = new Set([
      "genway_http_requests_total", "genway_http_request_duration_seconds", "genway_overhead_seconds",
      "genway_upstream_requests_total", "genway_upstream_duration_seconds", "genway_tasks", "genway_task_duration_seconds",
      "genway_tasks_due", "genway_poll_lag_seconds", "genway_webhook_deliveries_total", "genway_rate_limited_total",
      "genway_rate_limiter_errors_total"
    ])
    for (const m of all.match(/genway_[a-z_]+/g) ?? []) assert.isTrue(known.has(m.replace(/_(bucket|count|sum)$/, "")), m)
    if (!promtool) return
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "genway-dash-"))
    const rules = ["groups:", "- name: dashboard", "  rules:"]
    exprs.forEach((e, i) => rules.push(`  - record: genway:dashboard_${i}`, `    expr: ${JSON.stringify(e.replaceAll("$__rate_interval", "5m"))}`))
    fs.writeFileSync(path.join(dir, "rules.yml"), rules.join("\n") + "\n")
    execFileSync("promtool", ["check", "rules", path.join(dir, "rules.yml")], { stdio: "pipe" })
  }, 30_000)
})

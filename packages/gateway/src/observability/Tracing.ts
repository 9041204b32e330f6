/**
 * Traces over OTLP/HTTP (`@effect/opentelemetry`'s OTLP tracer, no OpenTelemetry SDK), when
 * `OTEL_EXPORTER_OTLP_ENDPOINT` is set: spans go to `<endpoint>/v1/traces` as protobuf
 * (`OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf`, the default) or JSON (`http/json`), with
 * `OTEL_EXPORTER_OTLP_HEADERS` (`k=v,k2=v2`) and `OTEL_SERVICE_NAME` (default `genway`) honoured.
 * The exporter has its own HTTP client, so its requests are neither traced nor counted as
 * vendor calls.
 *
 * Spans never carry secrets: query strings are cut from `url.full` and `url.query` is dropped
 * (signed media URLs, vendors' download tokens), and header attributes whose name speaks of a
 * key, token, secret, signature, cookie or authorization are redacted (vendor API key headers
 * included).
 */
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import * as OtlpSerialization from "@effect/opentelemetry/OtlpSerialization"
import * as OtlpTracer from "@effect/opentelemetry/OtlpTracer"
import * as Config from "effect/Config"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Tracer from "effect/Tracer"

/** Parses `k=v,k2=v2` (values URL-decoded, as the OpenTelemetry specification says). */
export const parseHeaders = (raw: string): Record<string, string> => {
  const out: Record<string, string> = {}
  for (const part of raw.split(",")) {
    const i = part.indexOf("=")
    if (i <= 0) continue
    const key = part.slice(0, i).trim()
    const value = part.slice(i + 1).trim()
    try {
      out[key] = decodeURIComponent(value)
    } catch {
      out[key] = value
    }
  }
  return out
}

const sensitiveHeader = /^http\.(request|response)\.header\..*(auth|key|token|secret|signature|cookie|session)/i

/** An attribute value fit for export. */
export const scrub = (key: string, value: unknown): unknown => {
  if (key === "url.query") return "REDACTED"
  if (key === "url.full" && typeof value === "string") {
    const i = value.search(/[?#]/)
    return i === -1 ? value : value.slice(0, i)
  }
  if (sensitiveHeader.test(key)) return "REDACTED"
  return value
}

const scrubSpan = (span: Tracer.Span): Tracer.Span =>
  new Proxy(span, {
    get(target, property) {
      if (property === "attribute") return (key: string, value: unknown) => target.attribute(key, scrub(key, value))
      const v = Reflect.get(target, property, target)
      return typeof v === "function" ? v.bind(target) : v
    }
  })

/** The tracer with every span's attributes scrubbed (`scrub`). */
export const scrubbing = (tracer: Tracer.Tracer): Tracer.Tracer =>
  Tracer.make({
    span: (name, parent, context, links, startTime, kind, options) =>
      scrubSpan(tracer.span(name, parent, context, links, startTime, kind, options)),
    context: (f, fiber) => tracer.context(f, fiber)
  })

/** The OTLP tracer towards `endpoint`. */
export const layer = (endpoint: string, protocol: "http/protobuf" | "http/json") =>
  Layer.unwrapEffect(Effect.gen(function*() {
    const headers = yield* Config.string("OTEL_EXPORTER_OTLP_HEADERS").pipe(Config.withDefault(""))
    const serviceName = yield* Config.string("OTEL_SERVICE_NAME").pipe(Config.withDefault("genway"))
    return Layer.unwrapScoped(Effect.map(
      OtlpTracer.make({
        url: `${endpoint.replace(/\/+$/, "")}/v1/traces`,
        resource: { serviceName },
        headers: parseHeaders(headers),
        exportInterval: "1 second"
      }),
      (tracer) => Layer.setTracer(scrubbing(tracer))
    )).pipe(
      Layer.provide(protocol === "http/json" ? OtlpSerialization.layerJson : OtlpSerialization.layerProtobuf),
      Layer.provide(NodeHttpClient.layerUndici)
    )
  }).pipe(Effect.orDie))

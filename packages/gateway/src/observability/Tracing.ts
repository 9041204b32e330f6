/**
 * Traces over OTLP/HTTP (`@effect/opentelemetry`'s OTLP tracer, no OpenTelemetry SDK), when
 * `OTEL_EXPORTER_OTLP_ENDPOINT` is set: spans go to `<endpoint>/v1/traces` as protobuf
 * (`OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf`, the default) or JSON (`http/json`), with
 * `OTEL_EXPORTER_OTLP_HEADERS` (`k=v,k2=v2`) and `OTEL_SERVICE_NAME` (default `genway`) honoured.
 * The exporter has its own HTTP client, so its requests are neither traced nor counted as
 * vendor calls.
 */
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import * as OtlpSerialization from "@effect/opentelemetry/OtlpSerialization"
import * as OtlpTracer from "@effect/opentelemetry/OtlpTracer"
import * as Config from "effect/Config"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"

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

/** The OTLP tracer towards `endpoint`. */
export const layer = (endpoint: string, protocol: "http/protobuf" | "http/json") =>
  Layer.unwrapEffect(Effect.gen(function*() {
    const headers = yield* Config.string("OTEL_EXPORTER_OTLP_HEADERS").pipe(Config.withDefault(""))
    const serviceName = yield* Config.string("OTEL_SERVICE_NAME").pipe(Config.withDefault("genway"))
    return OtlpTracer.layer({
      url: `${endpoint.replace(/\/+$/, "")}/v1/traces`,
      resource: { serviceName },
      headers: parseHeaders(headers),
      exportInterval: "1 second"
    }).pipe(
      Layer.provide(protocol === "http/json" ? OtlpSerialization.layerJson : OtlpSerialization.layerProtobuf),
      Layer.provide(NodeHttpClient.layerUndici)
    )
  }).pipe(Effect.orDie))

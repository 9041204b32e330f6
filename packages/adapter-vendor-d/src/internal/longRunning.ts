/**
 * vendor-d protocol "long-running" (G1, G2): `POST {base}/models/{model}:predictLongRunning` with
 * `{instances: [...], parameters: {...}}`, the operation name as the task's ref, `GET {base}/{name}`
 * until `done`, and video URIs that need the key (the gateway mirrors them). No client-chosen id
 * exists, hence no `reconcile`.
 */
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import { Media, type ModelEntry, VendorAdapter } from "@genway/core"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { Mapping, type Protocols } from "@genway/adapter-kit"
import { isOk, rejected, taskError, type Upstream } from "./http.js"

/** Image formats the vendor takes inline. */
const imageFormats: ReadonlySet<Media.ImageFormat> = new Set(["jpeg", "png", "webp"])

/** An inline image as the vendor takes it. URLs are refused: the gateway does not fetch client URLs. */
const inlineImage = (field: string, value: unknown) =>
  Effect.gen(function*() {
    const ref = typeof value === "string" ? Media.classifyImageRef(value) : undefined
    if (ref?._tag === "Url") {
      return yield* rejected(400, `${field}: image URLs are not supported by this vendor; send a data URL or Base64`)
    }
    if (ref === undefined) return yield* rejected(400, `${field} must be a Base64 data URL or raw Base64`)
    const sniffed = Media.sniffBase64Image(ref.base64)
    const mimeType = sniffed === undefined || !imageFormats.has(sniffed.format) ? undefined : Media.mimeTypes[sniffed.format]
    if (mimeType === undefined) return yield* rejected(400, `${field} must be a JPEG, PNG or WebP picture`)
    return { bytesBase64Encoded: ref.base64, mimeType }
  })

/** How the vendor takes each value, by its upstream name (the entry's mapping places and names it). */
const instanceImages = new Set(["image", "lastFrame"])
const encoders: Readonly<Record<string, (v: unknown) => unknown>> = {
  prompt: String,
  aspectRatio: String,
  durationSeconds: Number,
  resolution: (v) => String(v).toLowerCase(),
  negativePrompt: String
}

/**
 * The create body: the entry's mapping (`Mapping.project`) puts each field in the instance or the
 * parameters under its upstream name, so a new model parameter is registry data; inline images
 * become `{bytesBase64Encoded, mimeType}` and the fixed parameters get the vendor's types.
 */
export const toUpstreamBody = (task: VendorAdapter.UpstreamTask) =>
  Effect.gen(function*() {
    const projected = Mapping.project(task.entry.upstream, task.body)
    const encode = (values: Record<string, unknown>) => {
      for (const [name, value] of Object.entries(values)) {
        const encoder = encoders[name]
        if (encoder !== undefined) values[name] = encoder(value)
      }
      return values
    }
    const instance = encode(projected.input)
    const parameters = encode(projected.parameters)
    for (const name of instanceImages) {
      if (instance[name] !== undefined) instance[name] = yield* inlineImage(fieldOf(task.entry.upstream, name), instance[name])
    }
    if (parameters["durationSeconds"] !== undefined && !Number.isFinite(parameters["durationSeconds"])) {
      return yield* rejected(400, "duration must be a number of seconds")
    }
    parameters["sampleCount"] = 1
    return { instances: [instance], parameters }
  })

/** The gateway field sent under `name` (for messages that name the client's field). */
const fieldOf = (upstream: ModelEntry.UpstreamMapping, name: string): string =>
  Object.entries(upstream.rename ?? {}).find(([, to]) => to === name)?.[0] ?? name

const Created = Schema.parseJson(Schema.Struct({ name: Schema.String }))

const Operation = Schema.parseJson(Schema.Struct({
  done: Schema.optional(Schema.Unknown),
  error: Schema.optional(Schema.Struct({
    code: Schema.optional(Schema.Number),
    message: Schema.optional(Schema.String),
    status: Schema.optional(Schema.String)
  })),
  response: Schema.optional(Schema.Struct({
    generateVideoResponse: Schema.optional(Schema.Struct({
      generatedSamples: Schema.optional(Schema.Array(Schema.Struct({
        video: Schema.optional(Schema.Struct({ uri: Schema.optional(Schema.String) }))
      }))),
      raiMediaFilteredCount: Schema.optional(Schema.Number),
      raiMediaFilteredReasons: Schema.optional(Schema.Array(Schema.String))
    }))
  }))
}))

// Operation names are relative paths (`models/{model}/operations/{id}`); anything else is not polled.
const operationName = /^(?!.*\.\.)(?!.*\/\/)[A-Za-z0-9][A-Za-z0-9._\-/]{0,500}$/

/** Operation error statuses of the invalid-request family (gRPC names and numbers, or HTTP 400). */
const invalidStatuses = new Set(["INVALID_ARGUMENT", "OUT_OF_RANGE"])
const invalidCodes = new Set([3, 11, 400])

/** The "long-running" protocol over vendor-d's HTTP access. */
export const make = (upstream: Upstream): Protocols.TaskProtocol => {
  const submit = (task: VendorAdapter.UpstreamTask) =>
    Effect.gen(function*() {
      const body = yield* toUpstreamBody(task)
      const reply = yield* upstream.exchange(
        HttpClientRequest.post(`${upstream.baseUrl}/models/${encodeURIComponent(task.upstreamModel)}:predictLongRunning`).pipe(
          HttpClientRequest.acceptJson,
          HttpClientRequest.bodyUnsafeJson(body)
        ),
        "submit"
      )
      if (!isOk(reply.status)) return yield* upstream.failure(reply, "submit")
      const created = Schema.decodeUnknownOption(Created)(reply.text)
      if (created._tag === "None" || !operationName.test(created.value.name)) {
        // The vendor said yes but we cannot tell to what: the operation may exist.
        return yield* new VendorAdapter.OutcomeUnknown({ reason: "vendor-d accepted the create but its answer was unreadable" })
      }
      // The vendor reports no queued state: an accepted operation is running.
      return { ref: created.value.name, status: "processing" } satisfies VendorAdapter.Submitted
    })

  const poll = (task: VendorAdapter.UpstreamTask & { readonly upstreamRef: string }) =>
    Effect.gen(function*() {
      if (!operationName.test(task.upstreamRef)) return yield* rejected(3001, "the stored vendor-d operation name is unusable")
      const reply = yield* upstream.exchange(
        HttpClientRequest.get(`${upstream.baseUrl}/${task.upstreamRef}`).pipe(HttpClientRequest.acceptJson),
        "poll"
      )
      if (!isOk(reply.status)) return yield* upstream.failure(reply, "poll")
      const decoded = Schema.decodeUnknownOption(Operation)(reply.text)
      if (decoded._tag === "None") return yield* new VendorAdapter.Retryable({ reason: "vendor-d: unreadable operation" })
      const operation = decoded.value
      const running: VendorAdapter.PollOutcome = { _tag: "Running", status: "processing" }

      // proto3 JSON leaves `done` out while it is false.
      if (operation.done === undefined || operation.done === false) return running
      if (operation.done !== true) {
        yield* Effect.logWarning("vendor-d: operation with an unknown `done` value; treating it as still running").pipe(
          Effect.annotateLogs({ done: upstream.scrub(JSON.stringify(operation.done)).slice(0, 100) })
        )
        return running
      }
      if (operation.error !== undefined) {
        const { code, message, status } = operation.error
        const invalid = (status !== undefined && invalidStatuses.has(status)) || (code !== undefined && invalidCodes.has(code))
        const detail = upstream.scrub(message ?? "the vendor reported the operation as failed")
        return { _tag: "Failed", error: taskError(invalid ? 400 : 3001, detail) } satisfies VendorAdapter.PollOutcome
      }
      const result = operation.response?.generateVideoResponse
      const uris = (result?.generatedSamples ?? []).flatMap((s) => (s.video?.uri !== undefined ? [s.video.uri] : []))
      if (uris.length > 0) {
        return {
          _tag: "Completed",
          media: uris.map((url) => ({ _tag: "Url", url, contentType: "video/mp4" }) as const)
        } satisfies VendorAdapter.PollOutcome
      }
      if ((result?.raiMediaFilteredCount ?? 0) > 0) {
        const reasons = (result?.raiMediaFilteredReasons ?? []).map(upstream.scrub).join(" ")
        const detail = `the vendor's content filter blocked the video${reasons !== "" ? `: ${reasons}` : ""}`
        return { _tag: "Failed", error: taskError(400, detail, "Content filtered") } satisfies VendorAdapter.PollOutcome
      }
      return {
        _tag: "Failed",
        error: taskError(3001, "the vendor finished the operation without a video")
      } satisfies VendorAdapter.PollOutcome
    })

  return { submit, poll }
}

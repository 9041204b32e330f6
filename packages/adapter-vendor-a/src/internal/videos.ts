/**
 * vendor-a protocol "videos" (E7): `POST {base}/videos` as multipart/form-data, `GET {base}/videos/{id}`
 * honouring `openai-poll-after-ms`, and the MP4 at `{base}/videos/{id}/content` (key required, so
 * the gateway mirrors it). The vendor has no client-chosen id, hence no `reconcile`.
 */
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import { Media, VendorAdapter } from "@genway/core"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { Outcome, type Protocols } from "@genway/adapter-kit"
import { isOk, pollAfterOf, rejected, taskError, type Upstream } from "./http.js"

// SPEC.md §4.8 defaults; sent explicitly because the vendor's own defaults differ.
const DEFAULT_SECONDS = "8"
const DEFAULT_SIZE = "1280x720"

/** Every video status of the vendor and its gateway state. Anything else is logged and kept running. */
const statusTable: Readonly<Record<string, "pending" | "processing" | "completed" | "failed">> = {
  queued: "pending",
  in_progress: "processing",
  completed: "completed",
  failed: "failed"
}

const stateOf = (status: string) => (Object.hasOwn(statusTable, status) ? statusTable[status] : undefined)

const VideoObject = Schema.Struct({
  id: Schema.String.pipe(Schema.pattern(/^[A-Za-z0-9_.-]{1,200}$/)),
  status: Schema.String,
  progress: Schema.optional(Schema.NullOr(Schema.Number)),
  // The video's length: a string of seconds ("4", "8", "12"); usage is settled on it.
  seconds: Schema.optional(Schema.NullOr(Schema.Union(Schema.String, Schema.Number))),
  error: Schema.optional(
    Schema.NullOr(
      Schema.Struct({
        code: Schema.optional(Schema.NullOr(Schema.String)),
        message: Schema.optional(Schema.NullOr(Schema.String))
      })
    )
  )
})

const decodeVideo = Schema.decodeUnknownOption(Schema.parseJson(VideoObject))

/** Media types the vendor takes for `input_reference`, by sniffed format. */
const referenceTypes: Partial<Record<Media.ImageFormat, { readonly type: string; readonly extension: string }>> = Object.fromEntries(
  (["jpeg", "png", "webp"] as const).map((f) => [f, { type: Media.mimeTypes[f], extension: Media.extensionFor(Media.mimeTypes[f]) }])
)

/**
 * The first-frame image as a file part. Image URLs are refused: the gateway does not fetch client
 * URLs and the vendor only takes an uploaded file.
 */
const inputReference = (image: string) =>
  Effect.gen(function*() {
    const ref = Media.classifyImageRef(image)
    if (ref?._tag === "Url") {
      return yield* rejected(400, "image URLs are not supported by this vendor; send a data URL")
    }
    if (ref === undefined) return yield* rejected(400, "image must be a Base64 data URL")
    const sniffed = Media.sniffBase64Image(ref.base64)
    const kind = sniffed === undefined ? undefined : referenceTypes[sniffed.format]
    if (kind === undefined) return yield* rejected(400, "image must be a JPEG, PNG or WebP picture")
    const bytes = Buffer.from(ref.base64, "base64")
    return { blob: new Blob([bytes], { type: kind.type }), filename: `input_reference.${kind.extension}` }
  })

/** The multipart body of a create. */
export const toFormData = (task: VendorAdapter.UpstreamTask): Effect.Effect<FormData, VendorAdapter.Rejected> =>
  Effect.gen(function*() {
    const body = task.body
    const form = new FormData()
    form.append("prompt", String(body["prompt"] ?? ""))
    form.append("model", task.upstreamModel)
    form.append("seconds", String(body["seconds"] ?? DEFAULT_SECONDS))
    form.append("size", String(body["size"] ?? DEFAULT_SIZE))
    const image = body["image"]
    if (typeof image === "string" && image !== "") {
      const file = yield* inputReference(image)
      form.append("input_reference", file.blob, file.filename)
    }
    return form
  })

/**
 * Encodes the form to bytes with the platform's `Response`, so every HttpClient implementation
 * sends the same body (undici's own client cannot stream a FormData made by Node's built-in copy).
 */
const encodeForm = (form: FormData) =>
  Effect.tryPromise({
    try: async () => {
      const encoded = new Response(form)
      return {
        contentType: encoded.headers.get("content-type") ?? "multipart/form-data",
        bytes: new Uint8Array(await encoded.arrayBuffer())
      }
    },
    catch: () => rejected(3001, "the create request for vendor-a could not be encoded")
  })

/**
 * Failure codes of the invalid-request family (400): moderation, policy, invalid input. Every
 * other code, or none, is an execution error (3001).
 */
const invalidRequestCode = /moderation|policy|safety|invalid|unsupported|rejected|not_allowed|prohibited/i

const failedError = (upstream: Upstream, error: typeof VideoObject.Type["error"]) => {
  const code = error?.code ?? undefined
  const message = upstream.scrub(error?.message ?? "the vendor reported the video as failed")
  return taskError(code !== undefined && invalidRequestCode.test(code) ? 400 : 3001, code !== undefined ? `${message} (${code})` : message)
}

/** The "videos" protocol over vendor-a's HTTP access. */
export const make = (upstream: Upstream): Protocols.TaskProtocol => {
  const videoUrl = (id: string) => `${upstream.baseUrl}/videos/${encodeURIComponent(id)}`

  const submit = (task: VendorAdapter.UpstreamTask) =>
    Effect.gen(function*() {
      const form = yield* encodeForm(yield* toFormData(task))
      const reply = yield* upstream.exchange(
        HttpClientRequest.post(`${upstream.baseUrl}/videos`).pipe(
          HttpClientRequest.acceptJson,
          HttpClientRequest.bodyUint8Array(form.bytes, form.contentType)
        ),
        "submit"
      )
      if (!isOk(reply.status)) return yield* upstream.failure(reply, "submit")
      const video = decodeVideo(reply.text)
      if (video._tag === "None") {
        // The vendor said yes but we cannot tell to what: the job may exist.
        return yield* new VendorAdapter.OutcomeUnknown({ reason: "vendor-a accepted the create but its answer was unreadable" })
      }
      const pollAfter = pollAfterOf(reply.headers)
      const submitted: VendorAdapter.Submitted = {
        ref: video.value.id,
        status: stateOf(video.value.status) === "processing" ? "processing" : "pending",
        ...(pollAfter !== undefined ? { pollAfter } : {})
      }
      return submitted
    })

  const poll = (task: VendorAdapter.UpstreamTask & { readonly upstreamRef: string }) =>
    Effect.gen(function*() {
      const reply = yield* upstream.exchange(HttpClientRequest.get(videoUrl(task.upstreamRef)).pipe(HttpClientRequest.acceptJson), "poll")
      if (!isOk(reply.status)) return yield* upstream.failure(reply, "poll")
      const video = decodeVideo(reply.text)
      if (video._tag === "None") return yield* new VendorAdapter.Retryable({ reason: "vendor-a: unreadable video status" })
      const pollAfter = pollAfterOf(reply.headers)
      const progress = video.value.progress
      const running = (status: "pending" | "processing"): VendorAdapter.PollOutcome => ({
        _tag: "Running",
        status,
        ...(pollAfter !== undefined ? { pollAfter } : {}),
        ...(typeof progress === "number" && progress >= 0 && progress <= 100 ? { progress } : {})
      })
      const state = stateOf(video.value.status)
      switch (state) {
        case "pending":
        case "processing":
          return running(state)
        case "completed":
          return Outcome.completed(
            [{ _tag: "Url", url: `${videoUrl(video.value.id)}/content`, contentType: "video/mp4" }],
            Outcome.reportedSeconds([video.value.seconds])
          )
        case "failed":
          return { _tag: "Failed", error: failedError(upstream, video.value.error) } satisfies VendorAdapter.PollOutcome
        case undefined:
          yield* Effect.logWarning("vendor-a: unknown video status; treating it as still running").pipe(
            Effect.annotateLogs({ status: upstream.scrub(video.value.status).slice(0, 100) })
          )
          return running("processing")
      }
    })

  return { submit, poll }
}

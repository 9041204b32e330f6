/**
 * The live vendor-b adapter, protocol "async-task" (UPSTREAMS.md): a create call with
 * `X-DashScope-Async: enable` and a nested `{model, input, parameters}` body, then polling
 * `GET {base}/tasks/{task_id}`. The vendor has no client-chosen id, hence no `reconcile`: a
 * submit whose answer was lost is reported as `OutcomeUnknown`, never resent.
 */
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import type * as ConfigError from "effect/ConfigError"
import * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import { Http, Manifest, Mapping, Outcome } from "@genway/adapter-kit"
import { Media, type ModelEntry, type TaskInfo, VendorAdapter } from "@genway/core"
import * as Config from "./Config.js"

const vendor = "vendor-b"

/** The protocol name registry entries of this adapter carry in `upstream.protocol`. */
export const protocol = "async-task"

/** How the prompt travels: as `input.prompt`, or as a one-message chat (text-to-image models). */
type PromptForm = "text" | "messages"

/** Create endpoints by `upstream.operation`, relative to `{base}`. */
export const operations: Readonly<Record<string, { readonly path: string; readonly prompt: PromptForm }>> = {
  "video-synthesis": { path: "/services/aigc/video-generation/video-synthesis", prompt: "text" },
  "image2video": { path: "/services/aigc/image2video/video-synthesis", prompt: "text" },
  "image-generation": { path: "/services/aigc/image-generation/generation", prompt: "messages" }
}

/** The nested create body of the vendor. */
export interface UpstreamBody {
  readonly model: string
  readonly input: Record<string, unknown>
  readonly parameters: Record<string, unknown>
}


// The vendor takes inline images only as data URLs; raw Base64 gets the prefix of its sniffed type.
const asDataUrl = (value: unknown): unknown => {
  if (Array.isArray(value)) return value.map(asDataUrl)
  if (typeof value !== "string") return value
  const ref = Media.classifyImageRef(value)
  if (ref?._tag !== "Base64") return value
  const facts = Media.sniffBase64Image(ref.base64)
  return facts === undefined ? value : `data:${Media.mimeTypes[facts.format]};base64,${ref.base64}`
}

/**
 * Builds the vendor's nested body from a gateway body, driven by the entry's `upstream` data
 * (`Mapping.project`: `parameters` and `input` as listed, `rename`d), inline images as data URLs.
 * Operations whose prompt form is "messages" carry the prompt as `input.messages[0].content[0].text`.
 */
export const toUpstreamBody = (
  entry: ModelEntry.ModelEntry,
  body: Readonly<Record<string, unknown>>,
  upstreamModel: string
): UpstreamBody => {
  const imageFields = new Set(entry.images.map((rule) => rule.field.replace(/\[\]$/, "")))
  const { input, parameters } = Mapping.project(entry.upstream, body, (field, value) => imageFields.has(field) ? asDataUrl(value) : value)
  if (operations[entry.upstream.operation]?.prompt === "messages" && typeof input["prompt"] === "string") {
    input["messages"] = [{ role: "user", content: [{ text: input["prompt"] }] }]
    delete input["prompt"]
  }
  return { model: upstreamModel, input, parameters }
}

/** Task states of the vendor and what they mean for the gateway (UPSTREAMS.md). */
type StateMeaning =
  | { readonly _tag: "Running"; readonly status: "pending" | "processing" }
  | { readonly _tag: "Succeeded" }
  | { readonly _tag: "Failed" }
  | { readonly _tag: "Gone"; readonly detail: string }

const states: Readonly<Record<string, StateMeaning>> = {
  PENDING: { _tag: "Running", status: "pending" },
  RUNNING: { _tag: "Running", status: "processing" },
  SUSPENDED: { _tag: "Running", status: "processing" },
  SUCCEEDED: { _tag: "Succeeded" },
  FAILED: { _tag: "Failed" },
  CANCELED: { _tag: "Gone", detail: "The task was canceled at vendor-b." },
  UNKNOWN: { _tag: "Gone", detail: "vendor-b no longer knows the task (invalid or expired task id)." }
}

// Vendor error codes of the invalid-request family (bad parameters, content moderation, bad URLs).
const invalidRequestCode = /^(InvalidParameter|DataInspectionFailed|InvalidURL|InvalidFile|BadRequest|IPInfringementSuspect)/

const describe = (code: string | undefined, message: string | undefined, fallback: string): string =>
  message !== undefined && message !== ""
    ? (code !== undefined && code !== "" ? `${message} (${code})` : message)
    : (code !== undefined && code !== "" ? `${fallback} (${code})` : fallback)

/** A failed task's error from the `code`/`message` the vendor puts inside `output`. */
const taskFailure = (output: Record<string, unknown>): TaskInfo.TaskError => {
  const code = Http.stringAt(output, "code")
  const message = Http.stringAt(output, "message")
  return Outcome.taskError(
    code !== undefined && invalidRequestCode.test(code) ? 400 : 3001,
    describe(code, message, "vendor-b reported the task as failed")
  )
}

/** Maps a non-2xx answer to an adapter error. `submit` answers may be the client's fault (400). */
const httpFailure = (
  answer: Http.Answer,
  phase: "submit" | "poll"
): Effect.Effect<never, VendorAdapter.Retryable | VendorAdapter.Rejected> =>
  Effect.flatMap(Http.retryAfter(answer.headers), (after): Effect.Effect<never, VendorAdapter.Retryable | VendorAdapter.Rejected> => {
    const body = Http.parseObject(answer.text)
    const code = Http.stringAt(body, "code")
    const message = Http.stringAt(body, "message")
    if (Http.isTransientStatus(answer.status)) {
      return Effect.fail(Outcome.retryable(`${vendor} answered HTTP ${answer.status}${code !== undefined ? ` ${code}` : ""}`, after))
    }
    const status = answer.status
    if (phase === "submit" && (status === 400 || status === 413) && code !== "Arrearage") {
      return Effect.fail(Outcome.rejected(400, describe(code, message, `${vendor} rejected the request`)))
    }
    const why = status === 401 || status === 403
      ? `${vendor} refused the gateway's credentials for this model`
      : code === "Arrearage"
      ? `${vendor} refused the request: the upstream account is in arrears`
      : status === 404
      ? `${vendor} does not know this ${phase === "submit" ? "model or endpoint" : "task"}`
      : describe(code, message, `${vendor} refused the request`)
    return Effect.fail(Outcome.rejected(3001, `${why} (HTTP ${status}).`))
  })

const resultMedia = (output: Record<string, unknown>): ReadonlyArray<VendorAdapter.MediaSource> => {
  const urls: Array<string> = []
  const video = output["video_url"]
  if (typeof video === "string" && video !== "") urls.push(video)
  const choices = output["choices"]
  if (Array.isArray(choices)) {
    for (const choice of choices) {
      const content = Http.isRecord(choice) && Http.isRecord(choice["message"]) ? choice["message"]["content"] : undefined
      if (!Array.isArray(content)) continue
      for (const part of content) {
        const image = Http.stringAt(part, "image")
        if (image !== undefined && image !== "") urls.push(image)
      }
    }
  }
  const results = output["results"]
  if (Array.isArray(results)) {
    for (const result of results) {
      const url = Http.stringAt(result, "url")
      if (url !== undefined && url !== "") urls.push(url)
    }
  }
  return urls.map((url) => ({ _tag: "Url", url }))
}

/** Builds the live vendor-b adapter. The `HttpClient` is the gateway's (Node or fetch). */
export const make = (config: Config.VendorBConfig): Effect.Effect<VendorAdapter.VendorAdapter, never, HttpClient.HttpClient> =>
  Effect.gen(function*() {
    // Vendors need no trace headers of ours.
    const client = HttpClient.withTracerPropagation(yield* HttpClient.HttpClient, false)
    const timeout = config.timeout ?? "30 seconds"
    const authed = (request: HttpClientRequest.HttpClientRequest) =>
      request.pipe(HttpClientRequest.bearerToken(config.apiKey), HttpClientRequest.acceptJson)

    const submit = (task: VendorAdapter.UpstreamTask): Effect.Effect<VendorAdapter.Submitted, VendorAdapter.AdapterError> =>
      Effect.gen(function*() {
        const operation = operations[task.entry.upstream.operation]
        if (task.entry.upstream.protocol !== protocol || operation === undefined) {
          return yield* Outcome.rejected(
            3001,
            `The model ${task.entry.model} is misconfigured: vendor-b has no operation "${task.entry.upstream.operation}".`
          )
        }
        const request = HttpClientRequest.post(`${config.baseUrl}${operation.path}`).pipe(
          authed,
          HttpClientRequest.setHeader("X-DashScope-Async", "enable"),
          HttpClientRequest.bodyUnsafeJson(toUpstreamBody(task.entry, task.body, task.upstreamModel))
        )
        const answer = yield* Http.exchange(client, request, timeout).pipe(Effect.mapError(Http.lost({ vendor, phase: "submit" })))
        if (!Http.isOk(answer.status)) return yield* httpFailure(answer, "submit")
        const output = Http.parseObject(answer.text)?.["output"]
        const taskId = Http.stringAt(output, "task_id")
        if (taskId === undefined || taskId === "") {
          return yield* new VendorAdapter.OutcomeUnknown({
            reason: `${vendor} submit: HTTP ${answer.status} without a readable task id`
          })
        }
        const state = states[Http.stringAt(output, "task_status") ?? "PENDING"]
        return { ref: taskId, status: state?._tag === "Running" ? state.status : "processing" }
      })

    const poll = (
      task: VendorAdapter.UpstreamTask & { readonly upstreamRef: string }
    ): Effect.Effect<VendorAdapter.PollOutcome, VendorAdapter.AdapterError> =>
      Effect.gen(function*() {
        const request = authed(HttpClientRequest.get(`${config.baseUrl}/tasks/${encodeURIComponent(task.upstreamRef)}`))
        const answer = yield* Http.exchange(client, request, timeout).pipe(Effect.mapError(Http.lost({ vendor, phase: "poll" })))
        if (!Http.isOk(answer.status)) return yield* httpFailure(answer, "poll")
        const output = Http.parseObject(answer.text)?.["output"]
        const status = Http.stringAt(output, "task_status")
        if (!Http.isRecord(output) || status === undefined) {
          return yield* Outcome.retryable(`${vendor} poll: unreadable answer (HTTP ${answer.status})`)
        }
        const meaning = states[status]
        switch (meaning?._tag) {
          case "Running":
            return { _tag: "Running", status: meaning.status }
          case "Succeeded": {
            const media = resultMedia(output)
            return media.length > 0
              ? { _tag: "Completed", media }
              : { _tag: "Failed", error: Outcome.taskError(3001, "vendor-b reported success without any result.") }
          }
          case "Failed":
            return { _tag: "Failed", error: taskFailure(output) }
          case "Gone":
            return { _tag: "Failed", error: Outcome.taskError(3001, meaning.detail) }
          case undefined:
            return yield* Outcome.unknownState(vendor, task.taskId, status)
        }
      })

    // The task-management API cancels a task that is still queued; a running one will finish.
    const cancel = (
      task: VendorAdapter.UpstreamTask & { readonly upstreamRef: string }
    ): Effect.Effect<VendorAdapter.CancelOutcome, VendorAdapter.AdapterError> =>
      Effect.gen(function*() {
        const request = authed(HttpClientRequest.post(`${config.baseUrl}/tasks/${encodeURIComponent(task.upstreamRef)}/cancel`))
        const answer = yield* Http.exchange(client, request, timeout).pipe(Effect.mapError(Http.lost({ vendor, phase: "cancel" })))
        if (Http.isOk(answer.status)) return { canceled: true }
        if (Http.isTransientStatus(answer.status)) return yield* Outcome.retryable(`${vendor} cancel: HTTP ${answer.status}`)
        const message = Http.stringAt(Http.parseObject(answer.text), "message")
        return { canceled: false, reason: message ?? `${vendor} answered HTTP ${answer.status}` }
      })

    return {
      vendor,
      mode: "live",
      submit,
      poll,
      cancel,
      download: (source) => Http.download(client, source, { vendor, timeout })
    } satisfies VendorAdapter.VendorAdapter
  })

/** The adapter when `VENDOR_B_*` is set, `None` when vendor-b is to be sandboxed. */
export const fromConfig = (): Effect.Effect<
  Option.Option<VendorAdapter.VendorAdapter>,
  ConfigError.ConfigError,
  HttpClient.HttpClient
> => Manifest.tasks(Config.config, make)

/**
 * The live vendor-e adapter, protocol "task-info" (UPSTREAMS.md): the vendor speaks SPEC.md's own
 * task surface — flat body to `{base}<upstream.path>`, 202 `{task_info}`, poll `…/generation/{id}`,
 * states and task errors already the gateway's. The path comes from the entry, so the adapter
 * chains to any SPEC.md upstream, another Genway included. SPEC.md has no client-chosen task id,
 * hence no `reconcile`.
 */
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import type * as ConfigError from "effect/ConfigError"
import * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import { Http, Manifest, Mapping, Outcome } from "@genway/adapter-kit"
import { type ModelEntry, TaskInfo, VendorAdapter } from "@genway/core"
import * as Config from "./Config.js"

const vendor = "vendor-e"

/** The protocol name registry entries of this adapter carry in `upstream.protocol`. */
export const protocol = "task-info"

/**
 * The upstream create path: the entry's explicit `upstream.path` (`{model}` being the upstream
 * model id in force), else the entry's own path.
 */
export const upstreamPath = (entry: ModelEntry.ModelEntry, upstreamModel: string): string =>
  Mapping.path(entry.upstream, upstreamModel) ?? entry.path

/** The upstream body: the gateway body as it is (same protocol), projected by the entry's mapping. */
export const toUpstreamBody = (
  entry: ModelEntry.ModelEntry,
  body: Readonly<Record<string, unknown>>
): Record<string, unknown> => Mapping.flat(entry.upstream, body)

const states: Readonly<Record<string, TaskInfo.TaskStatus>> = {
  pending: "pending",
  processing: "processing",
  completed: "completed",
  failed: "failed"
}

/** `{error: {code, title, detail, param?}}` of DESIGN.md §4, when the body is one. */
const errorEnvelope = (text: string) => {
  const error = Http.parseObject(text)?.["error"]
  if (!Http.isRecord(error)) return undefined
  const title = Http.stringAt(error, "title")
  const detail = Http.stringAt(error, "detail")
  const param = Http.stringAt(error, "param")
  return {
    title,
    detail: param !== undefined && detail !== undefined && !detail.includes(param) ? `${param}: ${detail}` : detail
  }
}

/** A task error passed through as the upstream wrote it, when it is a well-formed one. */
const upstreamTaskError = (value: unknown): TaskInfo.TaskError | undefined => {
  if (!Http.isRecord(value)) return undefined
  const { code, detail, title } = value
  return typeof code === "number" && Number.isInteger(code) && typeof title === "string" && typeof detail === "string"
    ? new TaskInfo.TaskError({ code, title, detail })
    : undefined
}

/** Maps a non-2xx answer to an adapter error. Only a submit can be the client's fault (400). */
const httpFailure = (
  answer: Http.Answer,
  phase: "submit" | "poll"
): Effect.Effect<never, VendorAdapter.Retryable | VendorAdapter.Rejected> =>
  Effect.flatMap(Http.retryAfter(answer.headers), (after): Effect.Effect<never, VendorAdapter.Retryable | VendorAdapter.Rejected> => {
    const status = answer.status
    if (Http.isTransientStatus(status)) return Effect.fail(Outcome.retryable(`${vendor} answered HTTP ${status}`, after))
    const envelope = errorEnvelope(answer.text)
    const detail = envelope?.detail !== undefined && envelope.detail !== "" ? envelope.detail : undefined
    if (phase === "submit" && [400, 409, 413, 415, 422].includes(status)) {
      return Effect.fail(
        new VendorAdapter.Rejected({
          error: new TaskInfo.TaskError({
            code: 400,
            title: envelope?.title ?? Outcome.titles[400],
            detail: detail ?? `${vendor} rejected the request (HTTP ${status}).`
          })
        })
      )
    }
    const why = status === 401
      ? `${vendor} refused the gateway's credentials`
      : status === 402
      ? `${vendor} refused the request: the upstream balance is exhausted`
      : status === 403
      ? `${vendor} does not permit the gateway's key to use this model`
      : status === 404
      ? `${vendor} does not know this ${phase === "submit" ? "model" : "task"}`
      : detail ?? `${vendor} refused the request`
    return Effect.fail(Outcome.rejected(3001, `${why} (HTTP ${status}).`))
  })

/** Builds the live vendor-e adapter. The `HttpClient` is the gateway's (Node or fetch). */
export const make = (config: Config.VendorEConfig): Effect.Effect<VendorAdapter.VendorAdapter, never, HttpClient.HttpClient> =>
  Effect.gen(function*() {
    // Upstreams need no trace headers of ours.
    const client = HttpClient.withTracerPropagation(yield* HttpClient.HttpClient, false)
    const timeout = config.timeout ?? "30 seconds"
    const authed = (request: HttpClientRequest.HttpClientRequest) =>
      request.pipe(HttpClientRequest.bearerToken(config.apiKey), HttpClientRequest.acceptJson)

    const submit = (task: VendorAdapter.UpstreamTask): Effect.Effect<VendorAdapter.Submitted, VendorAdapter.AdapterError> =>
      Effect.gen(function*() {
        if (task.entry.upstream.protocol !== protocol) {
          return yield* Outcome.rejected(3001, `The model ${task.entry.model} is misconfigured: vendor-e speaks only "${protocol}".`)
        }
        const path = upstreamPath(task.entry, task.upstreamModel)
        const request = HttpClientRequest.post(`${config.baseUrl}${path}`).pipe(
          authed,
          HttpClientRequest.bodyUnsafeJson(toUpstreamBody(task.entry, task.body))
        )
        const answer = yield* Http.exchange(client, request, timeout).pipe(Effect.mapError(Http.lost({ vendor, phase: "submit" })))
        if (!Http.isOk(answer.status)) return yield* httpFailure(answer, "submit")
        const info = Http.parseObject(answer.text)?.["task_info"]
        const id = Http.stringAt(info, "id")
        if (id === undefined || id === "") {
          return yield* new VendorAdapter.OutcomeUnknown({ reason: `${vendor} submit: HTTP ${answer.status} without a readable task id` })
        }
        // The reference is the retrieval path relative to the base: polling needs nothing else.
        return {
          ref: `${path}/${encodeURIComponent(id)}`,
          status: Http.stringAt(info, "status") === "processing" ? "processing" : "pending"
        }
      })

    const poll = (
      task: VendorAdapter.UpstreamTask & { readonly upstreamRef: string }
    ): Effect.Effect<VendorAdapter.PollOutcome, VendorAdapter.AdapterError> =>
      Effect.gen(function*() {
        if (!task.upstreamRef.startsWith("/")) return yield* Outcome.rejected(3001, "The task's vendor-e reference is unreadable.")
        const answer = yield* Http.exchange(client, authed(HttpClientRequest.get(`${config.baseUrl}${task.upstreamRef}`)), timeout).pipe(
          Effect.mapError(Http.lost({ vendor, phase: "poll" }))
        )
        if (!Http.isOk(answer.status)) return yield* httpFailure(answer, "poll")
        const body = Http.parseObject(answer.text)
        const info = body?.["task_info"]
        const status = Http.stringAt(info, "status")
        if (body === undefined || status === undefined) {
          return yield* Outcome.retryable(`${vendor} poll: unreadable answer (HTTP ${answer.status})`)
        }
        switch (states[status]) {
          case "pending":
            return { _tag: "Running", status: "pending" }
          case "processing":
            return { _tag: "Running", status: "processing" }
          case "completed": {
            const kinds = task.entry.result === "images" ? ["images", "videos"] : ["videos", "images"]
            const list = kinds.map((k) => body[k]).find(Array.isArray) ?? []
            const media = list
              .filter((url: unknown): url is string => typeof url === "string" && url !== "")
              .map((url): VendorAdapter.MediaSource => ({ _tag: "Url", url }))
            return media.length > 0
              ? { _tag: "Completed", media }
              : { _tag: "Failed", error: Outcome.taskError(3001, "vendor-e reported completion without any result.") }
          }
          case "failed":
            return {
              _tag: "Failed",
              error: upstreamTaskError(Http.isRecord(info) ? info["error"] : undefined) ??
                Outcome.taskError(3001, "vendor-e reported the task as failed.")
            }
          case undefined:
            return yield* Outcome.unknownState(vendor, task.taskId, status)
        }
      })

    return {
      vendor,
      mode: "live",
      submit,
      poll,
      download: (source) => Http.download(client, source, { vendor, timeout })
    } satisfies VendorAdapter.VendorAdapter
  })

/** The adapter when `VENDOR_E_*` is set, `None` when vendor-e is to be sandboxed. */
export const fromConfig = (): Effect.Effect<
  Option.Option<VendorAdapter.VendorAdapter>,
  ConfigError.ConfigError,
  HttpClient.HttpClient
> => Manifest.tasks(Config.config, make)

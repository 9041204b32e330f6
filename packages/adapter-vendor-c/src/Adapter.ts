/**
 * The live vendor-c adapter, protocol "jwt-task" (UPSTREAMS.md): self-signed HS256 tokens,
 * answers in a `{code, message, request_id, data}` envelope, creates at
 * `POST {base}/v1/videos/{image2video|text2video}` carrying the gateway task id as
 * `external_task_id`, so a submit whose answer was lost is found again by `reconcile` instead of
 * being resent.
 */
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import type * as ConfigError from "effect/ConfigError"
import * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Ref from "effect/Ref"
import { Http, Manifest, Mapping, Outcome } from "@genway/adapter-kit"
import { type ModelEntry, VendorAdapter } from "@genway/core"
import * as Config from "./Config.js"
import * as Jwt from "./internal/jwt.js"

const vendor = "vendor-c"

/** The protocol name registry entries of this adapter carry in `upstream.protocol`. */
export const protocol = "jwt-task"

/** The vendor's two task kinds; the query path must use the kind of the create. */
export type Kind = "image2video" | "text2video"

/** Kinds by `upstream.operation`. */
export const operations: Readonly<Record<string, Kind>> = {
  "image2video": "image2video",
  "image-to-video": "image2video",
  "text2video": "text2video",
  "text-to-video": "text2video"
}

// Fields that carry images; the vendor takes a URL or raw Base64, never a data URL.
const imageFields = ["image", "image_tail", "static_mask"]

const stripDataUrl = (value: unknown): unknown =>
  typeof value === "string" && value.startsWith("data:") && value.includes(";base64,")
    ? value.slice(value.indexOf(";base64,") + ";base64,".length)
    : value

/**
 * Builds the vendor's flat create body from a gateway body: the fields as the entry's mapping
 * projects them (`Mapping.flat`), `duration` as a string, inline images without a data-URL
 * prefix, plus `model_name` and `external_task_id`.
 */
export const toUpstreamBody = (
  entry: ModelEntry.ModelEntry,
  body: Readonly<Record<string, unknown>>,
  upstreamModel: string,
  externalTaskId: string
): Record<string, unknown> => {
  const out: Record<string, unknown> = { model_name: upstreamModel, ...Mapping.flat(entry.upstream, body) }
  if (typeof out["duration"] === "number") out["duration"] = String(out["duration"])
  for (const field of imageFields) {
    if (field in out) out[field] = stripDataUrl(out[field])
  }
  if (Array.isArray(out["dynamic_masks"])) {
    out["dynamic_masks"] = out["dynamic_masks"].map((m: unknown) =>
      Http.isRecord(m) && "mask" in m ? { ...m, mask: stripDataUrl(m["mask"]) } : m
    )
  }
  out["external_task_id"] = externalTaskId
  return out
}

/** Task states of the vendor (UPSTREAMS.md). */
const states: Readonly<Record<string, "pending" | "processing" | "completed" | "failed">> = {
  submitted: "pending",
  processing: "processing",
  succeed: "completed",
  failed: "failed"
}

/** The poll reference: the kind, a colon, the vendor task id. */
const toRef = (kind: Kind, taskId: string) => `${kind}:${taskId}`

const fromRef = (ref: string): { readonly kind: Kind; readonly taskId: string } | undefined => {
  const at = ref.indexOf(":")
  const kind = operations[ref.slice(0, at)]
  return at > 0 && kind !== undefined && at < ref.length - 1 ? { kind, taskId: ref.slice(at + 1) } : undefined
}

interface Envelope {
  readonly code: number | undefined
  readonly message: string | undefined
  readonly data: unknown
}

const envelope = (text: string): Envelope | undefined => {
  const body = Http.parseObject(text)
  if (body === undefined) return undefined
  return {
    code: typeof body["code"] === "number" ? body["code"] : undefined,
    message: Http.stringAt(body, "message"),
    data: body["data"]
  }
}

const inRange = (code: number | undefined, from: number, to: number) => code !== undefined && code >= from && code <= to

const describe = (env: Envelope | undefined, fallback: string): string => {
  const message = env?.message !== undefined && env.message !== "" ? env.message : fallback
  return env?.code !== undefined ? `${message} (${env.code})` : message
}

/** Builds the live vendor-c adapter. The `HttpClient` is the gateway's (Node or fetch). */
export const make = (config: Config.VendorCConfig): Effect.Effect<VendorAdapter.VendorAdapter, never, HttpClient.HttpClient> =>
  Effect.gen(function*() {
    // Vendors need no trace headers of ours.
    const client = HttpClient.withTracerPropagation(yield* HttpClient.HttpClient, false)
    const timeout = config.timeout ?? "30 seconds"
    const cached = yield* Ref.make<{ readonly token: string; readonly exp: number } | undefined>(undefined)
    // Consecutive throttling answers (the limits are per account, so the count is too).
    const throttles = yield* Ref.make(0)

    /** The cached token, or a new one when it is absent, has under five minutes left, or `renew` is set. */
    const token = (renew: boolean) =>
      Effect.gen(function*() {
        const now = Math.floor((yield* Clock.currentTimeMillis) / 1000)
        const current = yield* Ref.get(cached)
        if (!renew && current !== undefined && current.exp - now > 300) return current.token
        const fresh = Jwt.sign(Redacted.value(config.accessKey), Redacted.value(config.secretKey), now)
        yield* Ref.set(cached, fresh)
        return fresh.token
      })

    /** Sends with a token; an expired (1004) or not-yet-valid (1003) answer renews it and resends once. */
    const send = (build: (url: string) => HttpClientRequest.HttpClientRequest, path: string) => {
      const attempt = (renew: boolean) =>
        Effect.flatMap(token(renew), (jwt) =>
          Http.exchange(
            client,
            build(`${config.baseUrl}${path}`).pipe(HttpClientRequest.bearerToken(jwt), HttpClientRequest.acceptJson),
            timeout
          ))
      return Effect.flatMap(attempt(false), (answer) => {
        const code = envelope(answer.text)?.code
        return code === 1003 || code === 1004 ? attempt(true) : Effect.succeed(answer)
      })
    }

    const backOff = Effect.map(Ref.updateAndGet(throttles, (n) => n + 1), (n) => Duration.seconds(Math.min(2 ** (n - 1), 60)))
    const settled = Ref.set(throttles, 0)

    /** Maps an error answer to an adapter error. Only a submit can be the client's fault (400). */
    const failure = (
      answer: Http.Answer,
      env: Envelope | undefined,
      phase: "submit" | "poll"
    ): Effect.Effect<never, VendorAdapter.Retryable | VendorAdapter.Rejected> =>
      Effect.gen(function*() {
        const code = env?.code
        const status = answer.status
        const after = yield* Http.retryAfter(answer.headers)
        const label = `${vendor} answered HTTP ${status}${code !== undefined ? ` code ${code}` : ""}`
        if (status === 429 || inRange(code, 1100, 1102) || inRange(code, 1302, 1303) || inRange(code, 1003, 1004)) {
          const hint = yield* backOff
          const retryAfter = after !== undefined && Duration.greaterThan(after, hint) ? after : hint
          return yield* Outcome.retryable(label, retryAfter)
        }
        if (Http.isTransientStatus(status) || inRange(code, 5000, 5002)) {
          return yield* Outcome.retryable(label, after)
        }
        if (inRange(code, 1200, 1201) || inRange(code, 1300, 1301) || (code === undefined && status === 400)) {
          return yield* Outcome.rejected(phase === "submit" ? 400 : 3001, describe(env, `${vendor} rejected the request`))
        }
        const why = inRange(code, 1000, 1002) || status === 401
          ? `${vendor} refused the gateway's credentials`
          : code === 1103 || status === 403
          ? `${vendor} does not permit this account to use the model`
          : code === 1203 || status === 404
          ? `${vendor} does not know this ${phase === "submit" ? "model" : "task"}`
          : describe(env, `${vendor} refused the request`)
        return yield* Outcome.rejected(3001, `${why} (HTTP ${status}${code !== undefined ? `, code ${code}` : ""}).`)
      })

    const kindOf = (task: VendorAdapter.UpstreamTask) =>
      task.entry.upstream.protocol === protocol ? operations[task.entry.upstream.operation] : undefined

    const misconfigured = (task: VendorAdapter.UpstreamTask) =>
      Outcome.rejected(3001, `The model ${task.entry.model} is misconfigured: vendor-c has no operation "${task.entry.upstream.operation}".`)

    const accepted = (kind: Kind, data: unknown): VendorAdapter.Submitted | undefined => {
      const taskId = Http.stringAt(data, "task_id")
      if (taskId === undefined || taskId === "") return undefined
      return { ref: toRef(kind, taskId), status: states[Http.stringAt(data, "task_status") ?? ""] === "pending" ? "pending" : "processing" }
    }

    const submit = (task: VendorAdapter.UpstreamTask): Effect.Effect<VendorAdapter.Submitted, VendorAdapter.AdapterError> =>
      Effect.gen(function*() {
        const kind = kindOf(task)
        if (kind === undefined) return yield* misconfigured(task)
        const body = toUpstreamBody(task.entry, task.body, task.upstreamModel, task.taskId)
        const answer = yield* send((url) => HttpClientRequest.post(url).pipe(HttpClientRequest.bodyUnsafeJson(body)), `/v1/videos/${kind}`).pipe(
          Effect.mapError(Http.lost({ vendor, phase: "submit" }))
        )
        const env = envelope(answer.text)
        const ok = Http.isOk(answer.status)
        // A 2xx that is not a readable error may hide an accepted task.
        if (ok && (env === undefined || env.code === undefined || env.code === 0)) {
          const submitted = env?.code === 0 ? accepted(kind, env.data) : undefined
          if (submitted === undefined) {
            return yield* new VendorAdapter.OutcomeUnknown({ reason: `${vendor} submit: HTTP ${answer.status} without a readable task id` })
          }
          yield* settled
          return submitted
        }
        return yield* failure(answer, env, "submit")
      })

    const reconcile = (task: VendorAdapter.UpstreamTask): Effect.Effect<VendorAdapter.Submitted | undefined, VendorAdapter.AdapterError> =>
      Effect.gen(function*() {
        const kind = kindOf(task)
        if (kind === undefined) return yield* misconfigured(task)
        const answer = yield* send(HttpClientRequest.get, `/v1/videos/${kind}/${encodeURIComponent(task.taskId)}`).pipe(
          Effect.mapError(Http.lost({ vendor, phase: "reconcile" }))
        )
        const env = envelope(answer.text)
        if (answer.status === 404 || env?.code === 1203) return undefined
        if (Http.isOk(answer.status) && env?.code === 0) {
          yield* settled
          if (env.data === null || env.data === undefined) return undefined
          const found = accepted(kind, env.data)
          if (found === undefined) {
            return yield* Outcome.retryable(`${vendor} reconcile: answer without a readable task id`)
          }
          return found
        }
        if (env === undefined) {
          return yield* Outcome.retryable(`${vendor} reconcile: unreadable answer (HTTP ${answer.status})`)
        }
        return yield* failure(answer, env, "poll")
      })

    const poll = (
      task: VendorAdapter.UpstreamTask & { readonly upstreamRef: string }
    ): Effect.Effect<VendorAdapter.PollOutcome, VendorAdapter.AdapterError> =>
      Effect.gen(function*() {
        const ref = fromRef(task.upstreamRef)
        if (ref === undefined) return yield* Outcome.rejected(3001, "The task's vendor-c reference is unreadable.")
        const answer = yield* send(HttpClientRequest.get, `/v1/videos/${ref.kind}/${encodeURIComponent(ref.taskId)}`).pipe(
          Effect.mapError(Http.lost({ vendor, phase: "poll" }))
        )
        const env = envelope(answer.text)
        const status = Http.stringAt(env?.data, "task_status")
        if (!Http.isOk(answer.status) || (env !== undefined && env.code !== 0)) {
          if (env === undefined) {
            return yield* Outcome.retryable(`${vendor} poll: unreadable answer (HTTP ${answer.status})`)
          }
          return yield* failure(answer, env, "poll")
        }
        if (env === undefined || status === undefined) {
          return yield* Outcome.retryable(`${vendor} poll: unreadable answer (HTTP ${answer.status})`)
        }
        yield* settled
        const data = env.data as Record<string, unknown>
        switch (states[status]) {
          case "pending":
            return { _tag: "Running", status: "pending" }
          case "processing":
            return { _tag: "Running", status: "processing" }
          case "completed": {
            const result = data["task_result"]
            const videos = Http.isRecord(result) && Array.isArray(result["videos"]) ? result["videos"] : []
            const withUrl = videos.filter((v: unknown) => (Http.stringAt(v, "url") ?? "") !== "")
            const media = withUrl.map((v: unknown): VendorAdapter.MediaSource => ({ _tag: "Url", url: Http.stringAt(v, "url")! }))
            // Each video reports its length (`duration`, a string of seconds): usage is settled on it.
            const seconds = Outcome.reportedSeconds(withUrl.map((v: unknown) => (Http.isRecord(v) ? v["duration"] : undefined)))
            return media.length > 0
              ? Outcome.completed(media, seconds)
              : { _tag: "Failed", error: Outcome.taskError(3001, "vendor-c reported success without any video.") }
          }
          case "failed": {
            const message = Http.stringAt(data, "task_status_msg")
            return {
              _tag: "Failed",
              error: Outcome.taskError(3001, message !== undefined && message !== "" ? message : "vendor-c reported the task as failed.")
            }
          }
          case undefined:
            return yield* Outcome.unknownState(vendor, task.taskId, status)
        }
      })

    return {
      vendor,
      mode: "live",
      submit,
      reconcile,
      poll,
      download: (source) => Http.download(client, source, { vendor, timeout })
    } satisfies VendorAdapter.VendorAdapter
  })

/** The adapter when `VENDOR_C_*` is set, `None` when vendor-c is to be sandboxed. */
export const fromConfig = (): Effect.Effect<
  Option.Option<VendorAdapter.VendorAdapter>,
  ConfigError.ConfigError,
  HttpClient.HttpClient
> => Manifest.tasks(Config.config, make)

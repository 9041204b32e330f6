/**
 * The sandbox vendor: what a vendor without credentials does. Deterministic and stateless — the
 * submit time travels in the task's upstream reference, so a restart continues where it was:
 * `pending` for the first tenth of the delay, then `processing`, then `completed` with real media
 * (an MP4, or PNGs of the requested size). `x-sandbox-outcome: failed:<code>` makes the task fail
 * with that code instead.
 */
import { Errors, SampleMedia, TaskInfo, VendorAdapter } from "@genway/core"
import type { ModelEntry } from "@genway/core"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"

/** The request header that selects a sandbox outcome. */
export const outcomeHeader = "x-sandbox-outcome"

/** Parses `failed:<code>`; `undefined` when absent; an error message when malformed. */
export const parseOutcome = (value: string | undefined): { readonly failWith?: number } | string | undefined => {
  if (value === undefined) return undefined
  const m = /^failed:(-?\d{1,9})$/.exec(value.trim())
  if (m === null) return `${outcomeHeader} must be "failed:<integer code>"`
  return { failWith: Number(m[1]) }
}


const imageSize = (body: Readonly<Record<string, unknown>>): [number, number] => {
  const size = typeof body.size === "string" ? /^(\d+)[*x](\d+)$/.exec(body.size) : null
  const [w, h] = size ? [Number(size[1]), Number(size[2])] : [1024, 1024]
  // Real pixels of the requested shape, scaled down to keep sandbox files small.
  const scale = Math.min(1, 512 / Math.max(w, h))
  return [Math.max(1, Math.round(w * scale)), Math.max(1, Math.round(h * scale))]
}

const mediaFor = (entry: ModelEntry.ModelEntry, task: VendorAdapter.UpstreamTask): ReadonlyArray<VendorAdapter.MediaSource> => {
  if (entry.result === "images") {
    const n = typeof task.body.n === "number" ? task.body.n : 1
    const [w, h] = imageSize(task.body)
    const seed = parseInt(task.taskId.slice(0, 6), 16)
    return Array.from({ length: n }, (_, i) => ({
      _tag: "Bytes" as const,
      contentType: "image/png",
      bytes: SampleMedia.png(w, h, seed + i)
    }))
  }
  return [{ _tag: "Bytes", contentType: "video/mp4", bytes: SampleMedia.mp4() }]
}

/** A sandbox adapter for `vendor` whose tasks take `delayMs`. */
export const make = (vendor: string, delayMs: number): VendorAdapter.VendorAdapter => {
  const pendingFor = Math.floor(delayMs / 10)
  const submitted = (task: VendorAdapter.UpstreamTask) =>
    Effect.map(Clock.currentTimeMillis, (now): VendorAdapter.Submitted => ({
      ref: `sandbox:${task.taskId}:${now}`,
      status: "pending",
      pollAfter: pendingFor
    }))
  return {
    vendor,
    mode: "sandbox",
    submit: submitted,
    // The sandbox is keyed by the gateway's task id, so a lost submit is simply made again.
    reconcile: submitted,
    poll: (task) =>
      Effect.map(Clock.currentTimeMillis, (now): VendorAdapter.PollOutcome => {
        const since = Number(task.upstreamRef.split(":")[2] ?? now)
        const elapsed = now - since
        if (elapsed < pendingFor) return { _tag: "Running", status: "pending", pollAfter: pendingFor - elapsed }
        if (elapsed < delayMs) {
          // Reports its own progress, as a vendor would; polled again halfway through what is left.
          const rest = delayMs - elapsed
          return {
            _tag: "Running",
            status: "processing",
            pollAfter: rest > 400 ? Math.ceil(rest / 2) : rest,
            progress: Math.floor((100 * elapsed) / delayMs)
          }
        }
        const outcome = parseOutcome(task.hints[outcomeHeader])
        if (typeof outcome === "object" && outcome.failWith !== undefined) {
          return {
            _tag: "Failed",
            error: new TaskInfo.TaskError({
              code: outcome.failWith,
              title: Errors.titleOf(outcome.failWith) ?? "Sandbox failure",
              detail: `sandbox task failed as requested by the ${outcomeHeader} header`
            })
          }
        }
        return { _tag: "Completed", media: mediaFor(task.entry, task) }
      }),
    // The sandbox stops a job at any stage.
    cancel: () => Effect.succeed({ canceled: true }),
    download: (source) =>
      source._tag === "Bytes"
        ? Effect.succeed(VendorAdapter.inlineDownload(source))
        : Effect.fail(new VendorAdapter.Rejected({
          error: new TaskInfo.TaskError({ code: 3001, title: Errors.titles[3001], detail: "sandbox media is inline" })
        }))
  }
}

/**
 * Values several entries share: image rules of SPEC.md §4.6/§8, poll cadences, body limits.
 */
import { Errors, type Media, type ModelEntry } from "@genway/core"

/** 10 MB (SPEC.md §8, input image size), decimal as vendors count it. */
export const TEN_MB = 10 * 1000 * 1000

/** Body limit for a request carrying `images` inline images of up to 10 MB each (Base64 grows by 4/3). */
export const bodyLimitFor = (images: number): number => 1_000_000 + images * 14_000_000

/** Body limit of requests without inline media. */
export const SMALL_BODY = 1_000_000

/** Image rule of E5/E6 first frames: URL or Base64 (raw or data URL), 360–2000 px, opaque PNG. */
export const frameImage = (field: string): Media.ImageRule => ({
  field,
  accept: { url: true, dataUrl: true, rawBase64: true },
  formats: ["jpeg", "png", "bmp", "webp"],
  maxBytes: TEN_MB,
  minSide: 360,
  maxSide: 2000,
  opaque: true
})

/** Poll cadence of vendor-b video tasks (UPSTREAMS.md: about 15 s). */
export const videoPoll: ModelEntry.PollPolicy = {
  initial: "5 seconds",
  every: ["10 seconds", "15 seconds"],
  deadline: "30 minutes"
}

/** Poll cadence of image tasks (UPSTREAMS.md: 5–10 s). */
export const imagePoll: ModelEntry.PollPolicy = {
  initial: "3 seconds",
  every: ["5 seconds", "10 seconds"],
  deadline: "15 minutes"
}

/**
 * Cadence of synchronous entries (E1, E2): they are not polled by the scheduler, the policy only
 * bounds how long an upstream call or a stored background response is waited for.
 */
export const syncPoll: ModelEntry.PollPolicy = {
  initial: "1 second",
  every: ["2 seconds", "5 seconds"],
  deadline: "10 minutes"
}

/** The error of a required field that a rule found missing (same wording as the schema's). */
export const missing = (field: string, why: string) => Errors.issue(field, `is required ${why}`)

/** Whether an optional body field was given (`null` and absent both mean "not given"). */
export const given = (value: unknown): boolean => value !== undefined && value !== null

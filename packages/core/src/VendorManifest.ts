/**
 * A vendor as one value: its id and the surfaces it serves — a task protocol adapter, a chat
 * upstream (E1), a model responses upstream (E2) — each built from the vendor's `VENDOR_*` group
 * (`None` when the group is unset and the vendor is sandboxed), plus the sandbox of each
 * synchronous surface, shaped like the vendor. Each adapter package's `index.ts` exports one
 * `manifest` (built with adapter-kit's `Manifest`); the gateway keeps one list of them.
 */
import type * as ConfigError from "effect/ConfigError"
import type * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import type { ChatUpstream } from "./Chat.js"
import type { VendorId } from "./ModelEntry.js"
import type { ResponseEvent, ResponseObject, ResponsesUpstream } from "./Responses.js"
import type { VendorAdapter } from "./VendorAdapter.js"

/** A live surface when the vendor's variables are set; `R` is what building it needs (an HTTP client). */
export type Live<A, R> = Effect.Effect<Option.Option<A>, ConfigError.ConfigError, R>

/** The sandbox of a model responses surface: the vendor's shapes, generated without I/O. */
export interface ResponsesSandbox {
  /** A new response id in the vendor's shape. */
  readonly newId: () => string
  /** The finished response to `body` (`createdAtMs` is the creation time). */
  readonly respond: (body: Readonly<Record<string, unknown>>, id: string, createdAtMs: number) => ResponseObject
  /** The response before it finished, without output. */
  readonly unfinished: (final: ResponseObject, status: "queued" | "in_progress") => ResponseObject
  /** Every event of the streamed `final`, in the vendor's order. */
  readonly events: (final: ResponseObject) => ReadonlyArray<ResponseEvent>
}

/** One vendor: what the gateway needs to serve it, live or sandboxed. */
export interface VendorManifest<R = unknown> {
  readonly id: VendorId
  /** The task protocol adapter (entries of kind `task`); their sandbox is the gateway's. */
  readonly tasks?: Live<VendorAdapter, R>
  /** The chat completions upstream (E1) of entries whose `upstream.protocol` is `protocol`. */
  readonly chat?: {
    readonly protocol: string
    readonly live: Live<ChatUpstream, R>
    readonly sandbox: ChatUpstream
  }
  /** The model responses upstream (E2). */
  readonly responses?: {
    readonly live: Live<ResponsesUpstream, R>
    readonly sandbox: ResponsesSandbox
  }
}

/**
 * A model as data. The gateway derives routes, validation, polling and retention from these fields;
 * adding a model that speaks an existing protocol is adding one entry.
 */
import type * as Duration from "effect/Duration"
import type * as Schema from "effect/Schema"
import type { Issue } from "./Errors.js"
import type { ImageFacts, ImageRule } from "./Media.js"
import type { ResultKind } from "./TaskInfo.js"

/** Neutral vendor names of SPEC.md. */
export type VendorId = "vendor-a" | "vendor-b" | "vendor-c" | "vendor-d" | "vendor-e" | (string & {})

/** Release stage shown to clients. */
export type Stage = "ga" | "preview" | "beta"

/** Poll cadence: first poll after `initial`, then a delay within `every`; fail after `deadline`. */
export interface PollPolicy {
  readonly initial: Duration.DurationInput
  readonly every: readonly [Duration.DurationInput, Duration.DurationInput]
  readonly deadline: Duration.DurationInput
}

/**
 * How a request reaches the vendor. `model` is the default upstream model id and is deployment
 * configuration (overridable per entry). The field lists tell protocol adapters where each gateway
 * field goes; adapter-kit's `Mapping.project` is their one reading:
 * - absent and `null` values are never sent, nor the gateway's own `model` field;
 * - a field listed in `parameters` goes to the vendor's parameters (nested protocols) — default: none;
 * - with `input` listed, a field listed there goes to the vendor's input and any field in neither
 *   list is not sent; without `input`, every field not in `parameters` goes to the input;
 * - `rename` gives a field's upstream name (default: its own);
 * - flat protocols send input and parameters as one object.
 */
export interface UpstreamMapping {
  readonly protocol: string
  readonly operation: string
  readonly model: string
  readonly input?: ReadonlyArray<string>
  readonly parameters?: ReadonlyArray<string>
  readonly rename?: Readonly<Record<string, string>>
  /**
   * The upstream path, relative to the vendor's base, for protocols that address a model by path
   * (`{model}` stands for the upstream model id in force). Protocols with fixed operations omit it.
   */
  readonly path?: string
}

/** Facts gathered while checking a request, handed to cross-field rules. */
export interface RuleContext {
  /** Sniffed inline images by field path (`image`, `ref_images_url[0]`). */
  readonly images: ReadonlyMap<string, ImageFacts>
}

/** A cross-field check: returns the issues it finds in an already schema-valid body. */
export type Rule<A> = (body: A, context: RuleContext) => ReadonlyArray<Issue>

/** Which wire surface an entry belongs to. */
export type EntryKind = "task" | "chat" | "responses"

/**
 * How an entry is billed (DESIGN.md §10): video seconds (the vendor's reported duration when its
 * protocol reports one, else the request's `field`, else `default`), images (the number of
 * results; reserved from the request's `field`, else `default`), or input/output tokens (from
 * the answer's `usage`).
 */
export type Billing =
  | { readonly unit: "seconds"; readonly field: string; readonly default: number }
  | { readonly unit: "images"; readonly field?: string; readonly default: number }
  | { readonly unit: "tokens" }

/** An entry's price in USD (deployment configuration, `GATEWAY_MODELS_FILE`); absent counts at cost 0. */
export interface Price {
  readonly per_second?: number
  readonly per_image?: number
  readonly per_1m_input_tokens?: number
  readonly per_1m_output_tokens?: number
}

/** One model of the gateway. */
export interface ModelEntry<A = any> {
  /** `vendor/model`, unique. */
  readonly id: string
  readonly vendor: VendorId
  readonly kind: EntryKind
  /** Public model name: the path segment of task models, the `model` body value of E1/E2. */
  readonly model: string
  /** The spec's endpoint ids served by this entry (`E4`, `G1`), for docs and listings. */
  readonly endpoints: ReadonlyArray<string>
  readonly summary: string
  /** Create path (tasks: retrieval is this plus `/{task_id}`). */
  readonly path: string
  /** Decodes the JSON request body; bounds carry field-naming messages. */
  readonly request: Schema.Schema<A, any>
  readonly rules: ReadonlyArray<Rule<A>>
  /** Image fields sniffed before the rules run. */
  readonly images: ReadonlyArray<ImageRule>
  /** Task entries: which result array they fill. */
  readonly result?: ResultKind
  readonly upstream: UpstreamMapping
  readonly poll: PollPolicy
  /** How long result media is kept; `null` keeps it until an operator removes it. */
  readonly retention: Duration.DurationInput | null
  /** Copy vendor results into the gateway's media store and serve them by signed URL. */
  readonly mirror: boolean
  readonly stage: Stage
  /** Whether the create response carries `task_info.status` (`pending`). */
  readonly createIncludesStatus: boolean
  /** Largest accepted request body in bytes. */
  readonly maxBodyBytes: number
  /** The billing unit and how units are read (DESIGN.md §10). */
  readonly billing?: Billing
  /** The deployment's price for the entry, if any (snapshotted onto each usage ledger row). */
  readonly price?: Price
}

/** A task entry: one whose `result` is set. */
export type TaskEntry<A = any> = ModelEntry<A> & { readonly kind: "task"; readonly result: ResultKind }

/** Narrows an entry to a task entry. */
export const isTaskEntry = (entry: ModelEntry): entry is TaskEntry => entry.kind === "task" && entry.result !== undefined

/** The retrieval path template of a task entry. */
export const retrievalPath = (entry: ModelEntry): string => `${entry.path}/{task_id}`

/**
 * The one meaning of an entry's `upstream` field lists (`UpstreamMapping` in core): which gateway
 * field goes where in the vendor's body, under which name. Protocols with a nested body (`input` /
 * `parameters`) use both halves; flat protocols merge them (`flat`).
 */
import type { ModelEntry } from "@genway/core"

/** A gateway body split by the entry's mapping. */
export interface Projection {
  readonly input: Record<string, unknown>
  readonly parameters: Record<string, unknown>
}

/**
 * Projects a validated gateway body through `upstream`:
 * - absent and `null` values are not sent, nor the gateway's own `model` field;
 * - a field listed in `parameters` goes to `parameters`;
 * - otherwise, when `input` is listed, a field listed there goes to `input` and any other is not
 *   sent; when `input` is not listed, every other field goes to `input`;
 * - each field travels under its `rename`d name; `encode(field, value)` may reshape a value
 *   (for example an inline image) and is given the gateway's field name.
 */
export const project = (
  upstream: ModelEntry.UpstreamMapping,
  body: Readonly<Record<string, unknown>>,
  encode?: (field: string, value: unknown) => unknown
): Projection => {
  const { input: inputFields, parameters: parameterFields = [], rename = {} } = upstream
  const input: Record<string, unknown> = {}
  const parameters: Record<string, unknown> = {}
  for (const [field, value] of Object.entries(body)) {
    if (value === undefined || value === null || field === "model") continue
    const target = parameterFields.includes(field)
      ? parameters
      : inputFields === undefined || inputFields.includes(field)
      ? input
      : undefined
    if (target === undefined) continue
    target[rename[field] ?? field] = encode === undefined ? value : encode(field, value)
  }
  return { input, parameters }
}

/** A flat body: `input` and `parameters` of `project` in one object. */
export const flat = (
  upstream: ModelEntry.UpstreamMapping,
  body: Readonly<Record<string, unknown>>,
  encode?: (field: string, value: unknown) => unknown
): Record<string, unknown> => {
  const { input, parameters } = project(upstream, body, encode)
  return { ...input, ...parameters }
}

/**
 * The upstream path of an entry whose protocol addresses models by path: `upstream.path` with
 * `{model}` replaced by the upstream model id in force.
 */
export const path = (upstream: ModelEntry.UpstreamMapping, upstreamModel: string): string | undefined =>
  upstream.path?.split("{model}").join(upstreamModel)

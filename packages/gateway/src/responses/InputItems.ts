/**
 * The input items of a model response (E2), as `GET …/responses/{response_id}/input_items` lists
 * them: the request's `input` as a list of items, each with an `id`. A string input is one user
 * message; a message given as `{role, content}` gets `type: "message"`, its string content becomes
 * one `input_text` part (`output_text` for the assistant's own turns); any other item is kept as
 * sent. Ids the client gave are kept; the others are made once, when the response is kept.
 */
import { randomUUID } from "node:crypto"

/** One listed input item (its fields as the request gave them, with `id` and `type`). */
export type InputItem = Readonly<Record<string, unknown>> & { readonly id: string; readonly type: string }

const newId = (prefix: string) => `${prefix}_${randomUUID().replaceAll("-", "")}`

const message = (role: string, content: unknown, rest: Readonly<Record<string, unknown>>): InputItem => {
  const partType = role === "assistant" ? "output_text" : "input_text"
  const parts = typeof content === "string"
    ? [partType === "output_text" ? { type: partType, text: content, annotations: [] } : { type: partType, text: content }]
    : content
  return {
    ...rest,
    id: typeof rest["id"] === "string" ? rest["id"] : newId("msg"),
    type: "message",
    role,
    status: typeof rest["status"] === "string" ? rest["status"] : "completed",
    content: parts
  }
}

/** The items of a request's `input` (none when it has none). */
export const fromInput = (input: unknown): ReadonlyArray<InputItem> => {
  if (typeof input === "string") return [message("user", input, {})]
  if (!Array.isArray(input)) return []
  return input.flatMap((raw): Array<InputItem> => {
    if (typeof raw !== "object" || raw === null || Array.isArray(raw)) return []
    const item = raw as Record<string, unknown>
    const type = item["type"]
    if (typeof item["role"] === "string" && (type === undefined || type === "message")) {
      const { content, role, ...rest } = item
      return [message(role as string, content, rest)]
    }
    const kind = typeof type === "string" ? type : "item"
    return [{ ...item, id: typeof item["id"] === "string" ? item["id"] : newId(kind === "message" ? "msg" : "item"), type: kind }]
  })
}

/** A page of a list, in the OpenAI list shape. */
export interface Page {
  readonly object: "list"
  readonly data: ReadonlyArray<InputItem>
  readonly first_id: string | null
  readonly last_id: string | null
  readonly has_more: boolean
}

/** The query of a listing, checked. */
export interface ListQuery {
  readonly order: "asc" | "desc"
  readonly limit: number
  readonly after: string | undefined
}

/** A field of the query the gateway refuses, and why. */
export interface BadQuery {
  readonly param: string
  readonly message: string
}

/** Reads `order` (`asc` or `desc`, default `desc`), `limit` (1–100, default 20) and `after`. */
export const parseQuery = (params: URLSearchParams): ListQuery | BadQuery => {
  const order = params.get("order") ?? "desc"
  if (order !== "asc" && order !== "desc") return { param: "order", message: "order must be 'asc' or 'desc'" }
  const rawLimit = params.get("limit")
  const limit = rawLimit === null ? 20 : Number(rawLimit)
  if (!Number.isInteger(limit) || limit < 1 || limit > 100) return { param: "limit", message: "limit must be an integer from 1 to 100" }
  const after = params.get("after") ?? undefined
  return { order, limit, after }
}

/**
 * One page of `items` (kept in the request's order): newest first for `desc`, those after the
 * item `after` when given (an unknown `after` is an empty page).
 */
export const page = (items: ReadonlyArray<InputItem>, query: ListQuery): Page => {
  const ordered = query.order === "asc" ? items : [...items].reverse()
  let start = 0
  if (query.after !== undefined) {
    const at = ordered.findIndex((item) => item.id === query.after)
    start = at < 0 ? ordered.length : at + 1
  }
  const data = ordered.slice(start, start + query.limit)
  return {
    object: "list",
    data,
    first_id: data[0]?.id ?? null,
    last_id: data.at(-1)?.id ?? null,
    has_more: start + query.limit < ordered.length
  }
}

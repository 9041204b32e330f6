/**
 * Turns Schema parse errors into `Issue`s whose `param` is the JSON path of the field at fault.
 */
import * as ParseResult from "effect/ParseResult"
import type { Issue } from "./Errors.js"

/** Formats a property path as `a.b[2].c`. */
export const formatPath = (path: ReadonlyArray<PropertyKey>): string =>
  path.reduce<string>((acc, key) => {
    if (typeof key === "number") return `${acc}[${key}]`
    const name = String(key)
    return acc === "" ? name : `${acc}.${name}`
  }, "")

const clip = (message: string): string => {
  // Schema messages quote the actual value; a Base64 payload must not come back in an error.
  const unquoted = message.replace(/"([^"]{60})[^"]{20,}"/g, '"$1…"')
  return unquoted.length > 300 ? `${unquoted.slice(0, 300)}…` : unquoted
}

/**
 * The issues of a parse error, one per field. An optional or nullable field is a union, whose
 * "Expected undefined/null" branch would otherwise shadow the real reason; those are dropped.
 */
export const parseIssues = (error: ParseResult.ParseError): ReadonlyArray<Issue> => {
  const all = ParseResult.ArrayFormatter.formatErrorSync(error).map((e) => ({
    param: formatPath(e.path),
    message: clip(e.message)
  }))
  const coveredElsewhere = (i: Issue) =>
    /^Expected (undefined|null)\b/.test(i.message) &&
    all.some((o) => o !== i && (o.param === i.param || o.param.startsWith(`${i.param}[`) || o.param.startsWith(`${i.param}.`)))
  const seen = new Set<string>()
  const out: Array<Issue> = []
  for (const i of all) {
    if (seen.has(i.param) || coveredElsewhere(i)) continue
    seen.add(i.param)
    out.push(i)
  }
  return out
}

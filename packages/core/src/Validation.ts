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
 * The issues of a parse error, one per field, each at the deepest field at fault. Schema reports
 * the alternatives of a union that did not apply as well: an optional or nullable field adds
 * "Expected undefined/null" beside the real reason, and a `string | array` field adds "expected
 * string" on `content` when an element of the array `content` is at fault. Both are dropped: an
 * issue whose field encloses another issue's field, and a union's undefined/null branch where the
 * same field has a real reason. Linear in the number of issues.
 */
export const parseIssues = (error: ParseResult.ParseError): ReadonlyArray<Issue> => {
  const all = ParseResult.ArrayFormatter.formatErrorSync(error).map((e) => ({
    param: formatPath(e.path),
    message: clip(e.message)
  }))
  const unionBranch = (i: Issue) => /^Expected (undefined|null)\b/.test(i.message)
  // Every path that encloses some issue's path (`a` and `a.b` for `a.b[0]`).
  const enclosing = new Set<string>()
  for (const { param } of all) {
    for (let k = 1; k < param.length; k++) {
      if (param[k] === "." || param[k] === "[") enclosing.add(param.slice(0, k))
    }
  }
  const withReason = new Set(all.filter((i) => !unionBranch(i)).map((i) => i.param))
  const seen = new Set<string>()
  const out: Array<Issue> = []
  for (const i of all) {
    if (seen.has(i.param) || enclosing.has(i.param) || (unionBranch(i) && withReason.has(i.param))) continue
    seen.add(i.param)
    out.push(i)
  }
  return out
}

/**
 * What a request that matches no route gets: 405 with `Allow` when its path exists under other
 * methods, else 404 — in the OpenAI shape under the OpenAI-compatible surface (so official clients
 * show a message, not raw JSON), in the task shape elsewhere.
 */
import type * as HttpRouter from "@effect/platform/HttpRouter"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import type { ModelEntry } from "@genway/core"
import { httpError, render } from "./Errors.js"

const escape = (s: string) => s.replace(/[.+?^${}()|[\]\\]/g, "\\$&")

/** A route path (`/a/:id`, `/media/*`) as a regular expression. */
const matcher = (path: string): RegExp =>
  new RegExp(`^${path.split("/").map((seg) => (seg === "*" ? ".*" : seg.startsWith(":") ? "[^/]+" : escape(seg))).join("/")}/?$`)

/** The not-found handler of a router and its entries. */
export const make = (
  router: HttpRouter.HttpRouter<any, any>,
  entries: ReadonlyArray<ModelEntry.ModelEntry>
) => {
  const routes = [...router.routes].map((r) => ({ method: r.method, pattern: matcher(r.path) }))
  const openAiPrefixes = [
    "/v1/models",
    ...entries.filter((e) => e.kind === "chat" || e.kind === "responses").map((e) => e.path)
  ]
  const isOpenAi = (path: string) => openAiPrefixes.some((p) => path === p || path.startsWith(`${p}/`))
  return (method: string, path: string): HttpServerResponse.HttpServerResponse => {
    const surface = isOpenAi(path) ? "openai" : "task"
    const methods = new Set<string>(routes.filter((r) => r.pattern.test(path)).map((r) => r.method))
    // A path the router could not take under its own method (an undecodable one) is simply unknown.
    if (methods.size > 0 && !methods.has("*") && !methods.has(method)) {
      const allow = [...methods].sort().join(", ")
      return render(
        httpError(405, `${method} is not allowed on ${path}; allowed: ${allow}`, { headers: { allow }, openAiCode: "method_not_allowed" }),
        surface
      )
    }
    return render(httpError(404, `no route for ${method} ${path}`, { openAiCode: "not_found" }), surface)
  }
}

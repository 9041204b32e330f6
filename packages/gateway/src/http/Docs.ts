/**
 * `GET /openapi.json` (OpenAPI 3.1 derived from the registry), `GET /docs` (the reference page
 * rendered from the registry and that document) and `GET /playground`. Both pages are
 * self-contained — no script, stylesheet or font from elsewhere — so they work offline.
 */
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { Api, Registry } from "@genway/registry"
import * as Effect from "effect/Effect"
import * as DocsPage from "../docs/Page.js"
import * as Playground from "../docs/Playground.js"
import { withAdmin } from "../admin/OpenApi.js"
import { withUsage } from "../ledger/OpenApi.js"

const cache = new WeakMap<object, { readonly json: string; readonly html: string }>()

const documents = Effect.map(Registry.Registry, (registry) => {
  let cached = cache.get(registry.entries)
  if (cached === undefined) {
    const doc = withUsage(withAdmin(Api.openApiSpec(registry.entries)))
    cached = { json: JSON.stringify(doc), html: DocsPage.render(registry.entries, doc) }
    cache.set(registry.entries, cached)
  }
  return cached
})

/** `GET /openapi.json`. */
export const openApiJson = Effect.map(documents, (d) =>
  HttpServerResponse.text(d.json, { contentType: "application/json" }))

/** `GET /docs`. */
export const page = Effect.map(documents, (d) => HttpServerResponse.html(d.html))

/** `GET /playground`: static; it reads `/v1/models` and `/openapi.json` itself. */
export const playground = Effect.succeed(HttpServerResponse.html(Playground.html))

/**
 * `GET /openapi.json` (OpenAPI 3.1 derived from the registry) and `GET /docs`, a self-contained
 * page rendered from that document — no script or stylesheet from elsewhere, so it works offline.
 */
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { Api, Registry } from "@genway/registry"
import * as Effect from "effect/Effect"
import { withAdmin } from "../admin/OpenApi.js"

const cache = new WeakMap<object, { readonly json: string; readonly html: string }>()

const escape = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)

const describeSchema = (schema: any, doc: any, depth = 0): string => {
  if (schema === undefined || schema === null || depth > 4) return ""
  if (schema.$ref !== undefined) {
    const name = String(schema.$ref).split("/").pop()!
    return describeSchema(doc.components?.schemas?.[name], doc, depth)
  }
  const parts: Array<string> = []
  if (schema.type !== undefined) parts.push(Array.isArray(schema.type) ? schema.type.join(" | ") : schema.type)
  if (schema.enum !== undefined) parts.push(`one of ${schema.enum.map((v: unknown) => JSON.stringify(v)).join(", ")}`)
  if (schema.minLength !== undefined) parts.push(`min length ${schema.minLength}`)
  if (schema.maxLength !== undefined) parts.push(`max length ${schema.maxLength}`)
  if (schema.minimum !== undefined) parts.push(`≥ ${schema.minimum}`)
  if (schema.maximum !== undefined) parts.push(`≤ ${schema.maximum}`)
  if (schema.minItems !== undefined) parts.push(`≥ ${schema.minItems} items`)
  if (schema.maxItems !== undefined) parts.push(`≤ ${schema.maxItems} items`)
  if (schema.format !== undefined) parts.push(schema.format)
  for (const key of ["anyOf", "oneOf"] as const) {
    if (Array.isArray(schema[key])) parts.push(schema[key].map((s: unknown) => describeSchema(s, doc, depth + 1)).filter(Boolean).join(" or "))
  }
  if (schema.allOf !== undefined) parts.push(schema.allOf.map((s: unknown) => describeSchema(s, doc, depth + 1)).join(", "))
  return parts.filter(Boolean).join(", ")
}

const fieldsTable = (schema: any, doc: any): string => {
  if (schema?.$ref !== undefined) schema = doc.components?.schemas?.[String(schema.$ref).split("/").pop()!]
  const props = schema?.properties
  if (props === undefined) return ""
  const required = new Set<string>(schema.required ?? [])
  const rows = Object.entries(props).map(([name, s]) =>
    `<tr><td><code>${escape(name)}</code></td><td>${required.has(name) ? "yes" : ""}</td><td>${escape(describeSchema(s, doc))}</td></tr>`
  ).join("")
  return `<table><tr><th>field</th><th>required</th><th>type and bounds</th></tr>${rows}</table>`
}

const render = (doc: any): string => {
  const sections = Object.entries(doc.paths ?? {}).map(([path, ops]: [string, any]) =>
    Object.entries(ops).map(([method, op]: [string, any]) => {
      const body = op.requestBody?.content?.["application/json"]?.schema
      return `<section><h3><span class="m">${method.toUpperCase()}</span> <code>${escape(path)}</code></h3>` +
        `<p>${escape(op.summary ?? op.description ?? "")}</p>${body ? fieldsTable(body, doc) : ""}</section>`
    }).join("")
  ).join("")
  return `<!doctype html><html><head><meta charset="utf-8"><title>${escape(doc.info?.title ?? "Genway")} API</title>
<style>body{font:15px/1.5 system-ui,sans-serif;max-width:960px;margin:2em auto;padding:0 1em}table{border-collapse:collapse;width:100%}
td,th{border:1px solid #ddd;padding:4px 8px;text-align:left;vertical-align:top}.m{background:#235;color:#fff;padding:1px 6px;border-radius:3px}
section{border-top:1px solid #eee;padding-top:.5em}</style></head><body>
<h1>${escape(doc.info?.title ?? "Genway")} API</h1><p>Every route needs <code>Authorization: Bearer &lt;API_TOKEN&gt;</code>
except health, docs and signed media URLs. The machine-readable description is <a href="/openapi.json">/openapi.json</a>.</p>
${sections}</body></html>`
}

const documents = Effect.map(Registry.Registry, (registry) => {
  let cached = cache.get(registry.entries)
  if (cached === undefined) {
    const doc = withAdmin(Api.openApiSpec(registry.entries))
    cached = { json: JSON.stringify(doc), html: render(doc) }
    cache.set(registry.entries, cached)
  }
  return cached
})

/** `GET /openapi.json`. */
export const openApiJson = Effect.map(documents, (d) =>
  HttpServerResponse.text(d.json, { contentType: "application/json" }))

/** `GET /docs`. */
export const page = Effect.map(documents, (d) => HttpServerResponse.html(d.html))

/**
 * `GET /docs`: the API reference, generated from the registry (vendors, kinds, E/G ids, stages,
 * cadences, retention) and the OpenAPI document (fields with their meanings and bounds, example
 * bodies, status codes, and every route other engineers' features add to it). One self-contained
 * page: inline CSS, no script, nothing fetched from elsewhere.
 */
import { ModelEntry } from "@genway/core"
import * as Duration from "effect/Duration"
import { css } from "./Style.js"

type Json = any

const escape = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)
const code = (s: string) => `<code>${escape(s)}</code>`
const pre = (s: string) => `<pre>${escape(s)}</pre>`
const json = (v: unknown) => JSON.stringify(v, null, 2)

/** The anchor of an entry's section. */
export const anchorOf = (id: string) => `m-${id.replace(/[^A-Za-z0-9]+/g, "-")}`

const fmt = (d: Duration.DurationInput) => Duration.format(Duration.decode(d))

// ---------------------------------------------------------------------------------------------
// Schemas as field tables
// ---------------------------------------------------------------------------------------------

const resolve = (schema: Json, doc: Json): Json => {
  let s = schema
  for (let i = 0; i < 5 && s?.$ref !== undefined; i++) s = doc.components?.schemas?.[String(s.$ref).split("/").pop()!]
  return s ?? {}
}

/** Members of an `anyOf` other than `null`, and whether `null` is allowed. */
const members = (schema: Json, doc: Json): { readonly of: ReadonlyArray<Json>; readonly nullable: boolean } => {
  const s = resolve(schema, doc)
  if (!Array.isArray(s.anyOf)) return { of: [s], nullable: false }
  const of = s.anyOf.map((m: Json) => resolve(m, doc))
  return { of: of.filter((m: Json) => m.type !== "null"), nullable: of.some((m: Json) => m.type === "null") }
}

const typeOf = (s: Json, doc: Json): string => {
  if (s.enum !== undefined) return typeof s.enum[0] === "number" ? "integer" : "string"
  if (s.type === "array") {
    const items = members(s.items ?? {}, doc).of.map((m) => typeOf(m, doc))
    return `array of ${[...new Set(items)].join(" or ") || "any"}`
  }
  if (s.type === "object" || s.properties !== undefined || s.additionalProperties !== undefined) return "object"
  if (Array.isArray(s.type)) return s.type.join(" or ")
  return s.type ?? "any"
}

const boundsOf = (s: Json): Array<string> => {
  const out: Array<string> = []
  if (s.enum !== undefined) out.push(`one of ${s.enum.map((v: unknown) => code(JSON.stringify(v))).join(", ")}`)
  if (s.minLength !== undefined && s.minLength > 0) out.push(`at least ${s.minLength} character${s.minLength === 1 ? "" : "s"}`)
  if (s.maxLength !== undefined) out.push(`at most ${s.maxLength} characters`)
  if (s.minimum !== undefined && s.maximum !== undefined) out.push(`${s.minimum} to ${s.maximum}`)
  else if (s.minimum !== undefined) out.push(`≥ ${s.minimum}`)
  else if (s.maximum !== undefined) out.push(`≤ ${s.maximum}`)
  if (s.minItems !== undefined && s.minItems > 0) out.push(`at least ${s.minItems} item${s.minItems === 1 ? "" : "s"}`)
  if (s.maxItems !== undefined) out.push(`at most ${s.maxItems} items`)
  if (s.maxProperties !== undefined) out.push(`at most ${s.maxProperties} keys`)
  if (s.format === "uri") out.push("absolute http(s) URL")
  if (s.format === "uuid" || s.$ref?.endsWith("/UUID")) out.push("UUID")
  return out
}

interface Row {
  readonly path: string
  readonly type: string
  readonly required: boolean
  readonly bounds: ReadonlyArray<string>
  readonly fallback: unknown
  readonly description: string
}

/** One row per field, nested objects and array items (E1's content parts) included. */
const rowsOf = (schema: Json, doc: Json, prefix = "", depth = 0): Array<Row> => {
  const s = resolve(schema, doc)
  if (depth > 5 || s.properties === undefined) return []
  const required = new Set<string>(s.required ?? [])
  const out: Array<Row> = []
  for (const [name, property] of Object.entries<Json>(s.properties)) {
    const path = `${prefix}${name}`
    const { of, nullable } = members(property, doc)
    const type = [...new Set(of.map((m) => typeOf(m, doc)))].join(" or ") + (nullable ? " or null" : "")
    const bounds = of.flatMap(boundsOf)
    out.push({ path, type, required: required.has(name), bounds, fallback: property.default, description: property.description ?? "" })
    for (const m of of) {
      if (m.properties !== undefined) out.push(...rowsOf(m, doc, `${path}.`, depth + 1))
      if (m.type === "array") {
        const items = members(m.items ?? {}, doc).of
        const variants = items.filter((i) => i.properties !== undefined)
        for (const item of variants) {
          const tag = item.properties?.type?.enum?.[0]
          const label = variants.length > 1 && typeof tag === "string" ? ` (${tag} part)` : ""
          out.push(...rowsOf(item, doc, `${path}[]${label}.`, depth + 1))
        }
      }
    }
  }
  return out
}

const fieldsTable = (schema: Json, doc: Json): string => {
  const rows = rowsOf(schema, doc)
  if (rows.length === 0) return `<p class="muted">No body.</p>`
  const body = rows.map((r) =>
    `<tr><td class="name">${code(r.path)}${r.required ? ` <span class="badge">required</span>` : ""}</td><td data-label="type">${escape(r.type)}</td>` +
    `<td data-label="bounds">${r.bounds.join("; ")}${r.fallback !== undefined ? `${r.bounds.length > 0 ? "; " : ""}default ${code(JSON.stringify(r.fallback))}` : ""}</td>` +
    `<td class="desc">${escape(r.description)}</td></tr>`
  ).join("")
  return `<div class="table"><table class="fields"><thead><tr><th scope="col">field</th><th scope="col">type</th><th scope="col">bounds</th><th scope="col">meaning</th></tr></thead><tbody>${body}</tbody></table></div>`
}

// ---------------------------------------------------------------------------------------------
// Examples
// ---------------------------------------------------------------------------------------------

// A task id as the gateway makes them: a UUID of version 7, its time `created` below.
const exampleId = "019421bc-aa00-7d1e-9a3b-2f6c8e1d4a70"
const created = "2025-01-01T12:00:00.000Z"
const finished = "2025-01-01T12:01:30.000Z"

const curl = (method: string, path: string, body?: unknown) =>
  [
    `curl ${method === "GET" ? "" : `-X ${method} `}"$GENWAY_URL${path}" \\`,
    `  -H "Authorization: Bearer $GENWAY_TOKEN"${body === undefined ? "" : ` \\`}`,
    ...(body === undefined ? [] : [`  -H "Content-Type: application/json" \\`, `  -d '${JSON.stringify(body)}'`])
  ].join("\n")

const taskExamples = (entry: ModelEntry.TaskEntry) => {
  const info = (status: string, extra: object = {}) => ({ id: exampleId, status, created_at: created, updated_at: status === "pending" ? created : finished, ...extra })
  const media = entry.result === "videos"
    ? { videos: [`https://gateway.example.com/media/${exampleId}/0.mp4?expires=1735736400&signature=…`] }
    : { images: [`https://gateway.example.com/media/${exampleId}/0.png?expires=1735736400&signature=…`] }
  const accepted = entry.createIncludesStatus
    ? { task_info: info("pending") }
    : { task_info: { id: exampleId, created_at: created, updated_at: created } }
  return {
    accepted,
    completed: { task_info: info("completed"), ...media },
    failed: {
      task_info: info("failed", {
        error: { code: 400, title: "Invalid request", detail: "the vendor refused the request: the prompt was flagged by content moderation" }
      })
    }
  }
}

const chatCompletion = (model: string) => ({
  id: "chatcmpl-7f3a…",
  object: "chat.completion",
  created: 1735732800,
  model,
  choices: [{
    index: 0,
    finish_reason: "STOP",
    message: { role: "assistant", content: [{ type: "image_url", image_url: { url: "iVBORw0KGgoAAAANSUhEUgAA…" } }] }
  }],
  usage: {
    prompt_tokens: 12,
    completion_tokens: 1290,
    total_tokens: 1302,
    audioTokens: null,
    cache_creation_input_tokens: null,
    cache_read_input_tokens: null
  }
})

const chatStream = (model: string) =>
  [
    `data: ${JSON.stringify({ id: "chatcmpl-7f3a…", object: "chat.completion.chunk", created: 1735732800, model, choices: [{ index: 0, delta: { role: "assistant", content: [{ type: "image_url", image_url: { url: "iVBORw0KGgo…" } }] }, finish_reason: "STOP" }], usage: { completion_tokens: 1290, prompt_tokens: 12, total_tokens: 1302 } })}`,
    "",
    `data: ${JSON.stringify({ id: "chatcmpl-7f3a…", object: "chat.completion.chunk", created: 1735732800, model, system_fingerprint: "", choices: [], usage: { prompt_tokens: 12, completion_tokens: 1290, total_tokens: 1302 } })}`,
    "",
    "data: [DONE]"
  ].join("\n")

const modelResponse = (model: string) => ({
  id: "resp_68a1…",
  object: "response",
  created_at: 1735732800,
  model,
  status: "completed",
  output: [{
    id: "msg_68a1…",
    type: "message",
    role: "assistant",
    status: "completed",
    content: [{ type: "output_text", text: "Requests arrive,\none door for many voices,\nanswers find their way.", annotations: [] }]
  }],
  output_text: "Requests arrive,\none door for many voices,\nanswers find their way.",
  usage: { prompt_tokens: 14, completion_tokens: 19, total_tokens: 33 }
})

const responsesStream = [
  `event: response.created\ndata: {"type":"response.created","sequence_number":0,"response":{"id":"resp_68a1…","status":"in_progress",…}}`,
  `event: response.output_text.delta\ndata: {"type":"response.output_text.delta","sequence_number":4,"output_index":0,"content_index":0,"delta":"Requests "}`,
  `event: response.completed\ndata: {"type":"response.completed","sequence_number":9,"response":{"id":"resp_68a1…","status":"completed",…}}`
].join("\n\n")

// ---------------------------------------------------------------------------------------------
// Routes and status codes from the OpenAPI document
// ---------------------------------------------------------------------------------------------

const methods = ["get", "post", "put", "patch", "delete"] as const

interface Operation {
  readonly method: string
  readonly path: string
  readonly op: Json
}

const operations = (doc: Json): Array<Operation> =>
  Object.entries<Json>(doc.paths ?? {}).flatMap(([path, item]) =>
    methods.filter((m) => item?.[m] !== undefined).map((method) => ({ method, path, op: item[method] }))
  )

const route = (method: string, path: string, what = "") =>
  `<div class="route"><span class="m ${method.toLowerCase()}">${escape(method.toUpperCase())}</span> ${code(path)}${what === "" ? "" : ` <span class="muted">${escape(what)}</span>`}</div>`

const statusTable = (op: Json, extra: Readonly<Record<string, string>> = {}) => {
  const all: Record<string, string> = {}
  for (const [status, response] of Object.entries<Json>(op?.responses ?? {})) all[status] = response?.description ?? ""
  // The decode error of the framework is the same 400 as the entry's own: one line says it.
  if (all["400"] !== undefined) all["400"] = "Invalid body or parameter; error.param names the field"
  for (const [status, text] of Object.entries(extra)) all[status] ??= text
  const rows = Object.keys(all).sort().map((s) => `<tr><td>${code(s)}</td><td>${escape(all[s]!)}</td></tr>`).join("")
  return `<div class="table"><table><thead><tr><th scope="col">status</th><th scope="col">when</th></tr></thead><tbody>${rows}</tbody></table></div>`
}

const requestSchemaOf = (op: Json) => op?.requestBody?.content?.["application/json"]?.schema

// ---------------------------------------------------------------------------------------------
// Sections
// ---------------------------------------------------------------------------------------------

const kindLabel = (entry: ModelEntry.ModelEntry) =>
  entry.kind === "chat" ? "chat completions" : entry.kind === "responses" ? "model responses" : `${entry.result === "images" ? "image" : "video"} task`

const extraRoutes = (entry: ModelEntry.ModelEntry, ops: ReadonlyArray<Operation>, shown: ReadonlySet<string>) =>
  ops.filter((o) => o.path.startsWith(`${entry.path}/`) && !shown.has(`${o.method} ${o.path}`))

/** A realistic 400 of the task surface: the first length-bounded field too long. */
const badRequest = (schema: Json, doc: Json) => {
  const bounded = rowsOf(schema, doc).find((r) => !r.path.includes(".") && r.bounds.some((b) => b.startsWith("at most") && b.endsWith("characters")))
  const max = bounded?.bounds.find((b) => b.endsWith("characters"))
  return bounded === undefined || max === undefined
    ? { error: { code: 400, title: "Invalid request", detail: "the request body must be a JSON object", param: "body" } }
    : { error: { code: 400, title: "Invalid request", detail: `${bounded.path}: must be ${max}`, param: bounded.path } }
}

const taskSection = (entry: ModelEntry.TaskEntry, doc: Json, ops: ReadonlyArray<Operation>) => {
  const item = doc.paths?.[entry.path]?.post
  const retrievePath = ModelEntry.retrievalPath(entry)
  const retrieve = doc.paths?.[retrievePath]?.get
  const schema = requestSchemaOf(item)
  const example = schema?.examples?.[0] ?? {}
  const ex = taskExamples(entry)
  const shown = new Set([`post ${entry.path}`, `get ${retrievePath}`])
  const more = extraRoutes(entry, ops, shown)
  return `
<h4>Create</h4>
${route("POST", entry.path, "→ 202 with the task's id; the request never waits for the vendor")}
${fieldsTable(schema, doc)}
<h4>Example</h4>
${pre(curl("POST", entry.path, example))}
<div class="grid">
<div><strong>202 Accepted</strong>${pre(json(ex.accepted))}</div>
<div><strong>Invalid body: 400</strong>${pre(json(badRequest(schema, doc)))}</div>
</div>
<details><summary>Status codes of create</summary>${statusTable(item, { "202": "Task accepted" })}</details>
<h4>Retrieve</h4>
${route("GET", retrievePath, "→ 200 with the task's state and, once completed, its results")}
<p>Poll until <code>task_info.status</code> is <code>completed</code> or <code>failed</code> (states: <code>pending</code> → <code>processing</code> → <code>completed</code> | <code>failed</code>).
<code>task_id</code> is the UUID of the 202. A completed task carries <code>${entry.result}</code>: signed URLs of its results${entry.mirror ? ", served by the gateway (retrieve again for a fresh URL when one expires)" : ""}${entry.retention !== null ? `; media is deleted ${escape(fmt(entry.retention))} after completion and its URLs then answer 410 Gone, while the task stays readable` : ""}. A failed task carries <code>task_info.error</code> {code, title, detail}: 400 when the vendor refused the request (parameters, content moderation), 3001 for execution errors and deadline expiry. Another tenant's task is a 404, as an unknown one.</p>
${pre(curl("GET", `${entry.path}/${exampleId}`))}
<div class="grid">
<div><strong>200, completed</strong>${pre(json(ex.completed))}</div>
<div><strong>200, failed</strong>${pre(json(ex.failed))}</div>
</div>
<details><summary>Status codes of retrieve</summary>${statusTable(retrieve, { "200": "The task, in whatever state it is" })}</details>
${more.length === 0 ? "" : `<h4>More routes of this model</h4>${more.map((o) => `${route(o.method, o.path, o.op.summary ?? o.op.description ?? "")}${o.op.description !== undefined && o.op.description !== o.op.summary ? `<p>${escape(o.op.description)}</p>` : ""}${statusTable(o.op)}`).join("")}`}
<p class="muted">Polled upstream after ${escape(fmt(entry.poll.initial))}, then every ${escape(fmt(entry.poll.every[0]))}–${escape(fmt(entry.poll.every[1]))}; fails with 3001 after ${escape(fmt(entry.poll.deadline))}. Body limit ${Math.round(entry.maxBodyBytes / 1_000_000)} MB. In sandbox mode, send <code>x-sandbox-outcome: failed:400</code> to try the failure path.</p>`
}

const openAiSection = (entry: ModelEntry.ModelEntry, doc: Json, ops: ReadonlyArray<Operation>) => {
  const item = doc.paths?.[entry.path]?.post
  const schema = requestSchemaOf(item)
  const example = schema?.examples?.[0] ?? {}
  const shown = new Set([`post ${entry.path}`])
  let retrieve = ""
  if (entry.kind === "responses") {
    const p = `${entry.path}/{response_id}`
    shown.add(`get ${p}`)
    retrieve = `<h4>Retrieve</h4>${route("GET", p, "→ 200 with a stored or background response")}
<p>Fetches a response created with <code>store: true</code> or <code>background: true</code>; poll a background response until its <code>status</code> is <code>completed</code>, <code>incomplete</code> or <code>failed</code>.</p>
<details><summary>Status codes of retrieve</summary>${statusTable(doc.paths?.[p]?.get, { "200": "The response" })}</details>`
  }
  const more = extraRoutes(entry, ops, shown)
  const isChat = entry.kind === "chat"
  return `
<h4>Create</h4>
${route("POST", entry.path, isChat ? "→ 200 chat completion, or server-sent events with stream: true" : "→ 200 model response, or server-sent events with stream: true")}
${fieldsTable(schema, doc)}
<h4>Example</h4>
${pre(curl("POST", entry.path, example))}
<div class="grid">
<div><strong>200</strong>${pre(json(isChat ? chatCompletion(entry.model) : modelResponse(entry.model)))}</div>
<div><strong>200 with <code>"stream": true</code></strong> <span class="muted">(text/event-stream)</span>${pre(isChat ? chatStream(entry.model) : responsesStream)}
<strong>Invalid body: 400</strong>${pre(json({ error: { message: "messages: must have at least 1 element", type: "invalid_request_error", param: "messages", code: null } }))}</div>
</div>
<p>Errors use the OpenAI envelope <code>{"error": {"message", "type", "param", "code"}}</code>, so the official clients raise their typed errors.${isChat ? " The generated image's <code>url</code> is Base64 data without a data-URL prefix: prepend <code>data:image/png;base64,</code> to show it." : ""}</p>
<details><summary>Status codes</summary>${statusTable(item, { "200": "The answer" })}</details>
${retrieve}
${more.length === 0 ? "" : `<h4>More routes of this model</h4>${more.map((o) => route(o.method, o.path, o.op.summary ?? "")).join("")}`}`
}

const entrySection = (entry: ModelEntry.ModelEntry, doc: Json, ops: ReadonlyArray<Operation>) =>
  `<section class="endpoint" id="${anchorOf(entry.id)}" data-entry="${escape(entry.id)}">
<h3>${entry.endpoints.map((e) => `<span class="badge id">${escape(e)}</span>`).join(" ")} ${escape(entry.summary)}</h3>
<p><span class="badge">${escape(entry.vendor)}</span> <span class="badge">${escape(kindLabel(entry))}</span> <span class="badge ${entry.stage}">${escape(entry.stage)}</span>
model ${code(entry.kind === "task" ? entry.id : entry.model)} · <a href="/playground#${encodeURIComponent(entry.id)}">try it in the playground</a></p>
${ModelEntry.isTaskEntry(entry) ? taskSection(entry, doc, ops) : openAiSection(entry, doc, ops)}
</section>`

/** Routes the gateway always has, shown unless the OpenAPI document already describes them. */
const systemRoutes: ReadonlyArray<readonly [string, string, string]> = [
  ["GET", "/v1/models", "Every model: id, E/G ids, stage, routes, live or sandbox, poll cadence, retention (bearer token)"],
  ["GET", "/healthz", "The process answers (no token)"],
  ["GET", "/readyz", "The database is reachable and migrated (no token)"],
  ["GET", "/openapi.json", "This API as an OpenAPI 3.1 document (no token)"],
  ["GET", "/docs", "This page (no token)"],
  ["GET", "/playground", "Try every model from the browser (no token to load; paste yours in the page)"],
  ["GET", "/media/{key}", "A stored result, by the signed URL a task returns (no token; 403 when the signature is wrong or expired, 410 after retention)"]
]

const otherRoutes = (entries: ReadonlyArray<ModelEntry.ModelEntry>, ops: ReadonlyArray<Operation>) => {
  const owned = (path: string) => entries.some((e) => path === e.path || path.startsWith(`${e.path}/`))
  const others = ops.filter((o) => !owned(o.path))
  const documented = new Set(others.map((o) => `${o.method.toUpperCase()} ${o.path}`))
  const fixed = systemRoutes.filter(([m, p]) => !documented.has(`${m} ${p}`))
  const rows = [
    ...others.map((o) =>
      `<tr><td>${route(o.method, o.path)}</td><td>${escape(o.op.summary ?? o.op.description ?? "")}${o.op.responses !== undefined ? `<br><span class="muted">answers ${Object.keys(o.op.responses).sort().map((s) => code(s)).join(" ")}</span>` : ""}</td></tr>`
    ),
    ...fixed.map(([m, p, what]) => `<tr><td>${route(m, p)}</td><td>${escape(what)}</td></tr>`)
  ].join("")
  return `<div class="table"><table><thead><tr><th scope="col">route</th><th scope="col">what it does</th></tr></thead><tbody>${rows}</tbody></table></div>`
}

// ---------------------------------------------------------------------------------------------
// The page
// ---------------------------------------------------------------------------------------------

const vendorOrder = (entries: ReadonlyArray<ModelEntry.ModelEntry>) => [...new Set(entries.map((e) => e.vendor))].sort()

const toc = (entries: ReadonlyArray<ModelEntry.ModelEntry>) =>
  vendorOrder(entries).map((vendor) => {
    const mine = entries.filter((e) => e.vendor === vendor)
    const kinds = [...new Set(mine.map(kindLabel))]
    return `<li class="group">${escape(vendor)}</li>` + kinds.map((kind) =>
      mine.filter((e) => kindLabel(e) === kind).map((e) =>
        `<li><a href="#${anchorOf(e.id)}">${e.endpoints.map((x) => `<span class="badge id">${escape(x)}</span>`).join(" ")} ${escape(e.summary)}</a> <span class="muted">${escape(kind)}</span> <span class="badge ${e.stage}">${escape(e.stage)}</span></li>`
      ).join("")
    ).join("")
  }).join("")

/** The `/docs` page of these entries and their OpenAPI document. */
export const render = (entries: ReadonlyArray<ModelEntry.ModelEntry>, doc: Json): string => {
  const ops = operations(doc)
  // Several chat entries may share one path: the route is documented once, with the first entry.
  const seen = new Set<string>()
  const documented = entries.filter((e) => (seen.has(e.path) ? false : (seen.add(e.path), true)))
  const title = escape(doc.info?.title ?? "Genway")
  const sections = vendorOrder(documented).map((vendor) =>
    `<h2 id="vendor-${escape(vendor)}">${escape(vendor)}</h2>` +
    documented.filter((e) => e.vendor === vendor).map((e) => entrySection(e, doc, ops)).join("")
  ).join("")
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><link rel="icon" href="data:,">
<title>${title} API reference</title><style>${css}</style></head><body>
<header class="top"><a class="brand" href="/docs">${title}</a><nav aria-label="Site"><a href="/docs" aria-current="page">API reference</a><a href="/playground">Playground</a><a href="/openapi.json">openapi.json</a></nav></header>
<main>
<h1>${title} API reference</h1>
<p>${escape(doc.info?.description ?? "")} Every model below is one route of this gateway; video and image models are <strong>tasks</strong> (create, then retrieve until done), chat and responses answer directly.</p>
<h2 id="start">Getting started</h2>
<p>Every route needs <code>Authorization: Bearer &lt;token&gt;</code> except <code>/healthz</code>, <code>/readyz</code>, <code>/openapi.json</code>, <code>/docs</code>, <code>/playground</code> and signed media URLs. Tokens come from <code>GATEWAY_API_KEYS</code> or <code>genway keys create</code>.</p>
${pre(`export GENWAY_URL=http://127.0.0.1:8080 GENWAY_TOKEN=<your token>\n${curl("GET", "/v1/models")}`)}
<p>A vendor without credentials is <strong>sandboxed</strong> (see <code>mode</code> in <code>/v1/models</code>): its tasks complete after <code>GATEWAY_SANDBOX_DELAY_MS</code> with real sample media, its answers carry <code>x-genway-sandbox: true</code>, and the request header <code>x-sandbox-outcome: failed:&lt;code&gt;</code> makes a task fail with that code.</p>
<h3>Errors</h3>
<p>Task routes answer <code>{"error": {"code", "title", "detail", "param"}}</code>; chat and responses answer the OpenAI envelope <code>{"error": {"message", "type", "param", "code"}}</code>. <code>param</code> names the field at fault, e.g. <code>prompt</code> or <code>messages[0].content[1].image_url.url</code>. Every response carries <code>x-request-id</code>.</p>
<div class="table"><table><thead><tr><th scope="col">status</th><th scope="col">meaning</th></tr></thead><tbody>
<tr><td><code>400</code></td><td>Invalid body or parameter (malformed JSON included); the detail lists every problem, <code>param</code> the first field</td></tr>
<tr><td><code>401</code></td><td>Missing or unknown token (<code>WWW-Authenticate: Bearer</code>)</td></tr>
<tr><td><code>403</code></td><td>The key may not use this model</td></tr>
<tr><td><code>404</code></td><td>Unknown route, model or task; another tenant's task looks the same</td></tr>
<tr><td><code>409</code></td><td>Idempotency key reused with another body</td></tr>
<tr><td><code>413</code></td><td>Body over the model's limit</td></tr>
<tr><td><code>415</code></td><td>Body is not JSON</td></tr>
<tr><td><code>429</code></td><td>Rate limited; wait <code>Retry-After</code> seconds</td></tr>
<tr><td><code>502</code>, <code>503</code>, <code>504</code></td><td>Upstream failure, unavailable or timeout (chat and responses, which wait for the vendor)</td></tr>
</tbody></table></div>
<h2 id="contents">Models</h2>
<nav aria-label="Models"><ul class="toc">${toc(documented)}</ul></nav>
<p><a href="#other-routes">Other routes</a> (models list, health, and more)</p>
${sections}
<h2 id="other-routes">Other routes</h2>
${otherRoutes(entries, ops)}
<p class="muted">Generated from the registry and <a href="/openapi.json">/openapi.json</a>.</p>
</main></body></html>`
}

// The floor: the least any Node.js gateway must do, in a few lines of node:http. E2 pass-through
// (read the body, check the bearer token, JSON.parse + JSON.stringify both ways, forward on a
// keep-alive agent) and, with FLOOR_DB set, task create (parse, authenticate, one durable insert
// per request on the same database as the gateway's: SQLite WAL synchronous=NORMAL, or PostgreSQL).
// With FLOOR_SSE_URL set (a streaming upstream's URL, `{model}` in it replaced by the request's
// model; FLOOR_SSE_HEADERS, a JSON object, its credentials), `POST /v1/chat/completions` with
// `stream: true` too: the body parsed and turned into the upstream's, and each event of its answer
// parsed and written on as a chunk (JSON.parse + JSON.stringify per event), as soon as it arrives.
// Prints its port.
import { createServer, request, Agent } from "node:http"
import { createRequire } from "node:module"
import { randomUUID } from "node:crypto"

const token = process.env.FLOOR_TOKEN
const upstream = new URL(process.env.UPSTREAM_URL ?? "http://127.0.0.1:1")
const upstreamKey = process.env.UPSTREAM_KEY
const agent = new Agent({ keepAlive: true, maxSockets: 256 })
const require = createRequire(process.env.FLOOR_RESOLVE_FROM ?? import.meta.url)

let insert // (id, body) => Promise<void>
if (process.env.FLOOR_DB === "sqlite") {
  const Database = require("better-sqlite3")
  const db = new Database(process.env.FLOOR_SQLITE_FILE)
  db.pragma("journal_mode = WAL")
  db.pragma("synchronous = NORMAL")
  db.exec("CREATE TABLE IF NOT EXISTS floor_tasks (id TEXT PRIMARY KEY, tenant TEXT NOT NULL, request TEXT NOT NULL, created_at INTEGER NOT NULL)")
  const stmt = db.prepare("INSERT INTO floor_tasks (id, tenant, request, created_at) VALUES (?, ?, ?, ?)")
  insert = async (id, body) => void stmt.run(id, "bench", body, Date.now())
} else if (process.env.FLOOR_DB === "pg") {
  const pg = require("pg")
  const pool = new pg.Pool({ connectionString: process.env.FLOOR_PG_URL, max: 10 })
  const table = `floor_tasks_${process.pid}`
  await pool.query(`CREATE TABLE IF NOT EXISTS ${table} (id TEXT PRIMARY KEY, tenant TEXT NOT NULL, request TEXT NOT NULL, created_at BIGINT NOT NULL)`)
  process.on("SIGTERM", async () => {
    await pool.query(`DROP TABLE IF EXISTS ${table}`).catch(() => {})
    process.exit(0)
  })
  insert = async (id, body) => void (await pool.query(`INSERT INTO ${table} (id, tenant, request, created_at) VALUES ($1, $2, $3, $4)`, [id, "bench", body, Date.now()]))
}

const sseUrl = process.env.FLOOR_SSE_URL
const sseHeaders = JSON.parse(process.env.FLOOR_SSE_HEADERS ?? "{}")

/** A chat stream: the vendor's request made from the chat body, its events relayed as chunks. */
const stream = (json, res) => {
  const contents = json.messages.map((m) => ({
    role: m.role === "assistant" ? "model" : "user",
    parts: typeof m.content === "string" ? [{ text: m.content }] : m.content.map((p) => ({ text: p.text }))
  }))
  const out = JSON.stringify({ contents, generationConfig: { responseModalities: ["TEXT", "IMAGE"] } })
  const url = new URL(sseUrl.replace("{model}", encodeURIComponent(json.model)))
  const up = request({
    agent, host: url.hostname, port: url.port, method: "POST", path: url.pathname + url.search,
    headers: { ...sseHeaders, "content-type": "application/json", "content-length": Buffer.byteLength(out) }
  }, (ures) => {
    if (ures.statusCode !== 200) {
      ures.resume()
      return reply(res, 502, '{"error":"upstream"}')
    }
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" })
    let buffered = ""
    ures.setEncoding("utf8")
    ures.on("data", (text) => {
      buffered += text
      let end
      while ((end = /\r?\n\r?\n/.exec(buffered)) !== null) {
        const event = buffered.slice(0, end.index)
        buffered = buffered.slice(end.index + end[0].length)
        if (!event.startsWith("data: ")) continue
        const data = JSON.parse(event.slice(6))
        res.write(`data: ${JSON.stringify({ object: "chat.completion.chunk", model: json.model, choices: [{ index: 0, delta: data.candidates?.[0]?.content ?? {} }] })}\n\n`)
      }
    })
    ures.on("end", () => res.end("data: [DONE]\n\n"))
  })
  up.on("error", () => (res.headersSent ? res.destroy() : reply(res, 502, '{"error":"upstream"}')))
  up.end(out)
}

const reply = (res, status, body) => {
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(body) })
  res.end(body)
}

const server = createServer((req, res) => {
  const chunks = []
  req.on("data", (c) => chunks.push(c))
  req.on("end", () => {
    if (req.headers.authorization !== `Bearer ${token}`) return reply(res, 401, '{"error":"unauthorized"}')
    let json
    try {
      json = JSON.parse(Buffer.concat(chunks).toString())
    } catch {
      return reply(res, 400, '{"error":"malformed JSON"}')
    }
    if (sseUrl !== undefined && json.stream === true) return stream(json, res)
    if (insert !== undefined) {
      const id = randomUUID()
      insert(id, JSON.stringify(json)).then(
        () => reply(res, 202, JSON.stringify({ id, status: "queued" })),
        () => reply(res, 503, '{"error":"database"}')
      )
      return
    }
    const out = JSON.stringify(json)
    const up = request({
      agent, host: upstream.hostname, port: upstream.port, method: "POST", path: `${upstream.pathname}/responses`,
      headers: { authorization: `Bearer ${upstreamKey}`, "content-type": "application/json", "content-length": Buffer.byteLength(out) }
    }, (ures) => {
      const parts = []
      ures.on("data", (c) => parts.push(c))
      ures.on("end", () => {
        try {
          reply(res, ures.statusCode, JSON.stringify(JSON.parse(Buffer.concat(parts).toString())))
        } catch {
          reply(res, 502, '{"error":"bad upstream"}')
        }
      })
    })
    up.on("error", () => reply(res, 502, '{"error":"upstream"}'))
    up.end(out)
  })
})
server.keepAliveTimeout = 65_000
server.listen(0, "127.0.0.1", () => console.log(JSON.stringify({ port: server.address().port })))

// The fake upstream behind every contestant: an OpenAI-compatible `POST /v1/responses` answering a
// small completed response object at once (a fresh id each time), on keep-alive. Prints its port.
import { createServer } from "node:http"
import { randomBytes } from "node:crypto"

const key = process.env.UPSTREAM_KEY ?? "upstream-key"
const prefix = randomBytes(6).toString("hex")
let n = 0

const server = createServer((req, res) => {
  const chunks = []
  req.on("data", (c) => chunks.push(c))
  req.on("end", () => {
    if (req.headers.authorization !== `Bearer ${key}`) {
      res.writeHead(401, { "content-type": "application/json" })
      return res.end('{"error":{"message":"bad key","type":"invalid_request_error"}}')
    }
    if (req.method !== "POST" || !req.url.endsWith("/responses")) {
      res.writeHead(404, { "content-type": "application/json" })
      return res.end('{"error":{"message":"not found"}}')
    }
    let model = "responses"
    try {
      model = JSON.parse(Buffer.concat(chunks).toString()).model ?? model
    } catch {}
    const body = JSON.stringify({
      id: `resp_${prefix}${(n++).toString(36)}`,
      object: "response",
      created_at: Math.floor(Date.now() / 1000),
      status: "completed",
      model,
      output: [{ type: "message", id: "msg_1", status: "completed", role: "assistant", content: [{ type: "output_text", text: "A paper boat on a pond.", annotations: [] }] }],
      usage: { input_tokens: 12, output_tokens: 7, total_tokens: 19 }
    })
    res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(body) })
    res.end(body)
  })
})
server.keepAliveTimeout = 65_000
server.listen(0, "127.0.0.1", () => console.log(JSON.stringify({ port: server.address().port })))

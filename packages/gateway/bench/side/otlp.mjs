// The OTLP/HTTP sink of the "Genway + telemetry" contestant: answers 200 to POST /v1/traces and
// /v1/metrics (any encoding; the body is counted, not decoded) and tells what it received on
// GET /counts, so the bench can show that spans were exported while it measured. Prints its port.
import { createServer } from "node:http"

const counts = {}

const server = createServer((req, res) => {
  if (req.method === "GET" && req.url === "/counts") {
    res.writeHead(200, { "content-type": "application/json" })
    return res.end(JSON.stringify(counts))
  }
  let bytes = 0
  req.on("data", (c) => (bytes += c.length))
  req.on("end", () => {
    const path = req.url.split("?")[0]
    if (req.method !== "POST" || (path !== "/v1/traces" && path !== "/v1/metrics")) {
      res.writeHead(404, { "content-type": "application/json" })
      return res.end("{}")
    }
    const c = (counts[path] ??= { requests: 0, bytes: 0 })
    c.requests++
    c.bytes += bytes
    // An empty ExportServiceResponse is valid in both encodings (protobuf: zero bytes).
    const json = (req.headers["content-type"] ?? "").includes("json")
    res.writeHead(200, { "content-type": json ? "application/json" : "application/x-protobuf" })
    res.end(json ? "{}" : "")
  })
})
server.keepAliveTimeout = 65_000
server.listen(0, "127.0.0.1", () => console.log(JSON.stringify({ port: server.address().port })))

// Load generator for the benchmarks, run in a worker thread so it does not share the gateway's
// event loop: `total` POSTs of `body` with `concurrency` in flight; posts back latencies in ms.
import { Agent, request } from "node:http"
import { parentPort, workerData } from "node:worker_threads"

const { port, path, body, token, total, concurrency, warmup } = workerData
const agent = new Agent({ keepAlive: true, maxSockets: concurrency })
const headers = { authorization: `Bearer ${token}`, "content-type": "application/json", "content-length": Buffer.byteLength(body) }

const post = () =>
  new Promise((resolve, reject) => {
    const start = performance.now()
    const req = request({ agent, host: "127.0.0.1", port, path, method: "POST", headers }, (res) => {
      res.resume()
      res.on("end", () => resolve({ status: res.statusCode, ms: performance.now() - start }))
    })
    req.on("error", reject)
    req.end(body)
  })

for (let i = 0; i < warmup; i++) await post()
const latencies = []
let failed = 0
let next = 0
const t0 = performance.now()
await Promise.all(Array.from({ length: concurrency }, async () => {
  while (next < total) {
    next++
    const r = await post()
    if (r.status !== 202) failed++
    latencies.push(r.ms)
  }
}))
parentPort.postMessage({ seconds: (performance.now() - t0) / 1000, latencies, failed })
agent.destroy()

// The load generator, in its own process: reads one job as JSON from argv[2], prints one JSON result.
// - { mode: "max" | "rate", url, headers, body, connections, seconds, rate? }: autocannon; latency
//   percentiles in ms, throughput in req/s, non-2xx counted.
// - { mode: "sequential", url, headers, body, requests, warmup }: one keep-alive connection, one
//   request at a time, latency of each measured with performance.now().
import autocannon from "autocannon"
import { Agent, request } from "node:http"

const job = JSON.parse(process.argv[2])

const sequential = async () => {
  const url = new URL(job.url)
  const agent = new Agent({ keepAlive: true, maxSockets: 1 })
  const headers = { ...job.headers, "content-length": Buffer.byteLength(job.body) }
  const once = () => new Promise((resolve, reject) => {
    const start = performance.now()
    const req = request({ agent, host: url.hostname, port: url.port, path: url.pathname, method: "POST", headers }, (res) => {
      res.resume()
      res.on("end", () => resolve({ status: res.statusCode, ms: performance.now() - start }))
    })
    req.on("error", reject)
    req.end(job.body)
  })
  for (let i = 0; i < job.warmup; i++) await once()
  const ms = []
  let failed = 0
  for (let i = 0; i < job.requests; i++) {
    const r = await once()
    if (r.status >= 300) failed++
    ms.push(r.ms)
  }
  ms.sort((a, b) => a - b)
  const at = (p) => ms[Math.min(ms.length - 1, Math.floor(ms.length * p))]
  agent.destroy()
  return { p50: at(0.5), p99: at(0.99), failed }
}

const cannon = () => new Promise((resolve, reject) => {
  autocannon({
    url: job.url,
    method: "POST",
    headers: job.headers,
    body: job.body,
    connections: job.connections,
    duration: job.seconds,
    ...(job.rate !== undefined ? { overallRate: job.rate } : {})
  }, (err, r) => {
    if (err) return reject(err)
    resolve({
      rps: r.requests.average,
      total: r.requests.total,
      p50: r.latency.p50,
      p99: r.latency.p99,
      failed: r.non2xx + r.errors + r.timeouts
    })
  })
})

const result = job.mode === "sequential" ? await sequential() : await cannon()
console.log(JSON.stringify(result))
process.exit(0)

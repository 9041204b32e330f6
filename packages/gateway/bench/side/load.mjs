// The load generator, in its own process, started once per benchmark run: reads jobs from stdin,
// one JSON object per line, runs them one after another and prints one JSON result line for each
// (one process for all phases: starting Node and autocannon for each would add ~0.3 s a phase).
// - { mode: "max" | "rate", url, headers, body, connections, seconds, rate? }: autocannon; latency
//   percentiles in ms, throughput in req/s, non-2xx counted.
// - { mode: "sequential", url, headers, body, requests, warmup, pair? }: one keep-alive connection, one
//   request at a time, latency of each measured with performance.now(). With `pair` ({ url, headers,
//   body }: the upstream called directly), a request to it alternates with each measured one (which
//   of the two goes first alternating too), on its own keep-alive connection; the result's `pair`
//   holds its percentiles, so what a contestant adds is read against the upstream of the same
//   seconds rather than of another phase of a shared, drifting machine.
// A job that fails prints { "error": "…" }. The process ends when stdin closes.
import autocannon from "autocannon"
import { Agent, request } from "node:http"
import { createInterface } from "node:readline"

/** `requests` keep-alive requests to `target`, one at a time: `once()` resolves with status and ms. */
const client = (target) => {
  const url = new URL(target.url)
  const agent = new Agent({ keepAlive: true, maxSockets: 1 })
  const headers = { ...target.headers, "content-length": Buffer.byteLength(target.body) }
  const once = () => new Promise((resolve, reject) => {
    const start = performance.now()
    const req = request({ agent, host: url.hostname, port: url.port, path: url.pathname, method: "POST", headers }, (res) => {
      res.resume()
      res.on("end", () => resolve({ status: res.statusCode, ms: performance.now() - start }))
    })
    req.on("error", reject)
    req.end(target.body)
  })
  return { once, close: () => agent.destroy() }
}

const percentiles = (ms) => {
  ms.sort((a, b) => a - b)
  const at = (p) => ms[Math.min(ms.length - 1, Math.floor(ms.length * p))]
  return { p50: at(0.5), p99: at(0.99) }
}

const sequential = async (job) => {
  const self = client(job)
  const pair = job.pair === undefined ? undefined : client(job.pair)
  try {
    for (let i = 0; i < job.warmup; i++) {
      await self.once()
      if (pair !== undefined) await pair.once()
    }
    const ms = []
    const pairMs = []
    let failed = 0
    for (let i = 0; i < job.requests; i++) {
      const paired = async () => {
        const p = await pair.once()
        if (p.status >= 300) failed++
        pairMs.push(p.ms)
      }
      if (pair !== undefined && i % 2 === 0) await paired()
      const r = await self.once()
      if (r.status >= 300) failed++
      ms.push(r.ms)
      if (pair !== undefined && i % 2 === 1) await paired()
    }
    return { ...percentiles(ms), failed, ...(pair === undefined ? {} : { pair: percentiles(pairMs) }) }
  } finally {
    self.close()
    pair?.close()
  }
}

const cannon = (job) => new Promise((resolve, reject) => {
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

for await (const line of createInterface({ input: process.stdin })) {
  if (line.trim() === "") continue
  const job = JSON.parse(line)
  const result = await (job.mode === "sequential" ? sequential(job) : cannon(job)).catch((e) => ({ error: String(e) }))
  process.stdout.write(`${JSON.stringify(result)}\n`)
}
process.exit(0)

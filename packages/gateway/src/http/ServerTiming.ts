/**
 * `Server-Timing: gateway;dur=<ms>, upstream;dur=<ms>` on E1/E2 answers (DESIGN.md §11), so the
 * gateway's overhead can be checked in production: `upstream` is the time spent waiting on the
 * vendor (for a stream, until its answer began), `gateway` the rest of the time until the answer's
 * head. An answer that called no vendor (sandboxed, or refused before the vendor) carries `gateway`
 * only.
 *
 * The upstream HTTP client adds its waits to the cell of the request being served
 * (observability/Request.ts, filled by observability/Upstream.ts); `handle` (http/Handle.ts) sets
 * the header on the answers of the routes that ask for it.
 */

/** What a request spent on vendors. */
export interface Timing {
  /** Milliseconds spent waiting on vendors. */
  readonly upstreamMs: number
  /** Upstream calls made. */
  readonly upstreamCalls: number
}

/** No vendor called. */
export const none: Timing = { upstreamMs: 0, upstreamCalls: 0 }

const ms = (n: number) => (Math.round(n * 100) / 100).toString()

/** The header's value for a request started at `t0` (a `performance.now()` reading). */
export const headerValue = (t0: number, timing: Timing, now = performance.now()): string => {
  const total = now - t0
  if (timing.upstreamCalls === 0) return `gateway;dur=${ms(total)}`
  return `gateway;dur=${ms(Math.max(0, total - timing.upstreamMs))}, upstream;dur=${ms(timing.upstreamMs)}`
}

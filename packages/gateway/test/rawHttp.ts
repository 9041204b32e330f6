/**
 * Requests with Node's own HTTP client, for tests that need exact control of the wire: duplicate
 * headers, chunked bodies, bodies held open; a socket error is returned, not thrown.
 */
import * as Effect from "effect/Effect"
import * as http from "node:http"

/** What a raw request got back: an answer, or the socket error instead of one. */
export interface Answer {
  readonly status: number
  readonly headers: http.IncomingHttpHeaders
  readonly text: string
  readonly json: any
  readonly error?: string
}

/**
 * One request with Node's client. `body` chunks are written one after the other; without a
 * `content-length` header the body goes chunked.
 */
export const raw = (
  port: number,
  options: {
    readonly method?: string
    readonly path: string
    readonly headers?: http.OutgoingHttpHeaders
    readonly body?: ReadonlyArray<string | Buffer>
    readonly hold?: Promise<void>
    readonly agent?: http.Agent
  }
) =>
  Effect.promise(() =>
    new Promise<Answer>((resolve) => {
      const req = http.request({
        host: "127.0.0.1",
        port,
        method: options.method ?? "POST",
        path: options.path,
        headers: options.headers,
        agent: options.agent ?? false
      }, (res) => {
        const chunks: Array<Buffer> = []
        res.on("data", (c: Buffer) => chunks.push(c))
        res.on("end", () => {
          const text = Buffer.concat(chunks).toString("utf8")
          let json: any = undefined
          try {
            json = JSON.parse(text)
          } catch {
            // not JSON
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json })
        })
        res.on("error", (e) => resolve({ status: 0, headers: {}, text: "", json: undefined, error: e.message }))
      })
      req.on("error", (e) => resolve({ status: 0, headers: {}, text: "", json: undefined, error: e.message }))
      const write = async () => {
        for (const chunk of options.body ?? []) {
          if (!req.write(chunk)) await new Promise((r) => req.once("drain", r))
        }
        if (options.hold !== undefined) await options.hold
        req.end()
      }
      write().catch(() => {})
    })
  )


/**
 * A webhook receiver for tests: a real HTTP server on an ephemeral loopback port that records
 * every request, verifies it with the `standardwebhooks` library, and answers as told.
 */
import * as Effect from "effect/Effect"
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type * as net from "node:net"
import { Webhook } from "standardwebhooks"

/** One received request. */
export interface Received {
  readonly id: string
  readonly headers: Record<string, string>
  readonly body: string
  /** The verified payload, or the verification error's message. */
  readonly verified: { readonly ok: true; readonly payload: any } | { readonly ok: false; readonly error: string }
  readonly at: number
}

/** How to answer a request: a status, or `"hang"` to never answer. */
export type Answer = number | "hang"

/** A receiver; `secret` is set after the endpoint is registered. */
export interface Receiver {
  readonly url: string
  readonly received: Array<Received>
  secret: string | undefined
  answer: (n: number) => Answer
}

/** Starts a receiver for the scope. */
export const receiver = (answer: (n: number) => Answer = () => 204) =>
  Effect.acquireRelease(
    Effect.async<Receiver>((resume) => {
      const sockets = new Set<net.Socket>()
      const self: Receiver & { server?: ReturnType<typeof createServer> } = { url: "", received: [], secret: undefined, answer }
      const server = createServer((req: IncomingMessage, res: ServerResponse) => {
        const chunks: Array<Buffer> = []
        req.on("data", (c: Buffer) => chunks.push(c))
        req.on("end", () => {
          const body = Buffer.concat(chunks).toString("utf8")
          const headers = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)]))
          let verified: Received["verified"]
          try {
            verified = { ok: true, payload: new Webhook(self.secret ?? "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").verify(body, headers) }
          } catch (e) {
            verified = { ok: false, error: (e as Error).message }
          }
          self.received.push({ id: headers["webhook-id"] ?? "", headers, body, verified, at: Date.now() })
          const a = self.answer(self.received.length)
          if (a === "hang") return
          res.writeHead(a).end()
        })
      })
      server.on("connection", (s) => {
        sockets.add(s)
        s.on("close", () => sockets.delete(s))
      })
      server.listen(0, "127.0.0.1", () => {
        const { port } = server.address() as net.AddressInfo
        ;(self as { url: string }).url = `http://127.0.0.1:${port}/hook`
        self.server = server
        ;(self as any).sockets = sockets
        resume(Effect.succeed(self))
      })
    }),
    (r) =>
      Effect.async<void>((resume) => {
        const server = (r as any).server as ReturnType<typeof createServer>
        for (const s of (r as any).sockets as Set<net.Socket>) s.destroy()
        server.close(() => resume(Effect.void))
      })
  )

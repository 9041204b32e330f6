/**
 * `genway tasks list | watch <entry id> <task id> | cancel <entry id> <task id>`: a client of a
 * running gateway (`GENWAY_URL`, default `http://127.0.0.1:8080`; `GENWAY_TOKEN`). `watch` follows
 * the task's event stream (resuming with `Last-Event-ID` if the connection drops) and shows a
 * progress bar on a terminal, plain lines otherwise; it exits 0 when the task completes and 1 when
 * it fails or is canceled.
 */
import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import { Registry } from "@genway/registry"
import * as Config from "effect/Config"
import * as Console from "effect/Console"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Shared from "./Shared.js"

/** A client-side failure: its message is all the user sees. */
export class TasksCliError extends Data.TaggedError("TasksCliError")<{ readonly message: string }> {
  constructor(args: { readonly message: string }) {
    super(args)
    this.stack = `genway: ${args.message}`
  }
}

const target = Effect.gen(function*() {
  const url = yield* Config.string("GENWAY_URL").pipe(Config.withDefault("http://127.0.0.1:8080"))
  const token = yield* Config.redacted("GENWAY_TOKEN").pipe(
    Effect.mapError(() => new TasksCliError({ message: "set GENWAY_TOKEN to an API token of the gateway" }))
  )
  return { base: url.replace(/\/+$/, ""), headers: { authorization: `Bearer ${Redacted.value(token)}` } }
})

const call = (path: string, init: RequestInit = {}) =>
  Effect.gen(function*() {
    const { base, headers } = yield* target
    const response = yield* Effect.tryPromise({
      try: (signal) => fetch(`${base}${path}`, { ...init, signal, headers: { ...headers, ...(init.headers as Record<string, string>) } }),
      catch: (e) => new TasksCliError({ message: `cannot reach the gateway at ${base}: ${(e as Error).message}` })
    })
    const json = yield* Effect.tryPromise({ try: () => response.json() as Promise<any>, catch: () => undefined }).pipe(
      Effect.orElseSucceed(() => undefined)
    )
    if (!response.ok) {
      return yield* new TasksCliError({ message: `${response.status}: ${json?.error?.detail ?? response.statusText}` })
    }
    return json
  })

const entryPath = (entryId: string) => {
  const entry = Registry.entries.find((e) => e.id === entryId && e.kind === "task")
  return entry === undefined
    ? Effect.fail(new TasksCliError({ message: `unknown task model ${entryId}; see GET /v1/models` }))
    : Effect.succeed(entry.path)
}

const describeProgress = (data: any): string => {
  const p = data?.progress
  if (p === undefined) return ""
  const parts = [
    p.percent !== undefined ? `${p.percent}%` : undefined,
    p.eta_seconds !== undefined ? `eta ${p.eta_seconds}s` : undefined,
    p.source === "estimate" ? "(estimate)" : undefined
  ].filter(Boolean)
  return parts.join(" ")
}

const bar = (percent: number | undefined, width = 30) => {
  if (percent === undefined) return `[${"·".repeat(width)}]`
  const filled = Math.round((Math.max(0, Math.min(100, percent)) / 100) * width)
  return `[${"#".repeat(filled)}${"-".repeat(width - filled)}]`
}

const list = Command.make(
  "list",
  {
    model: Options.text("model").pipe(Options.optional, Options.withDescription("only tasks of this entry id")),
    status: Options.choice("status", ["pending", "processing", "completed", "failed"]).pipe(Options.optional),
    limit: Options.integer("limit").pipe(Options.withDefault(20))
  },
  ({ limit, model, status }) =>
    Effect.gen(function*() {
      const query = new URLSearchParams({ limit: String(limit) })
      if (Option.isSome(model)) query.set("model", model.value)
      if (Option.isSome(status)) query.set("status", status.value)
      const page = yield* call(`/v1/tasks?${query}`)
      if (page.data.length === 0) return yield* Console.log("no tasks")
      for (const t of page.data) {
        const info = t.task_info
        const extra = info.error ? `  error ${info.error.code} ${info.error.title}` : describeProgress(t) ? `  ${describeProgress(t)}` : ""
        yield* Console.log(`${info.id}  ${info.status.padEnd(10)}  ${t.model}  ${info.created_at}${extra}`)
      }
      if (page.next !== null) yield* Console.log(`(more: GET /v1/tasks?after=${page.next})`)
    })
).pipe(Command.withDescription("List your tasks, newest first."))

/** Follows the event stream until a terminal frame; returns the final status. */
const follow = (path: string, onFrame: (event: string, data: any) => void) =>
  Effect.gen(function*() {
    const { base, headers } = yield* target
    let last: string | undefined
    for (let attempt = 0; attempt < 30; attempt++) {
      const final = yield* Effect.tryPromise({
        try: async (signal) => {
          const response = await fetch(`${base}${path}`, {
            signal,
            headers: { ...headers, accept: "text/event-stream", ...(last !== undefined ? { "last-event-id": last } : {}) }
          })
          if (!response.ok) {
            const json = (await response.json().catch(() => undefined)) as any
            throw new TasksCliError({ message: `${response.status}: ${json?.error?.detail ?? response.statusText}` })
          }
          const decoder = new TextDecoder()
          let buffer = ""
          for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
            buffer += decoder.decode(chunk, { stream: true })
            let cut: number
            while ((cut = buffer.indexOf("\n\n")) >= 0) {
              const block = buffer.slice(0, cut)
              buffer = buffer.slice(cut + 2)
              const fields: Record<string, string> = {}
              for (const line of block.split("\n")) {
                if (line.startsWith(":")) continue
                const i = line.indexOf(":")
                if (i > 0) fields[line.slice(0, i)] = (fields[line.slice(0, i)] ?? "") + line.slice(i + 1).replace(/^ /, "")
              }
              if (fields.event === undefined || fields.data === undefined) continue
              if (fields.id !== undefined) last = fields.id
              onFrame(fields.event, JSON.parse(fields.data))
              if (fields.event === "task.completed" || fields.event === "task.failed") return fields.event
            }
          }
          return undefined
        },
        catch: (e) => (e instanceof TasksCliError ? e : new TasksCliError({ message: `stream interrupted: ${(e as Error).message}` }))
      }).pipe(Effect.catchAll((e) => (e.message.startsWith("stream interrupted") ? Effect.succeed(undefined) : Effect.fail(e))))
      if (final !== undefined) return final
      yield* Effect.sleep("1 second")
    }
    return yield* new TasksCliError({ message: "lost the event stream too many times" })
  })

const watch = Command.make(
  "watch",
  { model: Args.text({ name: "entry-id" }), id: Args.text({ name: "task-id" }) },
  ({ id, model }) =>
    Effect.gen(function*() {
      const path = yield* entryPath(model)
      const tty = process.stdout.isTTY === true
      let final: any
      const status = yield* follow(`${path}/${id}/events`, (event, data) => {
        final = data
        const state = event.replace(/^task\./, "")
        if (tty) {
          const percent = state === "completed" ? 100 : data.progress?.percent
          process.stdout.write(`\r\x1b[2K${bar(percent)} ${state.padEnd(10)} ${describeProgress(data)}`)
        } else {
          process.stdout.write(`${new Date().toISOString()} ${state}${describeProgress(data) ? ` ${describeProgress(data)}` : ""}\n`)
        }
      })
      if (tty) process.stdout.write("\n")
      if (status === "task.completed") {
        for (const url of [...(final?.videos ?? []), ...(final?.images ?? [])]) yield* Console.log(url)
        return
      }
      const error = final?.task_info?.error
      yield* Console.error(`failed: ${error ? `${error.code} ${error.title}: ${error.detail}` : "unknown error"}`)
      return yield* Effect.sync(() => process.exit(1))
    })
).pipe(Command.withDescription("Follow a task until it finishes: exit 0 completed, 1 failed or canceled."))

const cancel = Command.make(
  "cancel",
  { model: Args.text({ name: "entry-id" }), id: Args.text({ name: "task-id" }) },
  ({ id, model }) =>
    Effect.gen(function*() {
      const path = yield* entryPath(model)
      const result = yield* call(`${path}/${id}/cancel`, { method: "POST" })
      yield* Console.log(`canceled ${id}: ${result.task_info.error.detail}`)
    })
).pipe(Command.withDescription("Cancel a pending or processing task."))

/** `genway tasks …`. */
export const command = Command.make("tasks").pipe(
  Command.withSubcommands([list, watch, cancel]),
  Command.withDescription(
    Shared.withSubcommandList("tasks", "List, watch and cancel tasks of a running gateway (GENWAY_URL, GENWAY_TOKEN).", [list, watch, cancel])
  )
)

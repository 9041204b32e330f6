/**
 * The registry's HttpApi contract against the real server: the client derived from it
 * (`HttpApiClient.make(Api.makeApi(entries))`) creates and reads every task entry, a chat
 * completion and a model response over HTTP, decoding each answer with the contract's schemas and
 * each error by its status. The server is hand-routed, so this is what keeps the two from drifting.
 */
import * as HttpApiClient from "@effect/platform/HttpApiClient"
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import { ModelEntry } from "@genway/core"
import { Api, Registry } from "@genway/registry"
import { assert, describe, layer } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as TestClock from "effect/TestClock"
import { validBodies } from "./bodies.js"
import * as Harness from "./harness.js"

type Call<I> = (request: I) => Effect.Effect<any, unknown>

/** A task entry's group of the derived client, as this test calls it. */
interface TaskCalls {
  readonly create: Call<{ readonly payload: Api.JsonBody }>
  readonly retrieve: Call<{ readonly path: { readonly task_id: string } }>
  readonly cancel: Call<{ readonly path: { readonly task_id: string } }>
}

/** A chat or responses entry's group. */
interface OpenAiCalls {
  readonly create: Call<{ readonly payload: Api.JsonBody }>
  readonly retrieve?: Call<{ readonly path: { readonly response_id: string } }>
}

/** The derived client over the test server's HTTP client, with a bearer token (or none). */
const client = (token: string | undefined) =>
  Effect.flatMap(HttpClient.HttpClient, (http) =>
    HttpApiClient.make(Api.makeApi(Registry.entries), {
      transformClient: (c) => (token === undefined ? c : HttpClient.mapRequest(c, HttpClientRequest.bearerToken(token)))
    }).pipe(
      Effect.provideService(HttpClient.HttpClient, http),
      Effect.map((c) => c as unknown as Readonly<Record<string, TaskCalls & OpenAiCalls>>)
    ))

/** Entries the contract routes: the first entry of each path. */
const routed = Registry.entries.filter((e, i, all) => all.findIndex((o) => o.path === e.path) === i)

const bodyOf = (entry: ModelEntry.ModelEntry) => {
  const id = entry.endpoints.find((e) => validBodies[e] !== undefined)
  return id === undefined ? undefined : validBodies[id]
}

describe("the registry's HttpApi client against the real server", () => {
  layer(Harness.layer())((it) => {
    it.scoped("creates, reads and cancels tasks of every task entry; answers decode with the contract", () =>
      Effect.gen(function*() {
        const api = yield* client(Harness.tokenA)
        const tasks = routed.filter(ModelEntry.isTaskEntry)
        const created: Array<{ readonly entry: ModelEntry.ModelEntry; readonly id: string }> = []
        for (const entry of tasks) {
          const body = bodyOf(entry)
          assert.isDefined(body, `no valid body for ${entry.id}`)
          const answer = yield* api[entry.id]!.create({ payload: body! })
          assert.match(answer.task_info.id, /^[0-9a-f-]{36}$/, entry.id)
          created.push({ entry, id: answer.task_info.id })
        }
        assert.isAtLeast(created.length, 10)
        for (let i = 0; i < 3; i++) {
          yield* Harness.work
          yield* TestClock.adjust("2 seconds")
        }
        for (const { entry, id } of created) {
          const done = yield* api[entry.id]!.retrieve({ path: { task_id: id } })
          assert.strictEqual(done.task_info.id, id, entry.id)
          assert.strictEqual(done.task_info.status, "completed", entry.id)
          const media = entry.result === "videos" ? done.videos : done.images
          assert.isAtLeast(media.length, 1, entry.id)
        }
        // A finished task cannot be cancelled: 409, decoded as the contract's TaskFinished.
        const first = created[0]!
        const finished = yield* Effect.flip(api[first.entry.id]!.cancel({ path: { task_id: first.id } }))
        assert.instanceOf(finished, Api.TaskFinished)
      }), 30_000)

    it.scoped("errors decode by status: 404 for another tenant's task, 401 without a token, 400 naming the field", () =>
      Effect.gen(function*() {
        const e4 = Registry.entries.find((e) => e.endpoints.includes("E4"))!
        const a = yield* client(Harness.tokenA)
        const b = yield* client(Harness.tokenB)
        const created = yield* a[e4.id]!.create({ payload: validBodies["E4"]! })
        const foreign = yield* Effect.flip(b[e4.id]!.retrieve({ path: { task_id: created.task_info.id } }))
        assert.instanceOf(foreign, Api.TaskNotFound)
        const anonymous = yield* client(undefined)
        const refused = yield* Effect.flip(anonymous[e4.id]!.create({ payload: validBodies["E4"]! }))
        assert.instanceOf(refused, Api.TaskUnauthorized)
        // The contract's schema allows what the cross-field rules refuse; the server names the field.
        const e3 = Registry.entries.find((e) => e.endpoints.includes("E3"))!
        const bad = yield* Effect.flip(a[e3.id]!.create({ payload: { ...validBodies["E3"]!, video_url: "https://videos.example.com/v.mp4" } }))
        assert.instanceOf(bad, Api.TaskBadRequest)
        assert.strictEqual((bad as Api.TaskBadRequest).error.param, "video_url")
      }))

    it.scoped("a chat completion and a model response (created, then retrieved) decode with the contract", () =>
      Effect.gen(function*() {
        const api = yield* client(Harness.tokenA)
        const chat = routed.find((e) => e.kind === "chat")!
        const completion = yield* api[chat.id]!.create({
          payload: { model: chat.model, messages: [{ role: "user", content: "hello" }] }
        })
        assert.strictEqual(completion.object, "chat.completion")
        assert.isAtLeast(completion.choices.length, 1)

        const responses = routed.find((e) => e.kind === "responses")!
        const response = yield* api[responses.id]!.create({ payload: { model: responses.model, input: "hello" } })
        assert.strictEqual(response.status, "completed")
        const again = yield* api[responses.id]!.retrieve!({ path: { response_id: response.id } })
        assert.strictEqual(again.id, response.id)
        const missing = yield* Effect.flip(api[responses.id]!.retrieve!({ path: { response_id: "resp_missing" } }))
        assert.instanceOf(missing, Api.OpenAiNotFound)
      }))
  })
})

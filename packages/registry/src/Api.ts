/**
 * The HTTP contract derived from the entries: one `HttpApiGroup` per entry (named by its id) with a
 * `create` endpoint, plus a `retrieve` endpoint for task entries. The server serves its OpenAPI
 * document and may implement it with `HttpApiBuilder`; a client is `HttpApiClient.make(makeApi(entries))`.
 * Request bodies are the entries' schemas, so the document shows every bound. The cross-field
 * rules and image checks of `Validate` are not expressible here and apply on top.
 */
import * as HttpApi from "@effect/platform/HttpApi"
import type * as HttpApiError from "@effect/platform/HttpApiError"
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as HttpApiMiddleware from "@effect/platform/HttpApiMiddleware"
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import * as HttpApiSecurity from "@effect/platform/HttpApiSecurity"
import * as OpenApi from "@effect/platform/OpenApi"
import { Chat, Errors, ModelEntry, Responses, TaskInfo } from "@genway/core"
import * as Context from "effect/Context"
import * as Schema from "effect/Schema"

// ---------------------------------------------------------------------------------------------
// Errors. One class per status: a handler fails with an instance, and the class (not the shape,
// which is the same for every status) tells the encoder which status to answer with.
// ---------------------------------------------------------------------------------------------

const errorClass = <Fields extends Schema.Struct.Fields>(fields: Fields) =>
<Self>() =>
(identifier: string, status: number, description: string) =>
  Schema.Class<Self>(identifier)(fields, HttpApiSchema.annotations({ status, description }))

const taskError = errorClass(Errors.TaskErrorEnvelope.fields)
const openAiError = errorClass(Errors.OpenAiErrorEnvelope.fields)

/** 400 on the task surface: invalid JSON, body or parameter; `param` names the field. */
export class TaskBadRequest extends taskError<TaskBadRequest>()("TaskBadRequest", 400, "Invalid body or parameter") {}
/** 401 on the task surface: missing or unknown bearer token. */
export class TaskUnauthorized extends taskError<TaskUnauthorized>()("TaskUnauthorized", 401, "Missing or unknown token") {}
/** 403 on the task surface: the key may not use this model. */
export class TaskForbidden extends taskError<TaskForbidden>()("TaskForbidden", 403, "Key not allowed this model") {}
/** 404 on the task surface: unknown route, model or task (another tenant's task included). */
export class TaskNotFound extends taskError<TaskNotFound>()("TaskNotFound", 404, "Unknown model or task") {}
/** 409 on the task surface: an idempotency key reused with another body. */
export class TaskConflict extends taskError<TaskConflict>()("TaskConflict", 409, "Idempotency key reused with another body") {}
/** 413 on the task surface: the body exceeds the entry's limit. */
export class TaskPayloadTooLarge
  extends taskError<TaskPayloadTooLarge>()("TaskPayloadTooLarge", 413, "Body over the model's limit")
{}
/** 415 on the task surface: the body is not JSON. */
export class TaskUnsupportedMediaType
  extends taskError<TaskUnsupportedMediaType>()("TaskUnsupportedMediaType", 415, "Body is not JSON")
{}
/** 409 on the task surface: the task is already finished (cancel). */
export class TaskFinished extends taskError<TaskFinished>()("TaskFinished", 409, "The task is already finished") {}
/** 429 on the task surface: rate limited (see `Retry-After`). */
export class TaskRateLimited extends taskError<TaskRateLimited>()("TaskRateLimited", 429, "Rate limited") {}

/** 400 on the OpenAI-compatible surface. */
export class OpenAiBadRequest extends openAiError<OpenAiBadRequest>()("OpenAiBadRequest", 400, "Invalid body or parameter") {}
/** 401 on the OpenAI-compatible surface. */
export class OpenAiUnauthorized
  extends openAiError<OpenAiUnauthorized>()("OpenAiUnauthorized", 401, "Missing or unknown token")
{}
/** 403 on the OpenAI-compatible surface. */
export class OpenAiForbidden extends openAiError<OpenAiForbidden>()("OpenAiForbidden", 403, "Key not allowed this model") {}
/** 404 on the OpenAI-compatible surface (unknown model). */
export class OpenAiNotFound extends openAiError<OpenAiNotFound>()("OpenAiNotFound", 404, "Unknown model") {}
/** 413 on the OpenAI-compatible surface. */
export class OpenAiPayloadTooLarge
  extends openAiError<OpenAiPayloadTooLarge>()("OpenAiPayloadTooLarge", 413, "Body over the model's limit")
{}
/** 415 on the OpenAI-compatible surface. */
export class OpenAiUnsupportedMediaType
  extends openAiError<OpenAiUnsupportedMediaType>()("OpenAiUnsupportedMediaType", 415, "Body is not JSON")
{}
/** 429 on the OpenAI-compatible surface. */
export class OpenAiRateLimited extends openAiError<OpenAiRateLimited>()("OpenAiRateLimited", 429, "Rate limited") {}
/** 502 on the OpenAI-compatible surface: the vendor answered with an error or nonsense. */
export class OpenAiBadGateway extends openAiError<OpenAiBadGateway>()("OpenAiBadGateway", 502, "Upstream failure") {}
/** 503 on the OpenAI-compatible surface: the vendor is unavailable or overloaded. */
export class OpenAiUnavailable extends openAiError<OpenAiUnavailable>()("OpenAiUnavailable", 503, "Upstream unavailable") {}
/** 504 on the OpenAI-compatible surface: the vendor did not answer in time. */
export class OpenAiGatewayTimeout
  extends openAiError<OpenAiGatewayTimeout>()("OpenAiGatewayTimeout", 504, "Upstream timeout")
{}

// ---------------------------------------------------------------------------------------------
// Authentication
// ---------------------------------------------------------------------------------------------

/** The caller resolved from the bearer token: each token belongs to one tenant. */
export class Tenant extends Context.Tag("@genway/registry/Api/Tenant")<Tenant, { readonly id: string }>() {}

/** Bearer authentication of the task surface; failures answer with the task error envelope. */
export class TaskAuthorization extends HttpApiMiddleware.Tag<TaskAuthorization>()("@genway/registry/Api/TaskAuthorization", {
  failure: TaskUnauthorized,
  provides: Tenant,
  security: { bearer: HttpApiSecurity.bearer }
}) {}

/** Bearer authentication of the OpenAI-compatible surface; failures answer with its envelope. */
export class OpenAiAuthorization
  extends HttpApiMiddleware.Tag<OpenAiAuthorization>()("@genway/registry/Api/OpenAiAuthorization", {
    failure: OpenAiUnauthorized,
    provides: Tenant,
    security: { bearer: HttpApiSecurity.bearer }
  })
{}

// ---------------------------------------------------------------------------------------------
// Success bodies
// ---------------------------------------------------------------------------------------------

const TaskCreated = TaskInfo.TaskCreated.annotations(HttpApiSchema.annotations({ identifier: "TaskCreated", status: 202 }))
const VideoTaskResult = TaskInfo.VideoTaskResult.annotations({ identifier: "VideoTaskResult" })
const ImageTaskResult = TaskInfo.ImageTaskResult.annotations({ identifier: "ImageTaskResult" })

const ChatCompletion = Chat.ChatCompletion.annotations({
  identifier: "ChatCompletion",
  description: "SPEC.md §2.4 chat completion; with `stream: true`, server-sent events of §2.5 chunks ending with `data: [DONE]`"
})
const ModelResponse = Responses.ResponseObject.annotations({
  identifier: "ModelResponse",
  description: "SPEC.md §2.6 model response; with `stream: true`, server-sent events of the vendor's response events"
})

/** Path parameter of the stored-response retrieval. */
export const ResponseIdPath = Schema.Struct({ response_id: Schema.String })

/** The answer of a stored response's deletion. */
const ResponseDeleted = Schema.Struct({
  id: Schema.String,
  object: Schema.Literal("response"),
  deleted: Schema.Literal(true)
}).annotations({ identifier: "ResponseDeleted" })

/** One page of a stored response's input items (OpenAI list shape). */
const ResponseInputItems = Schema.Struct({
  object: Schema.Literal("list"),
  data: Schema.Array(Schema.Record({ key: Schema.String, value: Schema.Unknown })),
  first_id: Schema.NullOr(Schema.String),
  last_id: Schema.NullOr(Schema.String),
  has_more: Schema.Boolean
}).annotations({ identifier: "ResponseInputItems", description: "The request's input as items, each with an id and a type" })

/** Query of the input items listing. */
const InputItemsQuery = Schema.Struct({
  order: Schema.optional(Schema.Literal("asc", "desc")),
  limit: Schema.optional(Schema.NumberFromString),
  after: Schema.optional(Schema.String)
})

/** A task's event stream (`text/event-stream`). */
const TaskEventStream = HttpApiSchema.Text({ contentType: "text/event-stream" })

/** Progress of a running task (DESIGN.md §8): the vendor's figure, or an estimate from recent durations. */
export const Progress = Schema.Struct({
  percent: Schema.optional(Schema.Number),
  eta_seconds: Schema.optional(Schema.Number),
  source: Schema.Literal("vendor", "estimate")
}).annotations({ identifier: "Progress" })

/** One task of the listing. */
export const ListedTask = Schema.Struct({
  model: Schema.String,
  url: Schema.String,
  task_info: TaskInfo.TaskInfo,
  videos: Schema.optional(Schema.Array(Schema.String)),
  images: Schema.optional(Schema.Array(Schema.String)),
  progress: Schema.optional(Progress)
}).annotations({ identifier: "ListedTask" })

/** `GET /v1/tasks` query. */
export const TaskListQuery = Schema.Struct({
  model: Schema.optional(Schema.String),
  status: Schema.optional(Schema.Literal("pending", "processing", "completed", "failed")),
  limit: Schema.optional(Schema.NumberFromString.pipe(Schema.int(), Schema.between(1, 100))),
  after: Schema.optional(Schema.String)
})

/** The task event types a webhook endpoint subscribes to. */
export const WebhookEventType = Schema.Literal("task.processing", "task.completed", "task.failed")

/** `POST /v1/webhooks` body. */
export const WebhookCreate = Schema.Struct({
  url: Schema.String.annotations({ description: "https URL on a public address (see GATEWAY_WEBHOOK_ALLOW_*)" }),
  events: Schema.optional(Schema.Array(WebhookEventType)),
  description: Schema.optional(Schema.String.pipe(Schema.maxLength(500)))
}).annotations({ identifier: "WebhookCreate" })

/** A webhook endpoint (`secret` only in the answer to its creation). */
export const WebhookEndpoint = Schema.Struct({
  id: Schema.String,
  url: Schema.String,
  events: Schema.Array(WebhookEventType),
  description: Schema.NullOr(Schema.String),
  secret: Schema.optional(Schema.String),
  created_at: Schema.String
}).annotations({ identifier: "WebhookEndpoint" })

/** One entry of an endpoint's deliveries log. */
export const WebhookDelivery = Schema.Struct({
  id: Schema.String,
  event_id: Schema.String,
  type: Schema.String,
  status: Schema.Literal("pending", "delivered", "failed"),
  attempts: Schema.Number,
  last_status_code: Schema.NullOr(Schema.Number),
  last_error: Schema.NullOr(Schema.String),
  next_attempt_at: Schema.NullOr(Schema.String),
  created_at: Schema.String
}).annotations({ identifier: "WebhookDelivery" })

const WebhookIdPath = Schema.Struct({ webhook_id: Schema.String })

/** `GET /v1/tasks` and `/v1/webhooks…` (DESIGN.md §8). */
const tasksGroup = HttpApiGroup.make("tasks")
  .add(
    HttpApiEndpoint.get("list", "/v1/tasks")
      .setUrlParams(TaskListQuery)
      .addSuccess(Schema.Struct({ data: Schema.Array(ListedTask), next: Schema.NullOr(Schema.String) }))
      .annotate(OpenApi.Summary, "List the tenant's tasks, newest first (cursor `after`)")
  )
  .add(
    HttpApiEndpoint.post("createWebhook", "/v1/webhooks")
      .setPayload(WebhookCreate)
      .addSuccess(WebhookEndpoint, { status: 201 })
      .annotate(OpenApi.Summary, "Register a webhook endpoint; the whsec_ secret is shown only here")
  )
  .add(
    HttpApiEndpoint.get("listWebhooks", "/v1/webhooks")
      .addSuccess(Schema.Struct({ data: Schema.Array(WebhookEndpoint) }))
      .annotate(OpenApi.Summary, "List webhook endpoints (without secrets)")
  )
  .add(
    HttpApiEndpoint.del("deleteWebhook", "/v1/webhooks/:webhook_id")
      .setPath(WebhookIdPath)
      .addSuccess(HttpApiSchema.NoContent)
      .annotate(OpenApi.Summary, "Delete a webhook endpoint; its pending deliveries are dropped")
  )
  .add(
    HttpApiEndpoint.post("testWebhook", "/v1/webhooks/:webhook_id/test")
      .setPath(WebhookIdPath)
      .addSuccess(Schema.Struct({ event_id: Schema.String, type: Schema.Literal("webhook.test") }), { status: 202 })
      .annotate(OpenApi.Summary, "Send a webhook.test event to the endpoint, whatever its filter")
  )
  .add(
    HttpApiEndpoint.get("webhookDeliveries", "/v1/webhooks/:webhook_id/deliveries")
      .setPath(WebhookIdPath)
      .addSuccess(Schema.Struct({ data: Schema.Array(WebhookDelivery) }))
      .annotate(OpenApi.Summary, "The endpoint's deliveries, newest first")
  )
  .addError(TaskBadRequest)
  .addError(TaskNotFound)
  .addError(TaskRateLimited)
  .middleware(TaskAuthorization)
  .annotateContext(OpenApi.annotations({
    description: "Tasks across models, and signed webhooks (Standard Webhooks) on task changes"
  }))

/** Path parameter of the retrieval endpoints. */
export const TaskIdPath = Schema.Struct({ task_id: Schema.UUID })

// ---------------------------------------------------------------------------------------------
// Groups
// ---------------------------------------------------------------------------------------------

const asPath = (path: string): HttpApiEndpoint.PathSegment => {
  if (!path.startsWith("/")) throw new Error(`entry path must start with "/": ${path}`)
  return path as HttpApiEndpoint.PathSegment
}

/** A JSON request body, as the contract types it: entries' schemas are `any`-typed data. */
export type JsonBody = { readonly [key: string]: unknown }

const payloadOf = (entry: ModelEntry.ModelEntry): Schema.Schema<JsonBody, JsonBody> => entry.request

const describe = (entry: ModelEntry.ModelEntry) =>
  OpenApi.annotations({
    description: `${entry.summary} (${[...entry.endpoints, entry.stage].join(", ")})`
  })

/** The group of a task entry: `create` (202 `{task_info}`) and `retrieve` (200 result envelope). */
const taskGroup = (entry: ModelEntry.TaskEntry) =>
  HttpApiGroup.make(entry.id)
    .add(
      HttpApiEndpoint.post("create", asPath(entry.path))
        .setPayload(payloadOf(entry))
        .addSuccess(TaskCreated)
        .addError(TaskConflict)
        .addError(TaskPayloadTooLarge)
        .addError(TaskUnsupportedMediaType)
        .annotate(OpenApi.Summary, `Create a task: ${entry.summary}`)
    )
    .add(
      HttpApiEndpoint.get("retrieve", asPath(`${entry.path}/:task_id`))
        .setPath(TaskIdPath)
        .addSuccess(entry.result === "videos" ? VideoTaskResult : ImageTaskResult)
        .annotate(OpenApi.Summary, "Retrieve a task")
        .annotate(
          OpenApi.Description,
          `The task's state (pending, processing, completed, failed). Completed: \`${entry.result}\` holds signed URLs of the results. Failed: \`task_info.error\` {code, title, detail}, code 400 when the vendor refused the request, 3001 for execution errors and deadline expiry. Another tenant's task is a 404.`
        )
    )
    .add(
      HttpApiEndpoint.get("events", asPath(`${entry.path}/:task_id/events`))
        .setPath(TaskIdPath)
        .addSuccess(TaskEventStream)
        .annotate(OpenApi.Summary, "Stream the task's state changes (server-sent events)")
        .annotate(
          OpenApi.Description,
          "One frame per change (`id: <sequence>`, `event: task.pending|task.processing|task.completed|task.failed`, " +
            "`data:` {model, url, task_info, videos|images, progress?}); the current state first unless `Last-Event-ID` " +
            "resumes after a sequence; `: keep-alive` every 15 s; ends after the terminal frame."
        )
    )
    .add(
      HttpApiEndpoint.post("cancel", asPath(`${entry.path}/:task_id/cancel`))
        .setPath(TaskIdPath)
        .addSuccess(entry.result === "videos" ? VideoTaskResult : ImageTaskResult)
        .addError(TaskFinished)
        .annotate(OpenApi.Summary, "Cancel a task: it ends failed with error 499 Canceled; 409 when already finished")
    )
    .addError(TaskBadRequest)
    .addError(TaskForbidden)
    .addError(TaskNotFound)
    .addError(TaskRateLimited)
    .middleware(TaskAuthorization)
    .annotateContext(describe(entry))

const withOpenAiErrors = <G extends HttpApiGroup.HttpApiGroup.Any>(group: G, entry: ModelEntry.ModelEntry) =>
  (group as unknown as HttpApiGroup.HttpApiGroup<string, HttpApiEndpoint.HttpApiEndpoint.Any>)
    .addError(OpenAiBadRequest)
    .addError(OpenAiForbidden)
    .addError(OpenAiNotFound)
    .addError(OpenAiPayloadTooLarge)
    .addError(OpenAiUnsupportedMediaType)
    .addError(OpenAiRateLimited)
    .addError(OpenAiBadGateway)
    .addError(OpenAiUnavailable)
    .addError(OpenAiGatewayTimeout)
    .middleware(OpenAiAuthorization)
    .annotateContext(describe(entry)) as unknown as G

const createEndpoint = (entry: ModelEntry.ModelEntry) =>
  HttpApiEndpoint.post("create", asPath(entry.path))
    .setPayload(payloadOf(entry))
    .addSuccess(entry.kind === "chat" ? ChatCompletion : ModelResponse)
    .annotate(OpenApi.Summary, entry.summary)

/** The group of an E1-style entry: `create`, with the OpenAI error envelope. */
const chatGroup = (entry: ModelEntry.ModelEntry) => withOpenAiErrors(HttpApiGroup.make(entry.id).add(createEndpoint(entry)), entry)

/** The group of an E2-style entry: `create`, and `retrieve` of a stored or background response. */
const responsesGroup = (entry: ModelEntry.ModelEntry) =>
  withOpenAiErrors(
    HttpApiGroup.make(entry.id)
      .add(createEndpoint(entry))
      .add(
        HttpApiEndpoint.get("retrieve", asPath(`${entry.path}/:response_id`))
          .setPath(ResponseIdPath)
          .addSuccess(ModelResponse)
          .annotate(OpenApi.Summary, "Retrieve a stored or background response")
      )
      .add(
        HttpApiEndpoint.del("delete", asPath(`${entry.path}/:response_id`))
          .setPath(ResponseIdPath)
          .addSuccess(ResponseDeleted)
          .annotate(OpenApi.Summary, "Delete a stored response")
      )
      .add(
        HttpApiEndpoint.post("cancel", asPath(`${entry.path}/:response_id/cancel`))
          .setPath(ResponseIdPath)
          .addSuccess(ModelResponse)
          .annotate(OpenApi.Summary, "Cancel a background response")
      )
      .add(
        HttpApiEndpoint.get("inputItems", asPath(`${entry.path}/:response_id/input_items`))
          .setPath(ResponseIdPath)
          .setUrlParams(InputItemsQuery)
          .addSuccess(ResponseInputItems)
          .annotate(OpenApi.Summary, "List a stored response's input items")
      ),
    entry
  )

const openAiGroup = (entry: ModelEntry.ModelEntry) => (entry.kind === "responses" ? responsesGroup(entry) : chatGroup(entry))

/** A task entry's group. */
export type TaskGroup = ReturnType<typeof taskGroup>
/** A chat or responses entry's group. */
export type OpenAiGroup = ReturnType<typeof openAiGroup>
/** The group of the listing and webhooks routes. */
export type TasksGroup = typeof tasksGroup
/** The API of a list of entries; group names are entry ids (plus `tasks`). */
export type GenwayApi = HttpApi.HttpApi<"genway", TaskGroup | OpenAiGroup | TasksGroup, HttpApiError.HttpApiDecodeError>

/**
 * Builds the API of the given entries. Several chat entries share `/v1/chat/completions`: only
 * the first of a path is routed (the gateway picks the model from the body), the others would
 * duplicate the route.
 */
export const makeApi = (entries: ReadonlyArray<ModelEntry.ModelEntry>): GenwayApi => {
  let api: GenwayApi = HttpApi.make("genway").annotateContext(
    OpenApi.annotations({
      title: "Genway",
      version: "v1",
      description: "One base URL and one bearer scheme in front of many vendors' generative models."
    })
  )
  const paths = new Set<string>()
  api = api.add(tasksGroup)
  for (const entry of entries) {
    if (paths.has(entry.path)) continue
    paths.add(entry.path)
    api = api.add(ModelEntry.isTaskEntry(entry) ? taskGroup(entry) : openAiGroup(entry))
  }
  return api
}

const specs = new WeakMap<ReadonlyArray<ModelEntry.ModelEntry>, OpenApi.OpenAPISpec>()

/** The OpenAPI 3.1 document of the given entries (computed once per list). */
export const openApiSpec = (entries: ReadonlyArray<ModelEntry.ModelEntry>): OpenApi.OpenAPISpec => {
  let spec = specs.get(entries)
  if (spec === undefined) {
    spec = OpenApi.fromApi(makeApi(entries))
    specs.set(entries, spec)
  }
  return spec
}

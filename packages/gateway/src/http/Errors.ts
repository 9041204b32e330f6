/**
 * Errors as the client sees them (DESIGN.md §4). One error type with a status; its body takes the
 * shape of the surface the route belongs to: the task shape `{error: {code, title, detail, param}}`
 * or the OpenAI shape `{error: {message, type, param, code}}` that official clients turn into typed
 * errors. Nothing here includes a stack, a secret or another tenant's data.
 */
import { Errors } from "@genway/core"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Data from "effect/Data"

/** Which error shape a route answers with. */
export type Surface = "task" | "openai"

/** An error with its HTTP status. */
export class HttpError extends Data.TaggedError("HttpError")<{
  readonly status: number
  readonly title: string
  readonly detail: string
  readonly param?: string | undefined
  /** OpenAI `type`/`code` overrides, when a better one than the status default exists. */
  readonly openAiType?: string | undefined
  readonly openAiCode?: string | undefined
  readonly headers?: Readonly<Record<string, string>> | undefined
}> {}


const openAiTypes: Record<number, string> = {
  400: "invalid_request_error",
  401: "authentication_error",
  403: "permission_error",
  404: "not_found_error",
  409: "conflict_error",
  413: "invalid_request_error",
  415: "invalid_request_error",
  429: "rate_limit_error"
}

/** An error of `status` with the default title. */
export const httpError = (status: number, detail: string, extra: Partial<Omit<HttpError, "status" | "detail">> = {}) =>
  new HttpError({ status, title: extra.title ?? Errors.titleOf(status) ?? "Error", detail, ...extra })

/** A 400 for validation issues, naming the first field at fault and listing every problem. */
export const invalid = (issues: ReadonlyArray<Errors.Issue>) => {
  const first = issues[0] ?? { param: "body", message: "is invalid" }
  const detail = issues.map((i) => (i.param === "body" ? i.message : `${i.param}: ${i.message}`)).join("; ")
  return httpError(400, detail, { param: first.param })
}

/** The response for an error on a surface. */
export const render = (error: HttpError, surface: Surface): HttpServerResponse.HttpServerResponse => {
  const body = surface === "task"
    ? {
      error: {
        code: error.status,
        title: error.title,
        detail: error.detail,
        ...(error.param !== undefined ? { param: error.param } : {})
      }
    }
    : {
      error: {
        message: error.detail,
        type: error.openAiType ?? openAiTypes[error.status] ?? (error.status >= 500 ? "api_error" : "invalid_request_error"),
        param: error.param ?? null,
        code: error.openAiCode ?? null
      }
    }
  return HttpServerResponse.unsafeJson(body, {
    status: error.status,
    ...(error.headers !== undefined ? { headers: error.headers } : {})
  })
}

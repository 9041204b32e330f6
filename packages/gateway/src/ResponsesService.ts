/**
 * The upstream of model responses (E2): the live vendor adapter when its variables are set, else the sandbox.
 * Placeholder until the surface is implemented.
 */
import * as Context from "effect/Context"
import * as Layer from "effect/Layer"

/** The model responses (E2) upstream. */
export class ResponsesService extends Context.Tag("@genway/gateway/ResponsesService")<ResponsesService, { readonly mode: "live" | "sandbox" }>() {}

/** The service from the environment's settings. */
export const layer = Layer.succeed(ResponsesService, { mode: "sandbox" })

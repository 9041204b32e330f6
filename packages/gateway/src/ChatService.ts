/**
 * The upstream of chat completions (E1): the live vendor adapter when its variables are set, else the sandbox.
 * Placeholder until the surface is implemented.
 */
import * as Context from "effect/Context"
import * as Layer from "effect/Layer"

/** The chat completions (E1) upstream. */
export class ChatService extends Context.Tag("@genway/gateway/ChatService")<ChatService, { readonly mode: "live" | "sandbox" }>() {}

/** The service from the environment's settings. */
export const layer = Layer.succeed(ChatService, { mode: "sandbox" })

/**
 * The OpenAI-compatible responses (E2) surface. Not served yet: mounts no route.
 */
import type * as HttpRouter from "@effect/platform/HttpRouter"
import type { ModelEntry } from "@genway/core"

/** Adds this surface's routes for the entries of its kind. */
export const mount = <R>(router: HttpRouter.HttpRouter<never, R>, _entries: ReadonlyArray<ModelEntry.ModelEntry>) => router

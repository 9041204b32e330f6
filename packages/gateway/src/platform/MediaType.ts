/**
 * Media types the gateway reads by: what counts as JSON, for request bodies (415 otherwise) and
 * for vendors' answers (read whole by the upstream client, timed to their end by its
 * instrumentation).
 */

const json = /^application\/(?:[a-z0-9.+-]*\+)?json\s*(?:;|$)/i

/** Whether a `Content-Type` is JSON: `application/json` or `application/…+json`, with or without parameters. */
export const isJson = (contentType: string | undefined): boolean => contentType !== undefined && json.test(contentType.trim())

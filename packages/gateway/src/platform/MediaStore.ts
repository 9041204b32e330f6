/**
 * Result media, served by signed URLs that work without a bearer token and expire. The signing
 * secret is kept in the database so every replica signs alike. Large request payloads are spooled
 * here too (`inputs/`), so task rows stay small. The bytes live in a `Blobs` store: the data
 * directory by default, or an S3 bucket (`GATEWAY_MEDIA_STORE`, DESIGN.md §12) so replicas need no
 * shared disk. With the data directory and the embedded SQLite database, a small result held whole
 * in memory (a vendor's inline image, the sandbox's video) is kept in its row instead (`media.body`,
 * up to `GATEWAY_MEDIA_INLINE_BYTES`): it commits with the task's completion, and costs no file,
 * folder or rename (bench/JOURNAL.md, "Small results in their rows").
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { Media } from "@genway/core"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto"
import * as Blobs from "../media/Blobs.js"
import * as S3 from "../media/S3.js"
import { defaultMediaInlineBytes, Settings } from "./Config.js"

/** A media file could not be written or read. */
export const MediaError = Blobs.MediaError
export type MediaError = Blobs.MediaError


/** The file extension for a content type (`bin` when unknown). */
export const extensionFor: (contentType: string) => string = Media.extensionFor

const keyPattern = /^[0-9a-f-]{36}\/\d{1,3}\.(mp4|png|jpg|webp|bin)$/

/**
 * What a media lookup found: `file` names the object in the store, or `inline` holds its bytes
 * when they are kept in its row.
 */
export type MediaLookup =
  | { readonly _tag: "Found"; readonly file: string; readonly inline?: Uint8Array; readonly contentType: string; readonly bytes: number }
  | { readonly _tag: "Gone"; readonly deletedAt: number }
  | { readonly _tag: "NotFound" }

/** A media lookup that found the object. */
export type Found = Extract<MediaLookup, { readonly _tag: "Found" }>

/** A result object in the store, as `write` left it: recorded by `record`. */
export interface Written {
  readonly key: string
  readonly taskId: string
  readonly contentType: string
  readonly bytes: number
  readonly createdAt: number
  readonly expiresAt: number | null
  /** The object itself when it is kept in its row rather than in the store. */
  readonly body?: Uint8Array
}

/** The outcome of checking a signed URL. */
export type SignatureCheck = "valid" | "expired" | "invalid"

/**
 * The store over `blobs`; on SQLite a result whole in memory and at most `inlineUpTo` long is kept
 * in its row (0: every result goes to `blobs`).
 */
const make = (blobs: Blobs.Blobs, inlineUpTo: number) => Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const settings = yield* Settings
  // On the embedded database only: replicas sharing a PostgreSQL database may run the release
  // before this one during a rolling upgrade, and those read every result from the store.
  const inlineBytes = yield* sql.onDialectOrElse({ sqlite: () => Effect.succeed(inlineUpTo), orElse: () => Effect.succeed(0) })

  // One secret for all replicas: the first to start stores it, the others read it.
  const candidate = randomBytes(32).toString("base64url")
  yield* sql.onDialectOrElse({
    pg: () => sql`INSERT INTO settings (name, value) VALUES ('media_secret', ${candidate}) ON CONFLICT (name) DO NOTHING`,
    orElse: () => sql`INSERT OR IGNORE INTO settings (name, value) VALUES ('media_secret', ${candidate})`
  })
  const secretRows = yield* sql`SELECT value FROM settings WHERE name = 'media_secret'`
  const secret = Buffer.from(secretRows[0]!.value as string, "base64url")

  const sign = (key: string, expires: number) => createHmac("sha256", secret).update(`${key}\n${expires}`).digest("base64url")

  /** An absolute URL for `key`, valid for the configured TTL from now. */
  const signUrl = (key: string) =>
    Effect.map(Clock.currentTimeMillis, (now) => {
      const expires = Math.floor((now + settings.mediaUrlTtlMs) / 1000)
      return `${settings.publicUrl}/media/${key}?expires=${expires}&signature=${sign(key, expires)}`
    })

  /** Checks a presented signature and expiry (seconds since the epoch). */
  const checkSignature = (key: string, expires: string | undefined, signature: string | undefined) =>
    Effect.map(Clock.currentTimeMillis, (now): SignatureCheck => {
      if (!keyPattern.test(key) || expires === undefined || signature === undefined || !/^\d{1,12}$/.test(expires)) {
        return "invalid"
      }
      const expected = Buffer.from(sign(key, Number(expires)))
      const given = Buffer.from(signature)
      if (given.length !== expected.length || !timingSafeEqual(given, expected)) return "invalid"
      return Number(expires) * 1000 < now ? "expired" : "valid"
    })

  const fileOf = (key: string) => `media/${key}`

  /**
   * Writes one result object (readers see the old or the whole new one), not yet recorded: the
   * caller records it with `record`, in the transaction that publishes it (the worker: the one that
   * completes the task). Writing the same key again replaces it, so a retried mirror after a crash
   * is harmless. `body` is a stream, or the whole object when it is in memory already (see
   * `Blobs.put`). A body whole in memory and at most the inline size is not written anywhere
   * yet: `record` writes it in its row.
   */
  const write = <E>(
    taskId: string,
    index: number,
    contentType: string,
    body: Stream.Stream<Uint8Array, E> | Uint8Array,
    expiresAt: number | null
  ): Effect.Effect<Written, MediaError | E> =>
    Effect.gen(function*() {
      const key = `${taskId}/${index}.${extensionFor(contentType)}`
      const inline = body instanceof Uint8Array && body.length <= inlineBytes ? body : undefined
      const bytes = inline !== undefined ? inline.length : yield* blobs.put(fileOf(key), body)
      const createdAt = yield* Clock.currentTimeMillis
      return { key, taskId, contentType, bytes, createdAt, expiresAt, ...(inline !== undefined ? { body: inline } : {}) }
    })

  /**
   * Records written objects, with the bytes of those kept in their rows: run it in the caller's
   * transaction (a re-recorded key is replaced).
   */
  const record = (objects: ReadonlyArray<Written>) =>
    Effect.forEach(objects, (o) => {
      const body = o.body === undefined ? null : Buffer.from(o.body.buffer, o.body.byteOffset, o.body.byteLength)
      return sql.onDialectOrElse({
        pg: () =>
          sql`INSERT INTO media (key, task_id, content_type, bytes, created_at, expires_at, body)
            VALUES (${o.key}, ${o.taskId}, ${o.contentType}, ${o.bytes}, ${o.createdAt}, ${o.expiresAt}, ${body})
            ON CONFLICT (key) DO UPDATE SET content_type = EXCLUDED.content_type, bytes = EXCLUDED.bytes,
              created_at = EXCLUDED.created_at, expires_at = EXCLUDED.expires_at, deleted_at = NULL, body = EXCLUDED.body`,
        orElse: () =>
          sql`INSERT OR REPLACE INTO media (key, task_id, content_type, bytes, created_at, expires_at, body)
            VALUES (${o.key}, ${o.taskId}, ${o.contentType}, ${o.bytes}, ${o.createdAt}, ${o.expiresAt}, ${body})`
      })
    }, { discard: true })

  /** Finds a stored file for serving. */
  const lookup = (key: string) =>
    Effect.gen(function*() {
      if (!keyPattern.test(key)) return { _tag: "NotFound" } as MediaLookup
      const rows = yield* sql`SELECT content_type, bytes, deleted_at, body FROM media WHERE key = ${key}`
      const row = rows[0]
      if (row === undefined) return { _tag: "NotFound" } as MediaLookup
      if (row.deleted_at !== null) return { _tag: "Gone", deletedAt: Number(row.deleted_at) } as MediaLookup
      const found = { _tag: "Found", file: fileOf(key), contentType: row.content_type as string, bytes: Number(row.bytes) } as const
      return (row.body instanceof Uint8Array ? { ...found, inline: row.body } : found) as MediaLookup
    })

  /** A stream of a stored object (from its row or from the store), optionally a byte range (inclusive). */
  const read = (found: Found, range?: Blobs.ByteRange): Stream.Stream<Uint8Array, MediaError> =>
    found.inline === undefined
      ? blobs.get(found.file, range)
      : Stream.succeed(range === undefined ? found.inline : found.inline.subarray(range.start, range.end + 1))

  /** Deletes media whose retention has passed; the rows stay, marked deleted, so URLs answer 410. */
  const sweep = Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    const rows = yield* sql`SELECT key, body IS NOT NULL AS inline FROM media
      WHERE deleted_at IS NULL AND expires_at IS NOT NULL AND expires_at <= ${now} LIMIT 1000`
    for (const row of rows) {
      const key = row.key as string
      // An object that cannot be deleted now stays unmarked, so the next sweep tries again. One
      // kept in its row goes with the row's bytes.
      const removed = Boolean(row.inline) || (yield* blobs.remove(fileOf(key)).pipe(
        Effect.as(true),
        Effect.catchAll((e) => Effect.as(Effect.logWarning("media sweep: could not delete an object", e.message), false))
      ))
      if (!removed) continue
      yield* sql`UPDATE media SET deleted_at = ${now}, body = NULL WHERE key = ${key}`
    }
    return rows.length
  })

  /** Spools a large request value to the store and returns its reference. */
  const spool = (taskId: string, index: number, value: string) =>
    Effect.as(blobs.put(`inputs/${taskId}/${index}.txt`, Buffer.from(value, "utf8")), `${taskId}/${index}`)

  /** Reads a spooled value back. */
  const unspool = (ref: string) =>
    blobs.get(`inputs/${ref}.txt`).pipe(
      Stream.runCollect,
      Effect.map((chunks) => Buffer.concat(Array.from(chunks)).toString("utf8"))
    )

  /** Removes a task's spooled inputs (once it is finished). */
  const dropSpool = (taskId: string) =>
    blobs.removeAll(`inputs/${taskId}`).pipe(Effect.catchAll((e) => Effect.logWarning("could not remove spooled inputs", e.message)))

  /** Deletes stored media that no task will reference (results of a task canceled meanwhile). */
  const discard = (keys: ReadonlyArray<string>) =>
    Effect.forEach(keys, (key) =>
      Effect.zipRight(
        blobs.remove(fileOf(key)).pipe(Effect.catchAll((e) => Effect.logWarning("could not discard an object", e.message))),
        sql`DELETE FROM media WHERE key = ${key}`
      ), { discard: true })

  /** Whether the store answers (`/readyz`), and which kind it is. */
  const ping = blobs.ping
  const kind = blobs.kind

  return { signUrl, checkSignature, write, record, lookup, read, sweep, spool, unspool, dropSpool, discard, ping, kind } as const
})

/** The media store. */
export class MediaStore extends Context.Tag("@genway/gateway/MediaStore")<MediaStore, Effect.Effect.Success<ReturnType<typeof make>>>() {}

/**
 * The media store the settings name: the data directory, or the S3 bucket, which must be
 * reachable and writable for the gateway to start.
 */
export const layer = Layer.scoped(
  MediaStore,
  Effect.gen(function*() {
    const settings = yield* Settings
    const config = settings.mediaStore ?? { _tag: "local" as const }
    if (config._tag === "local") return yield* make(yield* Blobs.local(settings.dataDir), settings.mediaInlineBytes ?? defaultMediaInlineBytes)
    const blobs = yield* S3.make(config)
    yield* blobs.check.pipe(
      Effect.mapError((e) => new Blobs.MediaError(`GATEWAY_MEDIA_STORE ${blobs.location} is not usable: ${e.message}`))
    )
    yield* Effect.logInfo(`media store: ${blobs.location}`)
    // A bucket keeps every object, as the operator chose it for (DESIGN.md §12).
    return yield* make(blobs, 0)
  })
)

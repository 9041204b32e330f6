/**
 * Result media under `<data dir>/media`, served by signed URLs that work without a bearer token
 * and expire. The signing secret is kept in the database so every replica signs alike. Large
 * request payloads are spooled here too (`inputs/`), so task rows stay small.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { Media } from "@genway/core"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto"
import * as fs from "node:fs"
import * as fsp from "node:fs/promises"
import * as path from "node:path"
import { Readable } from "node:stream"
import { Settings } from "./Config.js"
import * as Files from "./Files.js"

/** A media file could not be written or read. */
export class MediaError extends Error {
  readonly _tag = "MediaError"
}


/** The file extension for a content type (`bin` when unknown). */
export const extensionFor: (contentType: string) => string = Media.extensionFor

const keyPattern = /^[0-9a-f-]{36}\/\d{1,3}\.(mp4|png|jpg|webp|bin)$/

/** What a media lookup found. */
export type MediaLookup =
  | { readonly _tag: "Found"; readonly file: string; readonly contentType: string; readonly bytes: number }
  | { readonly _tag: "Gone"; readonly deletedAt: number }
  | { readonly _tag: "NotFound" }

/** The outcome of checking a signed URL. */
export type SignatureCheck = "valid" | "expired" | "invalid"

const make = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const settings = yield* Settings
  const root = path.join(settings.dataDir, "media")
  const inputs = path.join(settings.dataDir, "inputs")
  yield* Effect.promise(() => Files.privateDirAsync(root))
  yield* Effect.promise(() => Files.privateDirAsync(inputs))

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

  const fileOf = (key: string) => path.join(root, ...key.split("/"))

  /**
   * Writes one result file atomically (temporary file, then rename) and records it. Writing the
   * same key again replaces it, so a retried mirror after a crash is harmless.
   */
  const put = <E>(
    taskId: string,
    index: number,
    contentType: string,
    body: Stream.Stream<Uint8Array, E>,
    expiresAt: number | null
  ) =>
    Effect.gen(function*() {
      const key = `${taskId}/${index}.${extensionFor(contentType)}`
      const file = fileOf(key)
      const tmp = `${file}.${randomBytes(4).toString("hex")}.tmp`
      yield* Effect.promise(() => Files.privateDirAsync(path.dirname(file)))
      const bytes = yield* Effect.acquireUseRelease(
        Effect.sync(() => {
          const out = fs.createWriteStream(tmp, { mode: Files.fileMode })
          // Write errors reach the callbacks below; without a listener Node would also throw them
          // as an unhandled 'error' event and end the process (a full disk must fail one task only).
          out.on("error", () => {})
          return out
        }),
        (out) =>
          body.pipe(
            Stream.runFoldEffect(0, (n, chunk) =>
              Effect.async<number, MediaError>((resume) => {
                out.write(chunk, (err) => resume(err ? Effect.fail(new MediaError(err.message)) : Effect.succeed(n + chunk.length)))
              })
            ),
            Effect.zipLeft(Effect.async<void, MediaError>((resume) => {
              out.end((err?: Error | null) => resume(err ? Effect.fail(new MediaError(err.message)) : Effect.void))
            }))
          ),
        (out, exit) =>
          exit._tag === "Success" ? Effect.void : Effect.promise(() => {
            out.destroy()
            return fsp.rm(tmp, { force: true })
          })
      )
      yield* Effect.tryPromise({ try: () => fsp.rename(tmp, file), catch: (e) => new MediaError(String(e)) })
      const now = yield* Clock.currentTimeMillis
      yield* sql.onDialectOrElse({
        pg: () =>
          sql`INSERT INTO media (key, task_id, content_type, bytes, created_at, expires_at)
            VALUES (${key}, ${taskId}, ${contentType}, ${bytes}, ${now}, ${expiresAt})
            ON CONFLICT (key) DO UPDATE SET content_type = EXCLUDED.content_type, bytes = EXCLUDED.bytes,
              created_at = EXCLUDED.created_at, expires_at = EXCLUDED.expires_at, deleted_at = NULL`,
        orElse: () =>
          sql`INSERT OR REPLACE INTO media (key, task_id, content_type, bytes, created_at, expires_at)
            VALUES (${key}, ${taskId}, ${contentType}, ${bytes}, ${now}, ${expiresAt})`
      })
      return key
    })

  /** Finds a stored file for serving. */
  const lookup = (key: string) =>
    Effect.gen(function*() {
      if (!keyPattern.test(key)) return { _tag: "NotFound" } as MediaLookup
      const rows = yield* sql`SELECT content_type, bytes, deleted_at FROM media WHERE key = ${key}`
      const row = rows[0]
      if (row === undefined) return { _tag: "NotFound" } as MediaLookup
      if (row.deleted_at !== null) return { _tag: "Gone", deletedAt: Number(row.deleted_at) } as MediaLookup
      return { _tag: "Found", file: fileOf(key), contentType: row.content_type as string, bytes: Number(row.bytes) } as MediaLookup
    })

  /** A readable stream of a stored file, optionally a byte range (inclusive). */
  const read = (file: string, range?: { readonly start: number; readonly end: number }) =>
    Stream.fromReadableStream(
      () => Readable.toWeb(fs.createReadStream(file, range ?? {})) as ReadableStream<Uint8Array>,
      (e) => new MediaError(String(e))
    )

  /** Deletes media whose retention has passed; the rows stay, marked deleted, so URLs answer 410. */
  const sweep = Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    const rows = yield* sql`SELECT key FROM media WHERE deleted_at IS NULL AND expires_at IS NOT NULL AND expires_at <= ${now} LIMIT 1000`
    for (const row of rows) {
      const key = row.key as string
      yield* Effect.promise(() => fsp.rm(fileOf(key), { force: true }))
      yield* sql`UPDATE media SET deleted_at = ${now} WHERE key = ${key}`
    }
    return rows.length
  })

  /** Spools a large request value to disk and returns its reference. */
  const spool = (taskId: string, index: number, value: string) =>
    Effect.tryPromise({
      try: async () => {
        const dir = path.join(inputs, taskId)
        await Files.privateDirAsync(dir)
        await fsp.writeFile(path.join(dir, `${index}.txt`), value, { mode: Files.fileMode })
        return `${taskId}/${index}`
      },
      catch: (e) => new MediaError(String(e))
    })

  /** Reads a spooled value back. */
  const unspool = (ref: string) =>
    Effect.tryPromise({
      try: () => fsp.readFile(path.join(inputs, ...ref.split("/")) + ".txt", "utf8"),
      catch: (e) => new MediaError(String(e))
    })

  /** Removes a task's spooled inputs (once it is finished). */
  const dropSpool = (taskId: string) => Effect.promise(() => fsp.rm(path.join(inputs, taskId), { recursive: true, force: true }))

  /** Deletes stored media that no task will reference (results of a task canceled meanwhile). */
  const discard = (keys: ReadonlyArray<string>) =>
    Effect.forEach(keys, (key) =>
      Effect.zipRight(
        Effect.promise(() => fsp.rm(fileOf(key), { force: true })),
        sql`DELETE FROM media WHERE key = ${key}`
      ), { discard: true })

  return { signUrl, checkSignature, put, lookup, read, sweep, spool, unspool, dropSpool, discard } as const
})

/** The media store. */
export class MediaStore extends Context.Tag("@genway/gateway/MediaStore")<MediaStore, Effect.Effect.Success<typeof make>>() {}

/** The media store under the data directory. */
export const layer = Layer.effect(MediaStore, make)

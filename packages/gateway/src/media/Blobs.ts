/**
 * Where the bytes of result media and spooled inputs live (DESIGN.md §12): a flat namespace of
 * objects named like `media/<task>/<n>.mp4` or `inputs/<task>/<n>.txt`. Two layers: the data
 * directory (the default) and an S3-compatible bucket (`media/S3.ts`). The database keeps what is
 * stored (the `media` table); this only moves bytes.
 */
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import { randomBytes } from "node:crypto"
import * as fs from "node:fs"
import * as fsp from "node:fs/promises"
import * as path from "node:path"
import { Readable } from "node:stream"
import * as Files from "../platform/Files.js"

/** A media object could not be written or read. */
export class MediaError extends Error {
  readonly _tag = "MediaError"
}

/** An inclusive byte range. */
export interface ByteRange {
  readonly start: number
  readonly end: number
}

/** A store of named objects. */
export interface Blobs {
  /** `local` or `s3`, for `/readyz` and the startup log. */
  readonly kind: "local" | "s3"
  /** Where, for the startup log (no credentials). */
  readonly location: string
  /**
   * Streams `body` into `name`, or writes it at once when it is the whole object in memory (a
   * result sent inline, a spooled input). Readers see the old object or the whole new one, never a
   * part: a cut write leaves nothing behind. Returns the bytes written.
   */
  readonly put: <E>(name: string, body: Stream.Stream<Uint8Array, E> | Uint8Array) => Effect.Effect<number, E | MediaError>
  /** The object's bytes (a range of them), read as the stream is pulled. */
  readonly get: (name: string, range?: ByteRange) => Stream.Stream<Uint8Array, MediaError>
  /** Deletes one object (missing is fine). */
  readonly remove: (name: string) => Effect.Effect<void, MediaError>
  /** Deletes every object under `dir/` (missing is fine). */
  readonly removeAll: (dir: string) => Effect.Effect<void, MediaError>
  /** Whether the store is reachable and writable now (startup: writes and deletes a probe). */
  readonly check: Effect.Effect<void, MediaError>
  /** Whether the store answers (`/readyz`: a cheap read, nothing written). */
  readonly ping: Effect.Effect<void, MediaError>
}

/** Objects as files under `root` (the data directory): `media/…` and `inputs/…`. */
export const local = (root: string): Effect.Effect<Blobs> =>
  Effect.gen(function*() {
    yield* Effect.promise(() => Files.privateDirAsync(path.join(root, "media")))
    yield* Effect.promise(() => Files.privateDirAsync(path.join(root, "inputs")))
    const fileOf = (name: string) => path.join(root, ...name.split("/"))
    /**
     * Where an object is written before it is renamed into place: a name no other write uses —
     * this store's random tag (other processes on the same directory have their own) and a count.
     */
    const tag = randomBytes(4).toString("hex")
    let written = 0
    const temporaryOf = (file: string) => `${file}.${tag}${(written++).toString(36)}.tmp`

    /**
     * Bytes in memory: the folder (made as the stream path makes it), the file written whole
     * under a temporary name, then renamed into place — one call each, no stream (a sandboxed task's result: 5 file calls and a
     * few steps rather than a write stream and an Effect `Stream`). Interrupted before its rename,
     * the write runs to its end and its temporary file is removed; it is not renamed into place.
     */
    const putBytes = (name: string, body: Uint8Array) =>
      Effect.async<number, MediaError>((resume) => {
        const file = fileOf(name)
        const tmp = temporaryOf(file)
        let cut = false
        const failed = (err: Error) => {
          fs.rm(tmp, { force: true }, () => resume(Effect.fail(new MediaError(err.message))))
        }
        Files.privateDirAsync(path.dirname(file)).then(() => {
          if (cut) return
          fs.writeFile(tmp, body, { mode: Files.fileMode }, (err) => {
            if (err) return failed(err)
            if (cut) return fs.rm(tmp, { force: true }, () => {})
            fs.rename(tmp, file, (err) => (err ? failed(err) : resume(Effect.succeed(body.length))))
          })
        }, (err: Error) => resume(Effect.fail(new MediaError(err.message))))
        return Effect.sync(() => {
          cut = true
        })
      })

    const put = <E>(name: string, body: Stream.Stream<Uint8Array, E> | Uint8Array) =>
      body instanceof Uint8Array ? putBytes(name, body) : Effect.gen(function*() {
        const file = fileOf(name)
        const tmp = temporaryOf(file)
        yield* Effect.tryPromise({ try: () => Files.privateDirAsync(path.dirname(file)), catch: (e) => new MediaError(String(e)) })
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
                })),
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
        return bytes
      })

    const get = (name: string, range?: ByteRange) =>
      Stream.fromReadableStream(
        () => Readable.toWeb(fs.createReadStream(fileOf(name), range ?? {})) as ReadableStream<Uint8Array>,
        (e) => new MediaError(String(e))
      )

    const remove = (name: string) =>
      Effect.tryPromise({ try: () => fsp.rm(fileOf(name), { force: true }), catch: (e) => new MediaError(String(e)) })

    const removeAll = (dir: string) =>
      Effect.tryPromise({ try: () => fsp.rm(fileOf(dir), { recursive: true, force: true }), catch: (e) => new MediaError(String(e)) })

    const check = Effect.tryPromise({
      try: () => fsp.access(path.join(root, "media"), fs.constants.W_OK),
      catch: () => new MediaError("the media directory is not writable")
    })

    return { kind: "local", location: root, put, get, remove, removeAll, check, ping: check } satisfies Blobs
  })

/**
 * Media objects in an S3-compatible bucket (AWS S3, MinIO, R2, GCS's S3 API), under a prefix
 * (DESIGN.md §12). Writes stream through multipart uploads (`@aws-sdk/lib-storage`), so at most
 * `queueSize × partSize` bytes of a result are held at once; a cut upload is aborted and leaves no
 * object, and a replaced object appears whole (S3 completes a multipart upload atomically).
 */
import type * as ClientS3 from "@aws-sdk/client-s3"
import type * as LibStorage from "@aws-sdk/lib-storage"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Stream from "effect/Stream"
import { randomBytes } from "node:crypto"
import type { Readable } from "node:stream"
import type { MediaStoreSettings } from "../platform/Config.js"
import { type Blobs, type ByteRange, MediaError } from "./Blobs.js"

/** Bytes per uploaded part (the S3 minimum is 5 MiB), and parts in flight at once. */
const partSize = 8 * 1024 * 1024
const queueSize = 2

/**
 * The AWS SDK, loaded when a bucket is configured: a gateway on its data directory does not load
 * it (some 5 MB of memory and a tenth of a second of start-up).
 */
const sdk = Effect.tryPromise({
  try: () => Promise.all([import("@aws-sdk/client-s3"), import("@aws-sdk/lib-storage")]),
  catch: (e) => new MediaError(`could not load the AWS SDK: ${e instanceof Error ? e.message : String(e)}`)
})

/** What the SDK says went wrong, without request ids or credentials. */
const describe = (what: string, e: unknown) => {
  const err = e as { name?: string; message?: string; $metadata?: { httpStatusCode?: number } }
  const status = err?.$metadata?.httpStatusCode
  // A HEAD answer has no body, so the SDK's message says nothing beyond the status.
  const message = err?.message && err.message !== "UnknownError" && err.message !== err.name ? `: ${err.message}` : ""
  return new MediaError(`${what}: ${err?.name ?? "Error"}${status !== undefined ? ` (HTTP ${status})` : ""}${message}`)
}

/** The bucket store; the client is destroyed with the scope. */
export const make = (settings: Extract<MediaStoreSettings, { _tag: "s3" }>) =>
  Effect.gen(function*() {
    const [{ DeleteObjectCommand, GetObjectCommand, HeadBucketCommand, ListObjectsV2Command, PutObjectCommand, S3Client }, { Upload }]: [
      typeof ClientS3,
      typeof LibStorage
    ] = yield* sdk
    const client = yield* Effect.acquireRelease(
      Effect.sync(() =>
        new S3Client({
          region: settings.region,
          forcePathStyle: settings.forcePathStyle,
          ...Option.match(settings.endpoint, { onNone: () => ({}), onSome: (endpoint) => ({ endpoint }) }),
          ...Option.match(settings.credentials, {
            onNone: () => ({}),
            onSome: (c) => ({ credentials: { accessKeyId: c.accessKeyId, secretAccessKey: Redacted.value(c.secretAccessKey) } })
          })
        })
      ),
      (c) => Effect.sync(() => c.destroy())
    )
    const bucket = settings.bucket
    const keyOf = (name: string) => (settings.prefix === "" ? name : `${settings.prefix}/${name}`)
    const send = <A>(what: string, f: (signal: AbortSignal) => Promise<A>) =>
      Effect.tryPromise({ try: f, catch: (e) => describe(what, e) })

    const put = <E>(name: string, source: Stream.Stream<Uint8Array, E> | Uint8Array) =>
      Effect.gen(function*() {
        const body = source instanceof Uint8Array ? Stream.succeed(source) : source
        // The body's own failure (a vendor download cut) is reported as itself, not as an S3 error.
        let failure: Option.Option<E> = Option.none()
        let bytes = 0
        const counted = body.pipe(
          Stream.tap((chunk) => Effect.sync(() => void (bytes += chunk.length))),
          Stream.tapError((e) => Effect.sync(() => void (failure = Option.some(e))))
        )
        const upload = new Upload({
          client,
          params: { Bucket: bucket, Key: keyOf(name), Body: Stream.toReadableStream(counted) },
          partSize,
          queueSize,
          leavePartsOnError: false
        })
        yield* Effect.tryPromise({
          try: () => upload.done(),
          catch: (e): E | MediaError => Option.isSome(failure) ? failure.value : describe(`writing ${name}`, e)
        }).pipe(Effect.onInterrupt(() => Effect.promise(() => upload.abort().catch(() => undefined))))
        return bytes
      })

    const get = (name: string, range?: ByteRange) =>
      Stream.unwrap(
        Effect.map(
          send(`reading ${name}`, (signal) =>
            client.send(
              new GetObjectCommand({
                Bucket: bucket,
                Key: keyOf(name),
                ...(range === undefined ? {} : { Range: `bytes=${range.start}-${range.end}` })
              }),
              { abortSignal: signal }
            )),
          (out) =>
            out.Body === undefined
              ? Stream.empty
              : Stream.fromAsyncIterable(out.Body as Readable, (e) => describe(`reading ${name}`, e))
        )
      )

    const remove = (name: string) =>
      Effect.asVoid(send(`deleting ${name}`, (signal) => client.send(new DeleteObjectCommand({ Bucket: bucket, Key: keyOf(name) }), { abortSignal: signal })))

    const removeAll = (dir: string) =>
      Effect.gen(function*() {
        let token: string | undefined = undefined
        do {
          const page = yield* send(`listing ${dir}`, (signal) =>
            client.send(
              new ListObjectsV2Command({ Bucket: bucket, Prefix: `${keyOf(dir)}/`, ContinuationToken: token }),
              { abortSignal: signal }
            ))
          for (const object of page.Contents ?? []) {
            if (object.Key !== undefined) {
              const key = object.Key
              yield* send(`deleting ${key}`, (signal) => client.send(new DeleteObjectCommand({ Bucket: bucket, Key: key }), { abortSignal: signal }))
            }
          }
          token = page.IsTruncated === true ? page.NextContinuationToken : undefined
        } while (token !== undefined)
      })

    const ping = send(`bucket ${bucket}`, (signal) => client.send(new HeadBucketCommand({ Bucket: bucket }), { abortSignal: signal })).pipe(
      Effect.asVoid,
      Effect.timeoutFail({ duration: "5 seconds", onTimeout: () => new MediaError(`bucket ${bucket} did not answer within 5 s`) })
    )

    /** Reachable (the bucket answers) and writable (a probe object can be written and deleted). */
    const check = Effect.gen(function*() {
      yield* ping
      const probe = keyOf(`.genway-probe-${randomBytes(6).toString("hex")}`)
      yield* send(`writing to bucket ${bucket}`, (signal) =>
        client.send(new PutObjectCommand({ Bucket: bucket, Key: probe, Body: "ok" }), { abortSignal: signal }))
      yield* send(`deleting from bucket ${bucket}`, (signal) =>
        client.send(new DeleteObjectCommand({ Bucket: bucket, Key: probe }), { abortSignal: signal }))
    }).pipe(Effect.timeoutFail({ duration: "10 seconds", onTimeout: () => new MediaError(`bucket ${bucket} did not answer within 10 s`) }))

    return {
      kind: "s3",
      location: `s3://${bucket}/${settings.prefix}`,
      put,
      get,
      remove,
      removeAll,
      check,
      ping
    } satisfies Blobs
  })

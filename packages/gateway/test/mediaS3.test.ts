/**
 * Media in object storage (DESIGN.md §12) against an in-process S3 server (`s3rver`): results and
 * spooled inputs land in the bucket under the prefix, the gateway's signed URLs stream them back
 * (Range, HEAD, 410 after retention), nothing media-like is written to the data directory, and two
 * replicas with separate data directories on one PostgreSQL schema serve each other's tasks.
 */
import { GetObjectCommand, ListObjectsV2Command, S3Client } from "@aws-sdk/client-s3"
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import { SampleMedia, type VendorAdapter } from "@genway/core"
import { Registry } from "@genway/registry"
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import * as Cause from "effect/Cause"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/TestClock"
import * as fs from "node:fs"
import * as path from "node:path"
import S3rver from "s3rver"
import * as Config from "../src/platform/Config.js"
import type { MediaStoreSettings } from "../src/platform/Config.js"
import * as S3 from "../src/media/S3.js"
import { MediaStore } from "../src/platform/MediaStore.js"
import * as TaskBodies from "../src/tasks/Bodies.js"
import * as Harness from "./harness.js"
import * as Pg from "./pg.js"

const bucket = "genway-media"
let server: S3rver | undefined
let endpoint = ""

beforeAll(async () => {
  server = new S3rver({
    address: "127.0.0.1",
    port: 0,
    silent: true,
    directory: Harness.tempDir(),
    configureBuckets: [{ name: bucket, configs: [] }]
  })
  const address = await server.run()
  endpoint = `http://127.0.0.1:${address.port}`
})

afterAll(async () => {
  await server?.close()
})

/** The store settings for one test: its own prefix in the shared bucket. */
const s3 = (prefix: string, inBucket = bucket): MediaStoreSettings => ({
  _tag: "s3",
  bucket: inBucket,
  prefix,
  endpoint: Option.some(endpoint),
  forcePathStyle: true,
  region: "us-east-1",
  credentials: Option.some({ accessKeyId: "S3RVER", secretAccessKey: Redacted.make("S3RVER") })
})

const client = () =>
  new S3Client({
    endpoint,
    forcePathStyle: true,
    region: "us-east-1",
    credentials: { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" }
  })

/** Every object key under `prefix/`. */
const listKeys = (prefix: string) =>
  Effect.promise(async () => {
    const out = await client().send(new ListObjectsV2Command({ Bucket: bucket, Prefix: `${prefix}/` }))
    return (out.Contents ?? []).map((o) => o.Key!).sort()
  })

const objectBytes = (key: string) =>
  Effect.promise(async () => {
    const out = await client().send(new GetObjectCommand({ Bucket: bucket, Key: key }))
    return new Uint8Array(await out.Body!.transformToByteArray())
  })

/** Every file below `dir` (relative paths). */
const filesUnder = (dir: string): Array<string> =>
  fs.readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((d) => d.isFile())
    .map((d) => path.relative(dir, path.join(d.parentPath, d.name)))

/** No media directories, no media or spooled-input files in a data directory. */
const assertNoMedia = (dataDir: string) => {
  assert.isFalse(fs.existsSync(path.join(dataDir, "media")), "no media/ in the data dir")
  assert.isFalse(fs.existsSync(path.join(dataDir, "inputs")), "no inputs/ in the data dir")
  const mediaLike = filesUnder(dataDir).filter((f) => /\.(mp4|png|jpg|webp|bin|txt|tmp)$/.test(f))
  assert.deepStrictEqual(mediaLike, [])
}

/** A GET (or HEAD) of a path on the gateway in context, without a token. */
const fetchPath = (pathAndQuery: string, headers: Record<string, string> = {}, method: "GET" | "HEAD" = "GET") =>
  Effect.gen(function*() {
    const http = yield* HttpClient.HttpClient
    const request = (method === "GET" ? HttpClientRequest.get(pathAndQuery) : HttpClientRequest.head(pathAndQuery)).pipe(
      HttpClientRequest.setHeaders(headers)
    )
    const r = yield* http.execute(request)
    const bytes = method === "GET" ? new Uint8Array(yield* r.arrayBuffer) : new Uint8Array()
    return { status: r.status, headers: r.headers, bytes }
  }).pipe(Effect.scoped)

/** The signed media URLs in a task body (path and query). */
const mediaUrls = (body: unknown): Array<string> =>
  JSON.stringify(body).match(/https?:\/\/[^"]+\/media\/[^"]+/g)!.map((u) => {
    const url = new URL(u)
    return url.pathname + url.search
  })

const e4 = Registry.entries.find((e) => e.endpoints.includes("E4"))!
const e8 = Registry.entries.find((e) => e.endpoints.includes("E8"))!
const g1 = Registry.entries.find((e) => e.endpoints.includes("G1"))!

/** A stand-in for E8's vendor: records the image it was sent and answers with a PNG. */
const resultPng = SampleMedia.png(64, 48, 3)
const seenImages: Array<string> = []
const imageVendor: VendorAdapter.VendorAdapter = {
  vendor: e8.vendor,
  mode: "live",
  submit: (task) =>
    Effect.sync(() => {
      seenImages.push(String(task.body.image))
      return { ref: `job-${task.taskId}`, status: "pending" as const }
    }),
  poll: () => Effect.succeed({ _tag: "Completed", media: [{ _tag: "Bytes", bytes: resultPng, contentType: "image/png" }] }),
  download: (source) =>
    Effect.succeed({
      contentType: source._tag === "Bytes" ? source.contentType : "image/png",
      body: Stream.make(source._tag === "Bytes" ? source.bytes : resultPng)
    })
}
const live = Effect.succeed(new Map([[e8.vendor, imageVendor]]))

const bigImage = () => {
  const image = Buffer.from(SampleMedia.png(1400, 1400, 11)).toString("base64")
  assert.isAbove(image.length, TaskBodies.spoolThreshold)
  return image
}

/** Submits a task through the gateway in context and returns its id. */
const complete = (entryPath: string, body: unknown) =>
  Effect.gen(function*() {
    const created = yield* Harness.send(Harness.post(entryPath, body))
    assert.strictEqual(created.status, 202, created.text)
    return created.json.task_info.id as string
  })

describe("media in an S3 bucket (s3rver)", () => {
  it.scoped("video and image results land under the prefix and download through signed URLs; retention deletes them", () =>
    Effect.gen(function*() {
      const prefix = `run-${Date.now().toString(36)}/one`
      const dataDir = Harness.tempDir()
      const ctx = yield* Layer.build(Harness.layer({ live, settings: { dataDir, mediaStore: s3(prefix) } }))
      yield* Effect.gen(function*() {
        const ready = yield* fetchPath("/readyz")
        assert.strictEqual(ready.status, 200)
        assert.strictEqual(JSON.parse(new TextDecoder().decode(ready.bytes)).media_store, "s3")

        const video = yield* complete(g1.path, { prompt: "a timelapse" })
        const image = yield* complete(e8.path, { prompt: "edit", image: bigImage() })
        // The inline image was spooled to the bucket, not to the data directory.
        assert.lengthOf((yield* listKeys(prefix)).filter((k) => k.startsWith(`${prefix}/inputs/${image}/`)), 1)
        yield* Harness.work
        yield* TestClock.adjust("2 seconds")
        yield* Harness.work
        yield* TestClock.adjust("10 seconds")
        yield* Harness.work
        assert.strictEqual(seenImages.at(-1)!.length, bigImage().length)

        const videoTask = yield* Harness.send(Harness.get(`${g1.path}/${video}`))
        assert.strictEqual(videoTask.json.task_info.status, "completed", videoTask.text)
        const imageTask = yield* Harness.send(Harness.get(`${e8.path}/${image}`))
        assert.strictEqual(imageTask.json.task_info.status, "completed", imageTask.text)

        const keys = yield* listKeys(prefix)
        assert.include(keys, `${prefix}/media/${video}/0.mp4`)
        assert.include(keys, `${prefix}/media/${image}/0.png`)
        // Finished tasks drop their spooled inputs.
        assert.deepStrictEqual(keys.filter((k) => k.includes("/inputs/")), [])

        const videoUrl = mediaUrls(videoTask.json)[0]!
        const stored = yield* objectBytes(`${prefix}/media/${video}/0.mp4`)
        assert.isAbove(stored.length, 16)
        const whole = yield* fetchPath(videoUrl)
        assert.strictEqual(whole.status, 200)
        assert.strictEqual(whole.headers["content-type"], "video/mp4")
        assert.deepStrictEqual(whole.bytes, stored)
        const ranged = yield* fetchPath(videoUrl, { range: "bytes=4-11" })
        assert.strictEqual(ranged.status, 206)
        assert.strictEqual(ranged.headers["content-range"], `bytes 4-11/${stored.length}`)
        assert.deepStrictEqual(ranged.bytes, stored.slice(4, 12))
        const tail = yield* fetchPath(videoUrl, { range: "bytes=-5" })
        assert.deepStrictEqual(tail.bytes, stored.slice(stored.length - 5))
        const head = yield* fetchPath(videoUrl, {}, "HEAD")
        assert.strictEqual(head.status, 200)
        assert.strictEqual(head.headers["content-length"], String(stored.length))
        const tampered = videoUrl.replace(/signature=./, (m) => (m.endsWith("A") ? m.slice(0, -1) + "B" : m.slice(0, -1) + "A"))
        assert.strictEqual((yield* fetchPath(tampered)).status, 403)

        const imageDownload = yield* fetchPath(mediaUrls(imageTask.json)[0]!)
        assert.strictEqual(imageDownload.status, 200)
        assert.deepStrictEqual(imageDownload.bytes, resultPng)

        assertNoMedia(dataDir)

        // Retention (2 days for G1): the object is deleted and the URL answers 410.
        yield* TestClock.adjust("49 hours")
        yield* Effect.flatMap(MediaStore, (m) => m.sweep)
        assert.notInclude(yield* listKeys(prefix), `${prefix}/media/${video}/0.mp4`)
        const later = yield* Harness.send(Harness.get(`${g1.path}/${video}`))
        const gone = yield* fetchPath(mediaUrls(later.json)[0]!)
        assert.strictEqual(gone.status, 410)
        // Media without a retention stays.
        assert.include(yield* listKeys(prefix), `${prefix}/media/${image}/0.png`)
      }).pipe(Effect.provide(ctx))
    }), 60_000)

  it.scoped("a large result streams in as a multipart upload; a cut stream leaves no object and reports its own error", () =>
    Effect.gen(function*() {
      const prefix = `run-${Date.now().toString(36)}/multipart`
      const settings = s3(prefix)
      if (settings._tag !== "s3") throw new Error("unreachable")
      const blobs = yield* S3.make(settings)
      const mib = new Uint8Array(1024 * 1024).map((_, i) => i % 251)
      const body = Stream.range(1, 20).pipe(Stream.map(() => mib))
      const bytes = yield* blobs.put("media/big.bin", body)
      assert.strictEqual(bytes, 20 * mib.length)
      const stored = yield* objectBytes(`${prefix}/media/big.bin`)
      assert.strictEqual(stored.length, 20 * mib.length)
      assert.deepStrictEqual(stored.slice(mib.length * 19, mib.length * 19 + 8), mib.slice(0, 8))
      const part = yield* Stream.runCollect(blobs.get("media/big.bin", { start: mib.length * 3 + 1, end: mib.length * 3 + 4 }))
      assert.deepStrictEqual(Buffer.concat(Array.from(part)), Buffer.from(mib.slice(1, 5)))

      const cut = Stream.concat(Stream.range(1, 12).pipe(Stream.map(() => mib)), Stream.fail("vendor connection reset" as const))
      const failed = yield* Effect.flip(blobs.put("media/cut.bin", cut))
      assert.strictEqual(failed, "vendor connection reset")
      assert.notInclude(yield* listKeys(prefix), `${prefix}/media/cut.bin`)
      yield* blobs.removeAll("media")
      assert.deepStrictEqual(yield* listKeys(prefix), [])
    }), 60_000)

  it.effect("GATEWAY_MEDIA_STORE and the S3 variables are read and checked", () =>
    Effect.gen(function*() {
      const read = (vars: Record<string, string>) =>
        Effect.either(Effect.withConfigProvider(Config.settings, ConfigProvider.fromMap(new Map(Object.entries(vars)))))
      const unset = yield* read({})
      assert.deepStrictEqual(unset._tag === "Right" && unset.right.mediaStore, { _tag: "local" })
      const set = yield* read({
        GATEWAY_MEDIA_STORE: "s3://media-bucket/genway/prod/",
        GATEWAY_S3_ENDPOINT: "http://minio:9000",
        GATEWAY_S3_FORCE_PATH_STYLE: "1",
        AWS_REGION: "eu-west-1",
        AWS_ACCESS_KEY_ID: "id",
        AWS_SECRET_ACCESS_KEY: "hunter2-not-logged"
      })
      assert.strictEqual(set._tag, "Right")
      const store = set._tag === "Right" ? set.right.mediaStore : undefined
      assert.strictEqual(store?._tag, "s3")
      if (store?._tag === "s3") {
        assert.strictEqual(store.bucket, "media-bucket")
        assert.strictEqual(store.prefix, "genway/prod")
        assert.deepStrictEqual(store.endpoint, Option.some("http://minio:9000"))
        assert.isTrue(store.forcePathStyle)
        assert.strictEqual(store.region, "eu-west-1")
        assert.isTrue(Option.isSome(store.credentials))
        assert.notInclude(String(store.credentials), "hunter2")
      }
      const bad = yield* read({ GATEWAY_MEDIA_STORE: "/var/media" })
      assert.strictEqual(bad._tag, "Left")
      assert.include(String(bad._tag === "Left" ? bad.left : ""), "GATEWAY_MEDIA_STORE must be s3://<bucket>/<prefix>")
    }))

  it.scoped("an unreachable bucket stops startup with the store in the message", () =>
    Effect.gen(function*() {
      const exit = yield* Effect.exit(Layer.build(Harness.layer({ settings: { mediaStore: s3("x", "no-such-bucket") } })))
      assert.strictEqual(exit._tag, "Failure")
      if (exit._tag === "Failure") assert.match(Cause.pretty(exit.cause), /GATEWAY_MEDIA_STORE s3:\/\/no-such-bucket\/x is not usable/)
    }), 30_000)
})

describe.skipIf(!Pg.available("mediaS3.test.ts"))("two replicas, one bucket, one PostgreSQL schema", () => {
  it.scoped("each serves the other's tasks and media, inline-image inputs included", () =>
    Effect.gen(function*() {
      const { schema } = yield* Pg.privateSchema
      const scoped = new URL(Pg.url!)
      scoped.searchParams.set("options", `-c search_path=${schema}`)
      const prefix = `run-${Date.now().toString(36)}/two`
      const dirA = Harness.tempDir()
      const dirB = Harness.tempDir()
      const settings = (dataDir: string) => ({
        dataDir,
        databaseUrl: Option.some(Redacted.make(scoped.toString())),
        mediaStore: s3(prefix)
      })
      const a = yield* Layer.build(Harness.layer({ live, settings: settings(dirA) }))
      const b = yield* Layer.build(Harness.layer({ live, settings: settings(dirB) }))
      const onA = <X, E>(effect: Effect.Effect<X, E, any>) => Effect.provide(effect, a) as Effect.Effect<X, E>
      const onB = <X, E>(effect: Effect.Effect<X, E, any>) => Effect.provide(effect, b) as Effect.Effect<X, E>

      // A accepts both (the image spooled to the bucket); B does all the work.
      const image = bigImage()
      const imageId = yield* onA(complete(e8.path, { prompt: "edit", image }))
      const videoId = yield* onA(complete(e4.path, { prompt: "a cat" }))
      seenImages.length = 0
      yield* onB(Harness.work)
      yield* TestClock.adjust("2 seconds")
      yield* onB(Harness.work)
      yield* TestClock.adjust("10 seconds")
      yield* onB(Harness.work)
      assert.deepStrictEqual(seenImages, [image], "B restored A's spooled image")

      for (const [entryPath, id] of [[e8.path, imageId], [e4.path, videoId]] as const) {
        const fromA = yield* onA(Harness.send(Harness.get(`${entryPath}/${id}`)))
        assert.strictEqual(fromA.json.task_info.status, "completed", fromA.text)
        const url = mediaUrls(fromA.json)[0]!
        // The URL A signs downloads from both replicas, alike.
        const viaA = yield* onA(fetchPath(url))
        const viaB = yield* onB(fetchPath(url))
        assert.strictEqual(viaA.status, 200)
        assert.strictEqual(viaB.status, 200)
        assert.deepStrictEqual(viaA.bytes, viaB.bytes)
        const rangedB = yield* onB(fetchPath(url, { range: "bytes=0-3" }))
        assert.strictEqual(rangedB.status, 206)
        assert.deepStrictEqual(rangedB.bytes, viaA.bytes.slice(0, 4))
      }
      assert.deepStrictEqual((yield* onA(fetchPath(mediaUrls((yield* onA(Harness.send(Harness.get(`${e8.path}/${imageId}`)))).json)[0]!))).bytes, resultPng)
      assertNoMedia(dirA)
      assertNoMedia(dirB)
      // Both see the same store.
      const [ra, rb] = [yield* onA(fetchPath("/readyz")), yield* onB(fetchPath("/readyz"))]
      assert.strictEqual(ra.status, 200)
      assert.strictEqual(rb.status, 200)
    }), 90_000)
})

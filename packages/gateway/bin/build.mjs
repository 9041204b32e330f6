// The compiled gateway: one JavaScript module, `genway.mjs`, built from `src/main.ts` by esbuild into
// a build cache (never published: its imports name this install's files). The cache is this
// package's `node_modules/.cache/genway`; where that cannot be written (a read-only install), the
// user's cache directory (`$XDG_CACHE_HOME` or `~/.cache`, under `genway/<install>`).
//
// The gateway's own sources, the workspace packages it runs (`@genway/*`, TypeScript) and Effect
// (`effect`, `@effect/*`: ES modules, one copy for all of them) are compiled into the module, only
// the parts the gateway uses; every other package stays where the install put it and is imported
// from there (by its resolved path, so a workspace package's own dependency resolves as it would
// from that package). Running this module instead of the sources through `tsx` saves the
// compiler's memory and work in every gateway process; compiling Effect in rather than loading its
// hundreds of modules saves start-up time and memory (bench/JOURNAL.md, "The compiled gateway",
// "Effect compiled in").
//
// Beside the module, `genway.inputs.json` records what the build read: the install's directory and,
// for every source compiled in (esbuild's record), its package's manifest and TypeScript
// configuration, the lockfile and this file, the modification time and size it had. `ensureBuilt()`
// uses a module whose record still holds and builds otherwise (about 2 s; the check takes a few
// ms). `node bin/build.mjs` builds unconditionally.
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"

const gatewayDir = fileURLToPath(new URL("..", import.meta.url))
const packagesDir = path.dirname(gatewayDir)
const rootDir = path.dirname(packagesDir)

/** The caches the compiled gateway may be in, in order: this package's, then the user's. */
const cacheDirs = () => {
  const install = createHash("sha256").update(gatewayDir).digest("hex").slice(0, 16)
  const userCache = process.env.XDG_CACHE_HOME !== undefined && process.env.XDG_CACHE_HOME !== ""
    ? process.env.XDG_CACHE_HOME
    : path.join(os.homedir(), ".cache")
  return [path.join(gatewayDir, "node_modules", ".cache", "genway"), path.join(userCache, "genway", install)]
}

const moduleIn = (dir) => path.join(dir, "genway.mjs")
const recordIn = (dir) => path.join(dir, "genway.inputs.json")

const isWorkspacePackage = (specifier) => specifier === "@genway" || specifier.startsWith("@genway/")

/** Effect and its packages: compiled in (every importer, ours or an `@effect/*` package, gets the same copy). */
const isEffect = (specifier) => specifier === "effect" || specifier.startsWith("effect/") || specifier.startsWith("@effect/")

/** Third-party imports other than Effect stay imports, of the file the importing package would load. */
const externals = {
  name: "genway-externals",
  setup(build) {
    build.onResolve({ filter: /^[^./]/ }, async (args) => {
      if (args.pluginData === "resolving" || isWorkspacePackage(args.path) || isEffect(args.path)) return undefined
      if (args.path.startsWith("node:")) return { path: args.path, external: true }
      const resolved = await build.resolve(args.path, { kind: args.kind, resolveDir: args.resolveDir, pluginData: "resolving" })
      if (resolved.errors.length > 0) return { errors: resolved.errors }
      // A Node built-in named without `node:` resolves to itself.
      if (!path.isAbsolute(resolved.path)) return { path: resolved.path, external: true }
      return { path: pathToFileURL(resolved.path).href, external: true }
    })
  }
}

/** The directory of the package a source file belongs to (where its `package.json` is). */
const packageOf = (file) => {
  for (let dir = path.dirname(file); dir !== path.dirname(dir); dir = path.dirname(dir)) {
    if (fs.existsSync(path.join(dir, "package.json"))) return dir
  }
  return undefined
}

/** A file's modification time and size, or `null` when it is gone. */
const stamp = (file) => {
  try {
    const stat = fs.statSync(file)
    return [stat.mtimeMs, stat.size]
  } catch {
    return null
  }
}

/**
 * The first cache directory that can be written, made if missing: this package's readable by all
 * (an image built as one user runs as another), the user's own for that user only.
 */
const writableCache = () => {
  for (const [i, dir] of cacheDirs().entries()) {
    try {
      fs.mkdirSync(dir, { recursive: true, ...(i > 0 ? { mode: 0o700 } : {}) })
      fs.accessSync(dir, fs.constants.W_OK)
      return dir
    } catch {
      // the next one
    }
  }
  throw new Error(
    `cannot write the compiled gateway to ${cacheDirs().join(" or ")}: run \`node bin/build.mjs\` (in ${gatewayDir}) as the user who installed it, or set GENWAY_FROM_SOURCE=1`
  )
}

/**
 * Builds the compiled gateway now and returns its path (atomically: concurrent builds each write
 * their own files, then rename them into place).
 */
export const build = async () => {
  const dir = writableCache()
  const esbuild = await import("esbuild")
  const started = Date.now()
  const temporary = path.join(dir, `genway.mjs.${process.pid}.${started}.tmp`)
  try {
    const result = await esbuild.build({
      entryPoints: [path.join(gatewayDir, "src", "main.ts")],
      outfile: temporary,
      bundle: true,
      platform: "node",
      format: "esm",
      target: "node20",
      // Names as bundling leaves them (it renames clashing ones, `make` → `make34`): keeping the
      // written ones wraps every function and class, inner ones on each call, in a `__name` call
      // (0.5–1.2 % of a loaded gateway's CPU profile; bench/JOURNAL.md, "Effect compiled in"). Nothing reads a
      // function's or class's name: errors carry their tag and Effect names its error classes itself.
      keepNames: false,
      legalComments: "none",
      logLevel: "warning",
      metafile: true,
      absWorkingDir: gatewayDir,
      // The SQLite driver's entry, for the answers' commit thread to load (src/platform/AnswerWriter.ts):
      // the module may live in the user's cache, where nothing resolves from its own location.
      define: { GENWAY_SQLITE_DRIVER: JSON.stringify(createRequire(path.join(gatewayDir, "src", "platform", "Sqlite.ts")).resolve("better-sqlite3")) },
      plugins: [externals]
    })
    // Every source compiled in; its package's manifest and TypeScript configuration; the lockfile and this file.
    const sources = Object.keys(result.metafile.inputs).map((file) => path.resolve(gatewayDir, file))
    const packages = new Set(sources.map(packageOf).filter((p) => p !== undefined))
    const inputs = [
      ...sources,
      ...[...packages].flatMap((p) => [path.join(p, "package.json"), path.join(p, "tsconfig.json")]),
      path.join(rootDir, "tsconfig.base.json"),
      path.join(rootDir, "pnpm-lock.yaml"),
      fileURLToPath(import.meta.url)
    ]
    // A file changed while the build ran is recorded as unseen, so the next start builds again.
    const record = {
      gatewayDir,
      inputs: inputs.map((file) => {
        const s = stamp(file)
        return [file, s !== null && s[0] >= started ? [-1, -1] : s]
      })
    }
    fs.writeFileSync(`${temporary}.inputs`, JSON.stringify(record))
    fs.renameSync(temporary, moduleIn(dir))
    fs.renameSync(`${temporary}.inputs`, recordIn(dir))
    return moduleIn(dir)
  } finally {
    fs.rmSync(temporary, { force: true })
    fs.rmSync(`${temporary}.inputs`, { force: true })
    // esbuild's service process would otherwise live as long as the gateway.
    await esbuild.stop()
  }
}

/** Whether the module in `dir` was built from this install's files as they are now. */
const isFresh = (dir) => {
  try {
    if (!fs.existsSync(moduleIn(dir))) return false
    const record = JSON.parse(fs.readFileSync(recordIn(dir), "utf8"))
    if (record.gatewayDir !== gatewayDir || !Array.isArray(record.inputs)) return false
    return record.inputs.every(([file, seen]) => JSON.stringify(stamp(file)) === JSON.stringify(seen))
  } catch {
    return false
  }
}

/** The build this process is running, if any. */
let building

/** The compiled gateway's path: a module built from the files as they are now, building one if needed. */
export const ensureBuilt = async () => {
  const fresh = cacheDirs().find(isFresh)
  if (fresh !== undefined) return moduleIn(fresh)
  // One build per process at a time: callers that ask together (a bench starting several gateways
  // at once) share it, rather than racing on one temporary file and on esbuild's one service.
  building ??= build().finally(() => {
    building = undefined
  })
  return building
}

if (process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const file = await build()
  console.log(`built ${path.relative(process.cwd(), file)}`)
}

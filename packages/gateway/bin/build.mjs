// The compiled gateway: one JavaScript module, `node_modules/.cache/genway/genway.mjs` of this
// package, built from `src/main.ts` by esbuild (a build cache, never published: its imports name
// this install's files).
//
// The gateway's own sources and the workspace packages it runs (`@genway/*`, TypeScript) are
// compiled into the module; every other package stays where the install put it and is imported
// from there (by its resolved path, so a workspace package's own dependency resolves as it would
// from that package). Running this module instead of the sources through `tsx` saves the
// compiler's memory and work in every gateway process (README, "Benchmarks").
//
// `ensureBuilt()` builds when the module is missing or older than any of its inputs: the sources
// the last build compiled in (esbuild's record), their packages' manifests, the lockfile and this
// file (a build takes about 2 s, the check a few ms). `node bin/build.mjs` builds unconditionally.
import * as esbuild from "esbuild"
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"

const gatewayDir = fileURLToPath(new URL("..", import.meta.url))
const packagesDir = path.dirname(gatewayDir)
const rootDir = path.dirname(packagesDir)

/** Where the compiled gateway is written: this package's build cache, else (read-only install) a temporary directory. */
const cacheDir = () => {
  const own = path.join(gatewayDir, "node_modules", ".cache", "genway")
  try {
    fs.mkdirSync(own, { recursive: true })
    fs.accessSync(own, fs.constants.W_OK)
    return own
  } catch {
    const key = createHash("sha256").update(gatewayDir).digest("hex").slice(0, 12)
    const temporary = path.join(os.tmpdir(), `genway-build-${key}`)
    fs.mkdirSync(temporary, { recursive: true })
    return temporary
  }
}

/** The compiled gateway's path. */
export const outfile = path.join(cacheDir(), "genway.mjs")

const isWorkspacePackage = (specifier) => specifier === "@genway" || specifier.startsWith("@genway/")

/** Third-party imports stay imports, of the file the importing package would load. */
const externals = {
  name: "genway-externals",
  setup(build) {
    build.onResolve({ filter: /^[^./]/ }, async (args) => {
      if (args.pluginData === "resolving" || isWorkspacePackage(args.path)) return undefined
      if (args.path.startsWith("node:")) return { path: args.path, external: true }
      const resolved = await build.resolve(args.path, { kind: args.kind, resolveDir: args.resolveDir, pluginData: "resolving" })
      if (resolved.errors.length > 0) return { errors: resolved.errors }
      // A Node built-in named without `node:` resolves to itself.
      if (!path.isAbsolute(resolved.path)) return { path: resolved.path, external: true }
      return { path: pathToFileURL(resolved.path).href, external: true }
    })
  }
}

/** The `package.json` of the package a source file belongs to. */
const manifestOf = (file) => {
  for (let dir = path.dirname(file); dir !== path.dirname(dir); dir = path.dirname(dir)) {
    const manifest = path.join(dir, "package.json")
    if (fs.existsSync(manifest)) return manifest
  }
  return undefined
}

/** Builds the compiled gateway now (atomically: concurrent builds each write their own file, then rename). */
export const build = async () => {
  const temporary = `${outfile}.${process.pid}.${Date.now()}.tmp`
  const result = await esbuild.build({
    entryPoints: [path.join(gatewayDir, "src", "main.ts")],
    outfile: temporary,
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    // Class and function names stay as written (bundling renames clashing ones): errors and logs name them.
    keepNames: true,
    legalComments: "none",
    logLevel: "warning",
    metafile: true,
    absWorkingDir: gatewayDir,
    plugins: [externals]
  })
  // Every source compiled in, with the manifests of the packages they belong to.
  const sources = Object.keys(result.metafile.inputs).map((file) => path.resolve(gatewayDir, file))
  const manifests = new Set(sources.map(manifestOf).filter((file) => file !== undefined))
  fs.writeFileSync(`${temporary}.inputs`, JSON.stringify([...sources, ...manifests]))
  fs.renameSync(`${temporary}.inputs`, inputsFile)
  fs.renameSync(temporary, outfile)
  return outfile
}

/** The files the last build read (esbuild's record of them), beside the compiled gateway. */
const inputsFile = outfile.replace(/\.mjs$/, ".inputs.json")

/** Whether the compiled gateway is newer than every input of its build (none missing). */
const isFresh = () => {
  if (!fs.existsSync(outfile) || !fs.existsSync(inputsFile)) return false
  const built = fs.statSync(outfile).mtimeMs
  // The lockfile of a workspace checkout: an install that changes it may move the imported files.
  const lockfile = path.join(rootDir, "pnpm-lock.yaml")
  const inputs = [fileURLToPath(import.meta.url), ...(fs.existsSync(lockfile) ? [lockfile] : []), ...JSON.parse(fs.readFileSync(inputsFile, "utf8"))]
  return inputs.every((file) => fs.existsSync(file) && fs.statSync(file).mtimeMs < built)
}

/** Builds unless `dist/genway.mjs` is newer than every input; returns its path. */
export const ensureBuilt = async () => (isFresh() ? outfile : build())

if (process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const file = await build()
  console.log(`built ${path.relative(process.cwd(), file)}`)
}

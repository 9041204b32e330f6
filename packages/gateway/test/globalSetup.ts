/**
 * Builds the compiled gateway, when its sources changed, once before the tests that run `genway` as
 * a process (bin/genway.mjs would build it on first use too; once here, rather than in several test
 * files at once).
 */
export default async function setup() {
  // @ts-expect-error: a plain JavaScript module of the package, without type declarations
  const { ensureBuilt } = (await import("../bin/build.mjs")) as { ensureBuilt: () => Promise<string> }
  await ensureBuilt()
}

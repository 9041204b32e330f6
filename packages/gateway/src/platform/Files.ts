/**
 * Files of the data directory are private to the gateway's user: folders 0700, files 0600 (the
 * database holds the media-signing secret; media and spooled inputs are tenants' data). The modes
 * pass through the process umask, so an operator's stricter umask still applies.
 */
import * as fs from "node:fs"
import * as fsp from "node:fs/promises"

/** The mode of folders the gateway creates. */
export const dirMode = 0o700
/** The mode of files the gateway creates. */
export const fileMode = 0o600

/** Creates a folder (and missing parents) private to the gateway's user. */
export const privateDir = (dir: string): void => {
  fs.mkdirSync(dir, { recursive: true, mode: dirMode })
}

/** `privateDir`, asynchronously. */
export const privateDirAsync = (dir: string): Promise<unknown> => fsp.mkdir(dir, { recursive: true, mode: dirMode })

/**
 * Makes sure `file` exists and is readable by the gateway's user alone: created 0600 when missing,
 * its group and other permissions removed when present (from a version that created it 0644).
 */
export const privateFile = (file: string): void => {
  fs.closeSync(fs.openSync(file, "a", fileMode))
  const mode = fs.statSync(file).mode & 0o777
  if ((mode & 0o077) !== 0) fs.chmodSync(file, mode & fileMode)
}

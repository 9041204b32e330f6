/**
 * Real, small media for sandboxed vendors and emulators: a 1-second 160x90 H.264 MP4 and a PNG
 * encoder. Clients of a sandbox get files any player or image viewer opens.
 */
import { deflateSync } from "node:zlib"

// Made once with ffmpeg (testsrc, 160x90, 8 fps, 1 s, libx264, faststart); 2.7 KB.
const mp4Base64 =
  "AAAAIGZ0eXBpc29tAAACAGlzb21pc28yYXZjMW1wNDEAAAOGbW9vdgAAAGxtdmhkAAAAAAAAAAAAAAAAAAAD6AAAA+gAAQAAAQAA" +
  "AAAAAAAAAAAAAAEAAAAAAAAAAAAAAAAAAAABAAAAAAAAAAAAAAAAAABAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAgAA" +
  "ArB0cmFrAAAAXHRraGQAAAADAAAAAAAAAAAAAAABAAAAAAAAA+gAAAAAAAAAAAAAAAAAAAAAAAEAAAAAAAAAAAAAAAAAAAABAAAA" +
  "AAAAAAAAAAAAAABAAAAAAKAAAABaAAAAAAAkZWR0cwAAABxlbHN0AAAAAAAAAAEAAAPoAAAQAAABAAAAAAIobWRpYQAAACBtZGhk" +
  "AAAAAAAAAAAAAAAAAABAAAAAQABVxAAAAAAALWhkbHIAAAAAAAAAAHZpZGUAAAAAAAAAAAAAAABWaWRlb0hhbmRsZXIAAAAB021p" +
  "bmYAAAAUdm1oZAAAAAEAAAAAAAAAAAAAACRkaW5mAAAAHGRyZWYAAAAAAAAAAQAAAAx1cmwgAAAAAQAAAZNzdGJsAAAAw3N0c2QA" +
  "AAAAAAAAAQAAALNhdmMxAAAAAAAAAAEAAAAAAAAAAAAAAAAAAAAAAKAAWgBIAAAASAAAAAAAAAABFUxhdmM1OS4zNy4xMDAgbGli" +
  "eDI2NAAAAAAAAAAAAAAAGP//AAAAOWF2Y0MBZAAM/+EAG2dkAAyscgRCjfkwEQAAAwABAAADABAPFCmEYAEAB2joQ4OSyLD9+PgA" +
  "AAAAEHBhc3AAAAABAAAAAQAAABRidHJ0AAAAAAAAOKAAADigAAAAGHN0dHMAAAAAAAAAAQAAAAgAAAgAAAAAFHN0c3MAAAAAAAAA" +
  "AQAAAAEAAAA4Y3R0cwAAAAAAAAAFAAAAAQAAEAAAAAABAABAAAAAAAEAABgAAAAAAgAAAAAAAAADAAAIAAAAABxzdHNjAAAAAAAA" +
  "AAEAAAABAAAACAAAAAEAAAA0c3RzegAAAAAAAAAAAAAACAAABZ0AAACvAAAARwAAABoAAAAdAAAAGAAAABgAAAAaAAAAFHN0Y28A" +
  "AAAAAAAAAQAAA7YAAABidWR0YQAAAFptZXRhAAAAAAAAACFoZGxyAAAAAAAAAABtZGlyYXBwbAAAAAAAAAAAAAAAAC1pbHN0AAAA" +
  "Jal0b28AAAAdZGF0YQAAAAEAAAAATGF2ZjU5LjI3LjEwMAAAAAhmcmVlAAAHHG1kYXQAAAKvBgX//6vcRem95tlIt5Ys2CDZI+7v" +
  "eDI2NCAtIGNvcmUgMTY0IHIzMDk1IGJhZWU0MDAgLSBILjI2NC9NUEVHLTQgQVZDIGNvZGVjIC0gQ29weWxlZnQgMjAwMy0yMDIy" +
  "IC0gaHR0cDovL3d3dy52aWRlb2xhbi5vcmcveDI2NC5odG1sIC0gb3B0aW9uczogY2FiYWM9MSByZWY9MTYgZGVibG9jaz0xOjA6" +
  "MCBhbmFseXNlPTB4MzoweDEzMyBtZT11bWggc3VibWU9MTAgcHN5PTEgcHN5X3JkPTEuMDA6MC4wMCBtaXhlZF9yZWY9MSBtZV9y" +
  "YW5nZT0yNCBjaHJvbWFfbWU9MSB0cmVsbGlzPTIgOHg4ZGN0PTEgY3FtPTAgZGVhZHpvbmU9MjEsMTEgZmFzdF9wc2tpcD0xIGNo" +
  "cm9tYV9xcF9vZmZzZXQ9LTIgdGhyZWFkcz0zIGxvb2thaGVhZF90aHJlYWRzPTEgc2xpY2VkX3RocmVhZHM9MCBucj0wIGRlY2lt" +
  "YXRlPTEgaW50ZXJsYWNlZD0wIGJsdXJheV9jb21wYXQ9MCBjb25zdHJhaW5lZF9pbnRyYT0wIGJmcmFtZXM9OCBiX3B5cmFtaWQ9" +
  "MiBiX2FkYXB0PTIgYl9iaWFzPTAgZGlyZWN0PTMgd2VpZ2h0Yj0xIG9wZW5fZ29wPTAgd2VpZ2h0cD0yIGtleWludD0yNTAga2V5" +
  "aW50X21pbj04IHNjZW5lY3V0PTQwIGludHJhX3JlZnJlc2g9MCByY19sb29rYWhlYWQ9NjAgcmM9Y3JmIG1idHJlZT0xIGNyZj00" +
  "MC4wIHFjb21wPTAuNjAgcXBtaW49MCBxcG1heD02OSBxcHN0ZXA9NCBpcF9yYXRpbz0xLjQwIGFxPTE6MS4wMACAAAAC5mWIgQAC" +
  "P/7ZB8Cl/WsxqDGK+MAJmtf9fMICnJhhSclHmtihs1Bz0CSaR5Voj8ioDuYuT0YUrMjpVDcAOac/V01JipAvkflqNKVaPzHlnkv+" +
  "dE3lYJLukrGSzvTNImJjQNNeBB4U0UFMijBmyV5tFNbGNQGsEyh9wXJg/+Tl7YZviiD/C1+YBumOI49lTriGW2nKDMQ2T8R2jzbB" +
  "Cv2u4WVl9gEqnODumS4yyyvXdSUMlSVUVBn6j+NbJvfeN6v6Idt4WPID2VQfk4msO/PKd9MvIyUciF/cdMumon+EgXP+43nE8cMu" +
  "cY6XoX/ZVMrNoVXINGqBrq7puH8OvLGAw0cEB/Kw6VoDhdnDSP60w3rQeGi6w5+W8EXR/EJGVG/PNTMUXqqNoB2brkL9rFOr4wgx" +
  "xSGW7Ma64+WXESThGfVGMnpEOxuHd0y7GX77hrr1ugn8c5ZqFdn1gQIy+hUCMsov7XOGqtVDn4c6GonjcAHTBBOC/oXBRiaVgK+L" +
  "rrriD4VaCe/qngTvCSeFPWSsAkY812FTezIXteaWzaAoF4lTnTSeUNcG9FLunWnVKuBk7q/cdMku0uhGKIbJPR6NCUYfGFJ/Wqaj" +
  "0N9kdR+0ViXZEd9tgPaMywmpnmO4TfYloJXbpnZrU9Rjqfiq0ufjS4R3paVSozV+59k0zyVd/Aq2a+ZlMg7rrn2QX/1twPTpERoV" +
  "IFXl6/CRUdgbcnSV8Z91jECRwOzEQFKIuUSIGheGmyQK1InOEwaYuPmMNgGjgtyDPP5HU2iNCvH0ZaAFinZjIkkfo/B/5RsijnOt" +
  "ISam2t3AQ4qGJcort4TrfwFtMeUKbx8WZ6cOcCOkIBOH42zETAFpOpK1NPXfvnvv9o6IPQDgf2kiClhhX827xqoRHx1R2wOAEfEb" +
  "S/+epuyUdDFupnmwdZFkwGojNbqJUeJUoWPIveZHamSqkEzp+o3/judlwDZCaYQ7N4Ls9LCkeWx0lainVP8AAACrQZoI7Yh3/1Vd" +
  "AAM4gsHedvSss/YDV9zbF1CAZAfxABhRBMjejokIpeBR+iQrM16Dz7SUbValw47vrDf4c//lOXOTRIyotajRnaMlugLRK0+W9tBe" +
  "oJc4iPNHOOTyDF0bd8KjD84k/Xne6SvsbGVOj+dKMj7x5ulgFKqMfblwUq84q7o0JIJOTkfAHrGumK1x0DkpoQHzKfYY7SDFy9qM" +
  "mOegc2zIbkyhyFU6AAAAQ0GeEGcQQ/8rFsdYyqfnDjvVy55/cAAzKGWY+PI0HAj/Q6KUO1oRZswM1XiJCZZAeWlJeX/Sz1s8EmzC" +
  "c5La2NfBQV0AAAAWAZ4YJoh3/zQ7T17mcmuE38P9nlL0gAAAABkBnhhGiHf/NDtPXuZxGWKdx2CgHXsoOPbBAAAAFAGeGI1Id/8y" +
  "27zw7m+qxw4IBitzAAAAFAGeGK1Id/8y27zw7m+qxw4IBitzAAAAFgGeGM1Id/91bAfWZgEKKY+disD1EtE=" 

/** A valid 1-second 160x90 H.264 MP4. */
export const mp4 = (): Uint8Array => Buffer.from(mp4Base64, "base64")

const crcTable = (() => {
  const table = new Uint32Array(256)
  for (let n = 0; n < 256; n++) {
    let c = n
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1
    table[n] = c >>> 0
  }
  return table
})()

const crc32 = (bytes: Uint8Array): number => {
  let c = 0xffffffff
  for (const b of bytes) c = crcTable[(c ^ b) & 0xff]! ^ (c >>> 8)
  return (c ^ 0xffffffff) >>> 0
}

const chunk = (type: string, data: Uint8Array): Buffer => {
  const head = Buffer.alloc(8)
  head.writeUInt32BE(data.length, 0)
  head.write(type, 4, "ascii")
  const crc = Buffer.alloc(4)
  crc.writeUInt32BE(crc32(Buffer.concat([head.subarray(4), data])), 0)
  return Buffer.concat([head, data, crc])
}

/**
 * An RGB PNG of the given size: a diagonal gradient tinted by `seed`, so different tasks get
 * visibly different images.
 */
export const png = (width: number, height: number, seed = 0): Uint8Array => {
  const ihdr = Buffer.alloc(13)
  ihdr.writeUInt32BE(width, 0)
  ihdr.writeUInt32BE(height, 4)
  ihdr[8] = 8 // bit depth
  ihdr[9] = 2 // colour type: RGB
  const row = width * 3 + 1
  const raw = Buffer.alloc(row * height)
  const tint = (seed * 47) % 256
  for (let y = 0; y < height; y++) {
    raw[y * row] = 0 // filter: none
    for (let x = 0; x < width; x++) {
      const o = y * row + 1 + x * 3
      raw[o] = (x * 255) / Math.max(1, width - 1)
      raw[o + 1] = (y * 255) / Math.max(1, height - 1)
      raw[o + 2] = tint
    }
  }
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk("IHDR", ihdr),
    chunk("IDAT", deflateSync(raw)),
    chunk("IEND", new Uint8Array(0))
  ])
}

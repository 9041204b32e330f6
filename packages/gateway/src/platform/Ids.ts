/**
 * Time-ordered ids: UUID version 7, written by `uuid`'s `v7`, with their random bits drawn from a
 * pool that one `randomFillSync` fills for 256 ids at a time. Called plainly, `uuid`'s `v7` asks
 * Web Crypto's `getRandomValues` for 16 bytes per id — one checked native call each, about 6 % of
 * a task create's CPU in its profile. Given its random bytes, `v7` no longer keeps its own
 * ordering state, so this module keeps it, by the same rule (RFC 9562 §6.2, method 1): within one
 * millisecond the 32-bit counter after the time steps by one, so each id sorts after the one
 * before; a counter that wraps moves the time on by a millisecond; a new millisecond draws a new
 * random counter.
 */
import { randomFillSync } from "node:crypto"
import { v7 } from "uuid"

const idsPerFill = 256
const pool = new Uint8Array(16 * idsPerFill)
let taken = pool.length
let lastMs = -Infinity
let counter = 0

/** A new UUID v7, sorting after every earlier one this process made. */
export const uuidv7 = (now: number = Date.now()): string => {
  if (taken === pool.length) {
    randomFillSync(pool)
    taken = 0
  }
  const random = pool.subarray(taken, taken + 16)
  taken += 16
  if (now > lastMs) {
    lastMs = now
    counter = ((random[6]! & 0x7f) << 24) | (random[7]! << 16) | (random[8]! << 8) | random[9]!
  } else {
    counter = (counter + 1) | 0
    if (counter === 0) lastMs++
  }
  return v7({ random, msecs: lastMs, seq: counter })
}

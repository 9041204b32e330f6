/**
 * What a replica remembers of rows it read, for a short window: verified tokens, keys found without
 * a budget, a tenant's webhook endpoints. A value is used while it is younger than the window; a
 * write through this replica forgets (one key, or all) at once; a write through another replica (or
 * the CLI, on the database) applies here when the window ends. A read that began before a write here
 * is not remembered: take `epoch()` before reading and pass it to `remember`.
 */

/** Values by key, each for `windowMs` after it was read (at most `max` keys; past that all are dropped). */
export interface Remembered<V> {
  /** The value remembered for `key`, if it was read less than the window before `now`. */
  readonly get: (key: string, now: number) => V | undefined
  /** Counts the writes made here; read it before a lookup whose result is to be remembered. */
  readonly epoch: () => number
  /** Remembers `value`, read at `now`, unless something was forgotten since `since`. */
  readonly remember: (key: string, value: V, now: number, since: number) => void
  /** Forgets `key` (every key when none is given), after a write. */
  readonly forget: (key?: string) => void
}

export const make = <V>(windowMs: number, max = 10_000): Remembered<V> => {
  const entries = new Map<string, { readonly value: V; readonly at: number }>()
  let epoch = 0
  return {
    get: (key, now) => {
      const e = entries.get(key)
      return e !== undefined && now >= e.at && now - e.at < windowMs ? e.value : undefined
    },
    epoch: () => epoch,
    remember: (key, value, now, since) => {
      if (since !== epoch) return
      if (entries.size >= max) entries.clear()
      entries.set(key, { value, at: now })
    },
    forget: (key) => {
      epoch++
      if (key === undefined) entries.clear()
      else entries.delete(key)
    }
  }
}

/**
 * Items a worker keeps in hand until each is due: a binary min-heap on the due time. Adding and
 * taking cost O(log n) whatever the number held, so 10,000 tasks polled every few seconds cost the
 * same per poll as ten. Each item carries a weight (its size, say), summed for a cap.
 */

/** What the hand holds: items by the time (ms) each is next due. */
export interface Hand<A> {
  /** Keeps `item` until `dueAt`; `weight` counts towards `weight()` until it is taken. */
  readonly add: (item: A, dueAt: number, weight?: number) => void
  /** Takes out up to `limit` items due at `now` or before, the earliest first. */
  readonly takeDue: (now: number, limit: number) => Array<A>
  /** Takes out every item, the earliest first. */
  readonly takeAll: () => Array<A>
  /** How many items it holds. */
  readonly size: () => number
  /** The sum of the weights of the items it holds. */
  readonly weight: () => number
}

/** An empty hand. */
export const make = <A>(): Hand<A> => {
  const items: Array<A> = []
  const due: Array<number> = []
  const weights: Array<number> = []
  let total = 0

  const swap = (i: number, j: number) => {
    const item = items[i]!
    items[i] = items[j]!
    items[j] = item
    const at = due[i]!
    due[i] = due[j]!
    due[j] = at
    const w = weights[i]!
    weights[i] = weights[j]!
    weights[j] = w
  }

  const up = (start: number) => {
    let i = start
    while (i > 0) {
      const parent = (i - 1) >> 1
      if (due[parent]! <= due[i]!) return
      swap(i, parent)
      i = parent
    }
  }

  const down = (start: number) => {
    let i = start
    const n = due.length
    while (true) {
      const left = 2 * i + 1
      if (left >= n) return
      const right = left + 1
      const least = right < n && due[right]! < due[left]! ? right : left
      if (due[i]! <= due[least]!) return
      swap(i, least)
      i = least
    }
  }

  const add = (item: A, dueAt: number, weight = 0) => {
    items.push(item)
    due.push(dueAt)
    weights.push(weight)
    total += weight
    up(items.length - 1)
  }

  const takeDue = (now: number, limit: number): Array<A> => {
    const taken: Array<A> = []
    while (taken.length < limit && due.length > 0 && due[0]! <= now) {
      taken.push(items[0]!)
      total -= weights[0]!
      const lastItem = items.pop()!
      const lastDue = due.pop()!
      const lastWeight = weights.pop()!
      if (items.length > 0) {
        items[0] = lastItem
        due[0] = lastDue
        weights[0] = lastWeight
        down(0)
      }
    }
    return taken
  }

  return {
    add,
    takeDue,
    takeAll: () => takeDue(Infinity, Infinity),
    size: () => items.length,
    weight: () => total
  }
}

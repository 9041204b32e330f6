/**
 * Time limits an HTTP client enforces itself: the contract between the adapters' `Http.within`
 * (adapter-kit) and the gateway's upstream client. `within` puts a limit on the fiber for the
 * exchanges it wraps; a client marked `enforcing` arms a timer per exchange (and per body read)
 * that aborts it at the limit and marks the limit `expired`, so `within` needs no forked fiber to
 * watch the time. Any other client leaves `within` to the forking `Http.deadline`.
 */
import * as FiberRef from "effect/FiberRef"
import * as GlobalValue from "effect/GlobalValue"

/** One limit: set by `within`, read by the client. */
export interface CallLimit {
  /** When the limit ends, in epoch milliseconds. */
  readonly at: number
  /** Set by the client when the limit ended an exchange it was making. */
  expired: boolean
  /** False once the limited effect has ended: an exchange started later is not limited by it. */
  active: boolean
  /** The limit in force where this one was set (`within` inside `within`): in force again once this one ends. */
  readonly outer?: CallLimit | undefined
}

/**
 * The limit this fiber set last, if any: `active` reads the one in force from it. `within` sets it
 * without restoring the previous value afterwards (a limit that ended is inactive and leads to its
 * `outer`); a forked fiber starts with its parent's, and joining a fiber keeps the joiner's own.
 */
export const current: FiberRef.FiberRef<CallLimit | undefined> = GlobalValue.globalValue(
  "@genway/core/CallLimit/current",
  () => FiberRef.unsafeMake<CallLimit | undefined>(undefined, { join: (own) => own })
)

const enforcingKey = Symbol.for("@genway/core/CallLimit/enforcing")

/** Marks `client` (an object) as enforcing `current` on every exchange; returns it. */
export const markEnforcing = <C extends object>(client: C): C => {
  Object.defineProperty(client, enforcingKey, { value: true })
  return client
}

/**
 * `wrapper`, marked as enforcing when `client` is: for a client that wraps another and still sends
 * every exchange through it on the caller's fiber (measuring it, adding a redacted header name).
 */
export const keepMark = <C extends object>(client: object, wrapper: C): C => (isEnforcing(client) ? markEnforcing(wrapper) : wrapper)

/** Whether `client` enforces `current` itself. */
export const isEnforcing = (client: object): boolean => (client as { readonly [enforcingKey]?: boolean })[enforcingKey] === true

/**
 * The limit in force: `limit` while still active, else the innermost of its outer limits still
 * active. What a client checks when an exchange (or body read) starts.
 */
export const active = (limit: CallLimit | undefined): CallLimit | undefined => {
  let l = limit
  while (l !== undefined && !l.active) l = l.outer
  return l
}

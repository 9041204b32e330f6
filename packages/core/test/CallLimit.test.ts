import { assert, describe, it } from "@effect/vitest"
import { CallLimit } from "../src/index.js"

describe("CallLimit", () => {
  it("keepMark: a wrapper enforces limits exactly when the client it wraps does", () => {
    const enforcing = CallLimit.markEnforcing({})
    const wrapped = CallLimit.keepMark(enforcing, {})
    assert.isTrue(CallLimit.isEnforcing(wrapped))
    const plain = CallLimit.keepMark({}, {})
    assert.isFalse(CallLimit.isEnforcing(plain))
  })
})

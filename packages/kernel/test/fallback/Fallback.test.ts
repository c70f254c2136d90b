import * as Fallback from "@sluice/kernel/fallback/Fallback"
import { describe, expect, it } from "vitest"

const tagged = (_tag: string, fields: Record<string, unknown> = {}) => ({ _tag, ...fields })

describe("Fallback", () => {
  it("answers the four overload signals, and a DontRetry that gave up on one", () => {
    for (const tag of ["Overloaded", "QuotaExceeded", "Throttled", "CircuitOpen"])
      expect(Fallback.signalOf(tagged(tag))).toBe(tag)
    const gaveUp = tagged("DontRetry", { reason: "attempts", cause: tagged("Overloaded") })
    expect(Fallback.signalOf(gaveUp)).toBe("Overloaded")
    expect(Fallback.signalOf(tagged("DontRetry", { cause: gaveUp }))).toBe("Overloaded")
  })

  it("never answers a programming error, a foreign failure or a DontRetry of one", () => {
    for (const error of [
      new Error("bug"),
      new TypeError("undefined is not a function"),
      tagged("RouteNotFound"),
      tagged("DontRetry", { reason: "not-retryable", cause: new Error("400") }),
      tagged("DontRetry"),
      "a string",
      undefined,
      null
    ])
      expect(Fallback.signalOf(error)).toBeUndefined()
  })

  it("a cycle of DontRetrys ends", () => {
    const a: { _tag: string; cause?: unknown } = { _tag: "DontRetry" }
    a.cause = a
    expect(Fallback.signalOf(a)).toBeUndefined()
  })

  it("a stale cache serves the last good answer until it is older than maxStale", () => {
    const cache = new Fallback.StaleCache<string, number>({ capacity: 10, maxStaleMillis: 1000 })
    expect(cache.recall("a", 0)).toBeUndefined()
    cache.remember("a", 1, 100)
    cache.remember("a", 2, 200)
    // an answer from the past does not replace a newer one
    cache.remember("a", 0, 150)
    expect(cache.recall("a", 700)).toEqual({ value: 2, ageMillis: 500 })
    expect(cache.recall("a", 1200)).toEqual({ value: 2, ageMillis: 1000 })
    expect(cache.recall("a", 1201)).toBeUndefined()
    // too old is forgotten
    expect(cache.size).toBe(0)
  })

  it("a stale cache is bounded in keys", () => {
    const cache = new Fallback.StaleCache<number, number>({ capacity: 3, maxStaleMillis: 1000 })
    for (let i = 0; i < 100; i++) cache.remember(i, i, 0)
    expect(cache.size).toBe(3)
    expect(() => new Fallback.StaleCache({ capacity: 0, maxStaleMillis: 1 })).toThrow(/capacity/)
    expect(() => new Fallback.StaleCache({ capacity: 1, maxStaleMillis: -1 })).toThrow(/maxStaleMillis/)
  })
})

import * as RollingCounterModule from "@sluice/kernel/stats/RollingCounter"
import { RollingCounter } from "@sluice/kernel/stats/RollingCounter"
import fc from "fast-check"
import { describe, expect, it } from "vitest"

describe("RollingCounter", () => {
  it("counts over the window and forgets old buckets", () => {
    const counter = new RollingCounter({ windowMillis: 10_000, buckets: 10 })
    counter.add(0)
    counter.add(0, 4)
    expect(counter.total(0)).toBe(5)
    counter.add(5_000, 2)
    expect(counter.total(5_000)).toBe(7)
    expect(counter.total(10_000)).toBe(2)
    expect(counter.total(70_000)).toBe(0)
  })

  it("buckets default to 10; reset forgets everything", () => {
    const counter = new RollingCounter({ windowMillis: 1_000 })
    expect(counter.buckets).toBe(10)
    expect(counter.windowMillis).toBe(1_000)
    counter.add(50, 3)
    counter.reset()
    expect(counter.total(50)).toBe(0)
    counter.add(60)
    expect(counter.total(60)).toBe(1)
  })

  it("rejects a bad window or bucket count with a RangeError naming the field", () => {
    for (const windowMillis of [0, -5, Number.NaN, Infinity]) {
      expect(() => new RollingCounter({ windowMillis })).toThrow(/windowMillis/)
    }
    for (const buckets of [2.5, 0, -1]) {
      expect(() => new RollingCounter({ windowMillis: 10_000, buckets })).toThrow(/buckets/)
    }
    expect(() => new RollingCounter({ windowMillis: -1 })).toThrow(RangeError)
  })

  it("equals a brute-force count over random event streams", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 20 }),
        fc.integer({ min: 10, max: 5_000 }),
        fc.array(fc.tuple(fc.integer({ min: 0, max: 3_000 }), fc.integer({ min: 1, max: 5 })), {
          maxLength: 200
        }),
        (buckets, windowMs, steps) => {
          const counter = new RollingCounter({ windowMillis: windowMs, buckets })
          const width = windowMs / buckets
          const events: Array<[number, number]> = []
          let now = 0
          for (const [dt, n] of steps) {
            now += dt
            counter.add(now, n)
            events.push([now, n])
            const current = Math.floor(now / width)
            const expected = events
              .filter(([t]) => Math.floor(t / width) > current - buckets)
              .reduce((acc, [, k]) => acc + k, 0)
            if (counter.total(now) !== expected) return false
          }
          return true
        }
      )
    )
  })
})

describe("RollingCounter.options", () => {
  it("a positive, finite window (required) in 10 buckets by default", () => {
    const { buckets, window } = RollingCounterModule.options
    expect("default" in window).toBe(false)
    expect(window.check(0)).toBe("expected a positive, finite duration, got 0")
    expect(window.check(1000)).toBeUndefined()
    expect(buckets.fallback.value).toBe(10)
    expect(buckets.check(1.5)).toBe("expected a positive integer, got 1.5")
  })
})

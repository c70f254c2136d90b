import * as AdaptiveThrottle from "@sluice/kernel/throttle/AdaptiveThrottle"
import fc from "fast-check"
import { describe, expect, it } from "vitest"

type Level = AdaptiveThrottle.Level

// most critical first
const levels: ReadonlyArray<Level> = ["CRITICAL_PLUS", "CRITICAL", "SHEDDABLE_PLUS", "SHEDDABLE"]

/** A seeded generator in [0, 1), for reproducible draws. */
const lcg = (seed: number) => () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648

/**
 * Offers `rate` requests per second for `seconds` through a `Backend` window of `throttle`,
 * for work of `level`, to a backend that accepts the first `capacity(second)` of each
 * second; the requests of a tick (`tick` ms) arrive at its end. Returns the tally of the
 * last `measured` seconds and the window.
 */
const simulate = (
  throttle: AdaptiveThrottle.AdaptiveThrottle,
  level: Level,
  options: {
    rate: number
    capacity: number | ((second: number) => number)
    seconds: number
    measured: number
    tick?: number
    backend?: AdaptiveThrottle.Backend
    start?: number
  },
  random: () => number
) => {
  const backend = options.backend ?? new AdaptiveThrottle.Backend(throttle)
  const tick = options.tick ?? 1000
  const start = options.start ?? 0
  const capacity = typeof options.capacity === "number" ? () => options.capacity as number : options.capacity
  const tally = { requests: 0, throttled: 0, reachedAndRejected: 0, accepted: 0 }
  let second = -1
  let used = 0
  for (let t = tick; t <= options.seconds * 1000; t += tick) {
    const now = start + t
    const s = Math.floor(now / 1000)
    if (s !== second) {
      second = s
      used = 0
    }
    const measuring = t > (options.seconds - options.measured) * 1000
    for (let i = 0; i < (options.rate * tick) / 1000; i++) {
      const p = backend.probability(level, now)
      if (measuring) tally.requests++
      if (random() < p) {
        if (measuring) tally.throttled++
        backend.record(now, false)
      } else if (used < capacity(s)) {
        used++
        if (measuring) tally.accepted++
        backend.record(now, true)
      } else {
        if (measuring) tally.reachedAndRejected++
        backend.record(now, false)
      }
    }
  }
  return { tally, backend, ...backend.totals(start + options.seconds * 1000) }
}

describe("AdaptiveThrottle", () => {
  it("the formula on the window's counts: max(0, (requests − K × accepts) / (requests + 1)), capped", () => {
    const throttle = AdaptiveThrottle.make({ window: 120_000 })
    expect(throttle.minRequests).toBe(120)
    expect(throttle.probability("CRITICAL", 1000, 300)).toBeCloseTo(400 / 1001, 15)
    expect(throttle.probability("CRITICAL", 1000, 600)).toBe(0)
    expect(throttle.probability("CRITICAL", 1000, 0)).toBe(0.9)
    fc.assert(
      fc.property(
        fc.constantFrom(...levels),
        fc.integer({ min: 0, max: 100_000 }),
        fc.integer({ min: 0, max: 100_000 }),
        fc.double({ min: 0, max: 0.99, noNaN: true }),
        (level, requests, acceptsRaw, maxProbability) => {
          const accepts = Math.min(requests, acceptsRaw)
          const t = AdaptiveThrottle.make({ window: 10_000, minRequestRate: 0, maxProbability })
          const k = t.kByCriticality[level]
          const formula = requests === 0 ? 0 : Math.max(0, (requests - k * accepts) / (requests + 1))
          expect(t.probability(level, requests, accepts)).toBe(Math.min(maxProbability, formula))
        }
      )
    )
  })

  it("at steady state follows the formula: a backend accepting 30% sees K times what it accepts", () => {
    // Offered N = 100/s, capacity C = 30/s, K = 2, window 2 minutes: p* ≈ 1 − K·C/N = 0.4,
    // and the share that reaches the backend and is rejected falls from 0.7 to (K − 1)·C/N = 0.3.
    const throttle = AdaptiveThrottle.make({ window: 120_000 })
    const { accepts, requests, tally } = simulate(
      throttle,
      "CRITICAL",
      { rate: 100, capacity: 30, seconds: 360, measured: 120 },
      lcg(42)
    )
    const pStar = AdaptiveThrottle.steadyStateProbability(0.3, 2)
    expect(pStar).toBeCloseTo(0.4, 12)
    expect(tally.requests).toBe(12_000)
    expect(Math.abs(tally.throttled / tally.requests - pStar)).toBeLessThan(0.02)
    expect(Math.abs(tally.reachedAndRejected / tally.requests - (1 - pStar - 0.3))).toBeLessThan(0.02)
    expect(tally.accepted / tally.requests).toBeCloseTo(0.3, 3)
    const formula = Math.max(0, (requests - 2 * accepts) / (requests + 1))
    expect(Math.abs(formula - pStar)).toBeLessThan(0.01)
  })

  it("less critical work is throttled first: K grows with criticality as documented", () => {
    const throttle = AdaptiveThrottle.make({ window: 10_000 })
    expect(levels.map((l) => throttle.kByCriticality[l])).toEqual([3, 2, 1.75, 1.5])
    expect(AdaptiveThrottle.defaultKByCriticality(2)).toEqual({
      SHEDDABLE: 1.5,
      SHEDDABLE_PLUS: 1.75,
      CRITICAL: 2,
      CRITICAL_PLUS: 3
    })
    expect(AdaptiveThrottle.defaultKByCriticality(1)).toEqual({
      SHEDDABLE: 1,
      SHEDDABLE_PLUS: 1,
      CRITICAL: 1,
      CRITICAL_PLUS: 1
    })
    // Steady state per level against a backend accepting 30%: p = 1 − K·0.3 → 0.55, 0.475, 0.4, 0.1.
    const measured: Record<string, number> = {}
    for (const level of levels) {
      const { tally } = simulate(
        throttle,
        level,
        { rate: 100, capacity: 30, seconds: 70, measured: 40 },
        lcg(7)
      )
      measured[level] = tally.throttled / tally.requests
      expect(
        Math.abs(
          measured[level] - AdaptiveThrottle.steadyStateProbability(0.3, throttle.kByCriticality[level])
        )
      ).toBeLessThan(0.035)
    }
    expect(measured.SHEDDABLE!).toBeGreaterThan(measured.SHEDDABLE_PLUS!)
    expect(measured.SHEDDABLE_PLUS!).toBeGreaterThan(measured.CRITICAL!)
    expect(measured.CRITICAL!).toBeGreaterThan(measured.CRITICAL_PLUS!)
    // On the same counts, the levels are ordered the same way.
    const peeks = levels.map((l) => throttle.probability(l, 1000, 300))
    expect(peeks[0]!).toBeLessThan(peeks[1]!)
    expect(peeks[1]!).toBeLessThan(peeks[2]!)
    expect(peeks[2]!).toBeLessThan(peeks[3]!)
  })

  it("caps the probability so the backend is always probed", () => {
    const throttle = AdaptiveThrottle.make({ window: 10_000 })
    expect(throttle.probability("CRITICAL", 2000, 0)).toBe(0.9)
    expect(throttle.probability("CRITICAL_PLUS", 2000, 0)).toBe(0.9)
    const lower = AdaptiveThrottle.make({ window: 10_000, maxProbability: 0.5 })
    expect(lower.probability("SHEDDABLE", 2000, 0)).toBe(0.5)
    // a backend that is down still gets a share of the requests
    const { tally } = simulate(
      throttle,
      "CRITICAL",
      { rate: 100, capacity: 0, seconds: 80, measured: 60 },
      lcg(3)
    )
    expect(Math.abs(tally.throttled / tally.requests - 0.9)).toBeLessThan(0.015)
    expect(tally.reachedAndRejected).toBeGreaterThan(400)
  })

  it("a backend that recovers is noticed: probability returns to 0", () => {
    const throttle = AdaptiveThrottle.make({ window: 10_000, buckets: 10 })
    const random = lcg(5)
    const down = simulate(
      throttle,
      "CRITICAL",
      { rate: 100, capacity: 0, seconds: 15, measured: 0, tick: 500 },
      random
    )
    const { backend } = down
    expect(backend.probability("CRITICAL", 15_000)).toBe(0.9)
    // Only admitted requests can be accepted, so p falls window by window
    // (p' ≈ 1 − K·(1 − p): 0.9 → 0.8 → 0.6 → 0.2 → 0), not at once.
    const healthy = { rate: 100, capacity: Infinity, measured: 0, tick: 500, backend }
    simulate(throttle, "CRITICAL", { ...healthy, seconds: 10, start: 15_000 }, random)
    const afterOneWindow = backend.probability("CRITICAL", 25_000)
    expect(afterOneWindow).toBeGreaterThan(0)
    expect(afterOneWindow).toBeLessThan(0.9)
    simulate(throttle, "CRITICAL", { ...healthy, seconds: 40, start: 25_000 }, random)
    expect(backend.probability("CRITICAL", 65_000)).toBe(0)
  })

  it("Backend: requests and accepts over the rolling window, read by the rule", () => {
    const throttle = AdaptiveThrottle.make({ window: 10_000, buckets: 10, minRequestRate: 0 })
    const backend = new AdaptiveThrottle.Backend(throttle)
    expect(backend.allClear(0)).toBe(true)
    for (let i = 0; i < 500; i++) backend.record(100 + i, false)
    expect(backend.totals(1000)).toEqual({ requests: 500, accepts: 0, inFlight: 0 })
    expect(backend.probability("SHEDDABLE", 1000)).toBe(0.9)
    expect(backend.allClear(1000)).toBe(false)
    for (let i = 0; i < 500; i++) backend.record(2000, true)
    expect(backend.totals(2000)).toEqual({ requests: 1000, accepts: 500, inFlight: 0 })
    // K = 2: (1000 − 2 × 500) / 1001 = 0; K = 1.5: 250 / 1001
    expect(backend.probability("CRITICAL", 2000)).toBe(0)
    expect(backend.probability("SHEDDABLE", 2000)).toBeCloseTo(250 / 1001, 15)
    // the first second leaves the window after 10 s
    expect(backend.totals(11_000)).toEqual({ requests: 500, accepts: 500, inFlight: 0 })
    expect(backend.allClear(11_000)).toBe(true)
    expect(backend.totals(12_000)).toEqual({ requests: 0, accepts: 0, inFlight: 0 })
  })

  it("never throttles a client below the minimum request rate", () => {
    // Default minRequestRate = 1/s over 2 minutes: fewer than 120 requests in the window.
    const throttle = AdaptiveThrottle.make({ window: 120_000 })
    expect(throttle.probability("CRITICAL", 60, 0)).toBe(0)
    expect(throttle.probability("CRITICAL", 119, 0)).toBe(0)
    expect(throttle.allClear(119, 0)).toBe(true)
    expect(throttle.probability("CRITICAL", 120, 0)).toBe(0.9)
    // minRequestRate: 0 turns the guard off: the very second failed request can be throttled.
    const eager = AdaptiveThrottle.make({ window: 120_000, minRequestRate: 0 })
    expect(eager.probability("CRITICAL", 1, 0)).toBeCloseTo(1 / 2, 12)
    expect(eager.probability("CRITICAL", 0, 0)).toBe(0)
  })

  it("allClear: exactly when no level can be throttled", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 10_000 }),
        fc.integer({ min: 0, max: 10_000 }),
        fc.double({ min: 0, max: 5, noNaN: true }),
        fc.double({ min: 1, max: 4, noNaN: true }),
        (requests, acceptsRaw, minRequestRate, k) => {
          const accepts = Math.min(requests, acceptsRaw)
          const t = AdaptiveThrottle.make({ window: 60_000, minRequestRate, k })
          const none = levels.every((l) => t.probability(l, requests, accepts) === 0)
          expect(t.allClear(requests, accepts)).toBe(none)
        }
      )
    )
  })

  it("what a settled call teaches: an accept for an answer, a reject for a drop, nothing otherwise", () => {
    expect(AdaptiveThrottle.learn("success")).toBe("accept")
    expect(AdaptiveThrottle.learn("failed")).toBe("accept")
    expect(AdaptiveThrottle.learn("dropped")).toBe("reject")
    expect(AdaptiveThrottle.learn("refused")).toBeUndefined()
    expect(AdaptiveThrottle.learn("ignored")).toBeUndefined()
  })

  it("misordered and bad options throw a RangeError", () => {
    const k = AdaptiveThrottle.defaultKByCriticality(2)
    expect(AdaptiveThrottle.misordered(k)).toBeUndefined()
    expect(AdaptiveThrottle.misordered({ ...k, CRITICAL: 1.6 })).toEqual({
      level: "CRITICAL",
      lower: "SHEDDABLE_PLUS"
    })
    const cases: Array<AdaptiveThrottle.Options> = [
      { window: 0 },
      { window: 1000, buckets: 0 },
      { window: 1000, buckets: 1.5 },
      { window: 1000, k: 0.5 },
      { window: 1000, k: Number.NaN },
      { window: 1000, maxProbability: 1 },
      { window: 1000, maxProbability: -0.1 },
      { window: 1000, minRequestRate: -1 },
      { window: 1000, kByCriticality: { ...k, CRITICAL: 1.6 } },
      { window: 1000, kByCriticality: { ...k, SHEDDABLE: 0.5 } }
    ]
    for (const options of cases) expect(() => AdaptiveThrottle.make(options)).toThrow(RangeError)
  })

  it("issues name every field out of range; defaults fill what is absent", () => {
    expect(AdaptiveThrottle.issues({})).toEqual([])
    const paths = (options: AdaptiveThrottle.Options) => AdaptiveThrottle.issues(options).map((i) => i.path)
    expect(
      paths({ window: 0, buckets: 1.5, k: 0.5, maxProbability: 1, minRequestRate: -1, maxKeys: 0 })
    ).toEqual([["window"], ["buckets"], ["k"], ["maxProbability"], ["minRequestRate"], ["maxKeys"]])
    expect(AdaptiveThrottle.issues({ k: Number.NaN })[0]!.message).toBe(
      "expected a finite number >= 1, got NaN"
    )
    const k = AdaptiveThrottle.defaultKByCriticality(2)
    expect(paths({ kByCriticality: { ...k, SHEDDABLE: 0.5 } })).toEqual([["kByCriticality", "SHEDDABLE"]])
    const misordered = AdaptiveThrottle.issues({ kByCriticality: { ...k, SHEDDABLE_PLUS: 1.4 } })
    expect(misordered).toEqual([
      {
        path: ["kByCriticality", "SHEDDABLE_PLUS"],
        message:
          "kByCriticality.SHEDDABLE_PLUS (1.4) must not be below kByCriticality.SHEDDABLE (1.5): a more critical level may not be throttled earlier"
      }
    ])
    const rule = AdaptiveThrottle.make()
    const { k: _base, ...resolved } = AdaptiveThrottle.defaults
    expect(rule).toMatchObject({ ...resolved, kByCriticality: k })
    expect(() => AdaptiveThrottle.make({ maxKeys: 0 })).toThrow("maxKeys: expected a positive integer, got 0")
  })

  it("Backend.judge tells a gauge of each change once: all levels 0 while all clear, else the level judged", () => {
    const backend = new AdaptiveThrottle.Backend(AdaptiveThrottle.make({ window: 10_000, minRequestRate: 0 }))
    const told: Array<[Level, number]> = []
    const tell = (level: Level, p: number) => told.push([level, p])
    expect(backend.judge("CRITICAL", 0, tell)).toBe(0)
    expect(told).toEqual(levels.map((l) => [l, 0]))
    told.length = 0
    expect(backend.judge("SHEDDABLE", 0, tell)).toBe(0)
    expect(told).toEqual([])
    for (let i = 0; i < 10; i++) backend.record(100, false)
    const p = backend.judge("SHEDDABLE", 100, tell)
    expect(p).toBeCloseTo(0.9, 15)
    expect(told).toEqual([["SHEDDABLE", p]])
    backend.judge("SHEDDABLE", 100, tell)
    expect(told).toHaveLength(1)
    // all clear again (the window passed): only the level not at 0 is told
    expect(backend.judge("CRITICAL", 20_000, tell)).toBe(0)
    expect(told).toEqual([
      ["SHEDDABLE", p],
      ["SHEDDABLE", 0]
    ])
  })

  it("Backend.settle counts what a call teaches at the latest request time", () => {
    const backend = new AdaptiveThrottle.Backend(AdaptiveThrottle.make({ window: 10_000 }))
    backend.lastUsed = 5000
    expect(backend.settle("success")).toBe("accept")
    expect(backend.settle("failed")).toBe("accept")
    expect(backend.settle("dropped")).toBe("reject")
    expect(backend.settle("refused")).toBeUndefined()
    expect(backend.settle("ignored")).toBeUndefined()
    expect(backend.totals(5000)).toEqual({ requests: 3, accepts: 2, inFlight: 0 })
    backend.count(false)
    expect(backend.totals(5000)).toEqual({ requests: 4, accepts: 2, inFlight: 0 })
    // counted at 5 s: gone once the window has passed it
    expect(backend.totals(15_500)).toEqual({ requests: 0, accepts: 0, inFlight: 0 })
  })

  it("Backends: bounded by capacity, labelled by key for the first capacity keys ever seen", () => {
    const rule = AdaptiveThrottle.make({ maxKeys: 2 })
    const made: Array<[string, string]> = []
    const backends = new AdaptiveThrottle.Backends(rule.maxKeys, (key, label) => {
      made.push([key, label])
      return new AdaptiveThrottle.Backend(rule)
    })
    const a = backends.get("a", 10)
    expect(backends.get("a", 20)).toBe(a)
    expect(a.lastUsed).toBe(20)
    backends.get("b", 30)
    backends.get("c", 40)
    expect([...backends.keys()]).toHaveLength(2)
    expect(backends.peek("c")?.lastUsed).toBe(40)
    // a key seen before keeps its own label when it comes back after its eviction
    const evicted = ["a", "b"].find((key) => backends.peek(key) === undefined)!
    backends.get(evicted, 50)
    expect(made).toEqual([
      ["a", "a"],
      ["b", "b"],
      ["c", AdaptiveThrottle.OTHER_KEY],
      [evicted, evicted]
    ])
  })
})

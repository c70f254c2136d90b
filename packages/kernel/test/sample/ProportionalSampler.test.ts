import * as ProportionalSampler from "@sluice/kernel/sample/ProportionalSampler"
import fc from "fast-check"
import { describe, expect, it } from "vitest"

const make = (
  options: Partial<ProportionalSampler.Options> & { readonly goal: number },
  now = 0,
  start = 0.5
) => ProportionalSampler.make({ ...ProportionalSampler.defaults, ...options }, now, () => start)
const live = (qps: number, at: number): ProportionalSampler.Reading => ({ qps, at })

/** Steps `sampler` every `period` ms from `from` to `to` (inclusive), reading what `read(now)` says. */
const run = (
  sampler: ProportionalSampler.ProportionalSampler,
  from: number,
  to: number,
  period: number,
  read: (now: number) => ProportionalSampler.Reading | undefined,
  after: (now: number) => void = () => {}
) => {
  for (let now = from; now <= to; now += period) {
    sampler.step(now, read(now))
    after(now)
  }
}

describe("ProportionalSampler", () => {
  it("each call is sent with probability r: the share over n calls is within 1/n of r (property)", () => {
    fc.assert(
      fc.property(
        fc.constantFrom(0.05, 0.25, 0.5, 0.9, 1),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        fc.integer({ min: 1, max: 2000 }),
        (r, start, n) => {
          const sampler = make({ goal: 1, initialRatio: r }, 0, start)
          let sent = 0
          for (let i = 0; i < n; i++) if (sampler.sample()) sent++
          return Math.abs(sent - r * n) <= 1
        }
      )
    )
  })

  it("r follows r × G / M, clamped to [minRatio, 1]", () => {
    const sampler = make({ goal: 100, minRatio: 0.01, jitter: 0 })
    const steps: Array<[number, number]> = [
      [400, 0.25],
      [50, 0.5],
      [10, 1],
      [1e9, 0.01],
      [0, 1]
    ]
    for (const [qps, ratio] of steps) {
      sampler.step(0, live(qps, 0))
      expect(sampler.ratio).toBe(ratio)
    }
    expect(sampler.mode).toBe("tracking")
  })

  it("a stale sensor: r is held, then decays toward the floor, never rises, and recovers", () => {
    const sampler = make({
      goal: 100,
      updatePeriod: 5000,
      jitter: 0,
      staleAfter: 15_000,
      staleFloor: 0.1,
      staleDecay: 0.5
    })
    sampler.step(5000, live(125, 5000))
    expect(sampler.ratio).toBe(0.8)
    const ratios: Array<number> = []
    // the sensor dies
    run(
      sampler,
      10_000,
      45_000,
      5000,
      () => undefined,
      () => ratios.push(sampler.ratio)
    )
    // held for 15 s (updates at 10, 15, 20), then 0.4, 0.2, 0.1, 0.1, 0.1
    expect(ratios).toEqual([0.8, 0.8, 0.8, 0.4, 0.2, 0.1, 0.1, 0.1])
    expect(sampler.mode).toBe("stale")
    // traffic keeps flowing at the floor
    let sent = 0
    for (let i = 0; i < 100; i++) if (sampler.sample()) sent++
    expect(sent).toBe(10)
    // back: control resumes from the current r
    sampler.step(50_000, live(10, 50_000))
    expect(sampler.ratio).toBe(1)
    expect(sampler.mode).toBe("tracking")
    expect(sampler.lastReading).toEqual(live(10, 50_000))
    expect(sampler.lastGoodAt).toBe(50_000)
  })

  it("a stale sensor below the floor holds r: it is never raised", () => {
    const sampler = make({ goal: 10, jitter: 0, staleAfter: 1000, staleFloor: 0.2 })
    sampler.step(0, live(200, 0))
    expect(sampler.ratio).toBe(0.05)
    for (let now = 5000; now <= 25_000; now += 5000) sampler.step(now, undefined)
    expect(sampler.ratio).toBe(0.05)
    expect(sampler.mode).toBe("stale")
  })

  it("NaN, negative, infinite and old readings are treated as stale, never fed in", () => {
    const sampler = make({ goal: 100, updatePeriod: 5000, jitter: 0, staleAfter: 10_000, staleDecay: 0.5 })
    sampler.step(5000, live(200, 5000))
    expect(sampler.ratio).toBe(0.5)
    const bad = [Number.NaN, -5, Number.POSITIVE_INFINITY]
    const seen: Array<number> = []
    let now = 5000
    for (const qps of bad) {
      now += 5000
      sampler.step(now, live(qps, now))
      seen.push(sampler.ratio)
    }
    // held within staleAfter (10 s), then decaying: never NaN, never from the bad value
    expect(seen).toEqual([0.5, 0.5, 0.25])
    // a reading that stopped updating: its timestamp stays in the past
    now += 5000
    sampler.step(now, live(100, now))
    expect(sampler.ratio).toBe(0.25)
    const frozenAt = now
    const frozen: Array<number> = []
    for (let i = 0; i < 4; i++) {
      now += 5000
      sampler.step(now, live(100, frozenAt))
      frozen.push(sampler.ratio)
    }
    // fed while younger than staleAfter, then stale: decays
    expect(frozen).toEqual([0.25, 0.25, 0.125, 0.1])
    expect(sampler.mode).toBe("stale")
  })

  it("staleAfter defaults to three update periods", () => {
    expect(make({ goal: 1, updatePeriod: 2000 }).staleAfter).toBe(6000)
    expect(make({ goal: 1, updatePeriod: 2000, staleAfter: 500 }).staleAfter).toBe(500)
  })

  it("goal 0 pauses: only a probe trickle at minRatio, and setGoal resumes control", () => {
    const sampler = make({ goal: 0, minRatio: 0.01, jitter: 0 })
    expect(sampler.ratio).toBe(0.01)
    expect(sampler.mode).toBe("paused")
    sampler.step(0, live(0, 0)) // nothing measured would normally give r = 1: not while paused
    expect(sampler.ratio).toBe(0.01)
    let sent = 0
    for (let i = 0; i < 1000; i++) if (sampler.sample()) sent++
    expect(sent).toBe(10) // probes still go out
    sampler.setGoal(50)
    sampler.step(0, live(5, 0))
    expect(sampler.ratio).toBeCloseTo(0.1, 12)
    expect(sampler.mode).toBe("tracking")
    sampler.setGoal(0) // pausing again takes effect at once
    expect(sampler.ratio).toBe(0.01)
    expect(() => sampler.setGoal(-1)).toThrow(RangeError)
  })

  it("nextDelay: the period times a factor in [1 − jitter, 1 + jitter), no draw without jitter", () => {
    const jittered = make({ goal: 1, updatePeriod: 10_000, jitter: 0.2 })
    expect(jittered.nextDelay(() => 0)).toBe(8000)
    expect(jittered.nextDelay(() => 0.5)).toBe(10_000)
    // the largest draw below 1 rounds to the end of the interval in floating point; it stays below it
    expect(jittered.nextDelay(() => 1 - Number.EPSILON / 2)).toBeLessThan(12_000)
    fc.assert(
      fc.property(fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), (u) => {
        const delay = jittered.nextDelay(() => u)
        return delay >= 8000 && delay < 12_000
      })
    )
    const plain = make({ goal: 1, updatePeriod: 10_000, jitter: 0 })
    expect(
      plain.nextDelay(() => {
        throw new Error("drawn")
      })
    ).toBe(10_000)
  })

  it("one worker converges to its goal", () => {
    // 50 calls offered per second, the rate sent measured over the last 5 s, an update every 5 s
    const sampler = make({ goal: 20, jitter: 0 })
    const sentAt: Array<number> = []
    let now = 0
    for (let second = 0; second < 60; second++) {
      for (let i = 0; i < 50; i++) if (sampler.sample()) sentAt.push(now)
      now += 1000
      if (now % 5000 === 0) {
        const recent = sentAt.filter((t) => t >= now - 5000).length
        sampler.step(now, live(recent / 5, now))
      }
    }
    expect(sampler.ratio).toBeCloseTo(0.4, 1)
  })

  it("throws a RangeError for options outside the rules", () => {
    const cases: Array<Partial<ProportionalSampler.Options> & { readonly goal: number }> = [
      { goal: -1 },
      { goal: Number.NaN },
      { goal: 10, updatePeriod: 0 },
      { goal: 10, jitter: 1 },
      { goal: 10, minRatio: 0 },
      { goal: 10, initialRatio: 1.5 },
      { goal: 10, minRatio: 0.5, initialRatio: 0.1 },
      { goal: 10, staleAfter: -1 },
      { goal: 10, staleFloor: 0 },
      { goal: 10, staleDecay: 2 }
    ]
    for (const options of cases) expect(() => make(options)).toThrow(RangeError)
  })

  it("issues name every field out of range; initialRatio is compared with minRatio after the defaults", () => {
    const paths = (options: ProportionalSampler.Options) =>
      ProportionalSampler.issues(options).map((i) => i.path)
    expect(ProportionalSampler.issues({ goal: 0 })).toEqual([])
    expect(
      paths({
        goal: -1,
        updatePeriod: 0,
        jitter: 1,
        initialRatio: 1.5,
        minRatio: 0,
        staleAfter: -1,
        staleFloor: Number.NaN,
        staleDecay: 2
      })
    ).toEqual([
      ["goal"],
      ["updatePeriod"],
      ["jitter"],
      ["initialRatio"],
      ["minRatio"],
      ["staleAfter"],
      ["staleFloor"],
      ["staleDecay"]
    ])
    expect(ProportionalSampler.issues({ goal: 1, initialRatio: 0.0001 })).toEqual([
      { path: ["initialRatio"], message: "initialRatio must not be below minRatio" }
    ])
    expect(ProportionalSampler.goalIssues(Infinity)).toEqual([
      { path: ["goal"], message: "expected a non-negative finite number, got Infinity" }
    ])
    // the defaults apply to what is left out
    const sampler = ProportionalSampler.make({ goal: 10 }, 0, () => 0)
    expect(sampler.ratio).toBe(ProportionalSampler.defaults.initialRatio)
    expect(sampler.jitter).toBe(ProportionalSampler.defaults.jitter)
    expect(sampler.staleAfter).toBe(3 * ProportionalSampler.defaults.updatePeriod)
  })

  it("counts what it sent and skipped, in total and since the last drain", () => {
    const sampler = make({ goal: 10, initialRatio: 0.5 })
    const decisions = Array.from({ length: 10 }, () => sampler.sample())
    expect(decisions.filter(Boolean)).toHaveLength(5)
    expect(sampler.drain()).toEqual({ sent: 5, skipped: 5 })
    expect(sampler.drain()).toEqual({ sent: 0, skipped: 0 })
    for (let i = 0; i < 4; i++) sampler.sample()
    expect(sampler.drain()).toEqual({ sent: 2, skipped: 2 })
    expect({ sent: sampler.sent, skipped: sampler.skipped }).toEqual({ sent: 7, skipped: 7 })
  })
})

import * as ThresholdMonitor from "@sluice/kernel/monitor/ThresholdMonitor"
import fc from "fast-check"
import { describe, expect, it } from "vitest"

/** `perSecond` successful calls of `latency` ms each, for `seconds` from `from`, `step` seconds at a time. */
const drive = (
  operation: ThresholdMonitor.Operation,
  from: number,
  perSecond: number,
  seconds: number,
  latency = 10,
  step = 1
): number => {
  let now = from
  for (let s = 0; s < seconds; s += step) {
    for (let i = 0; i < perSecond * step; i++) operation.record(now, latency)
    now += step * 1000
  }
  return now
}

describe("ThresholdMonitor", () => {
  it("exceeded when the weighted rate passes the rate threshold", () => {
    const monitor = ThresholdMonitor.make({ thresholds: { rate: 10 }, window: 60_000, tick: 1000 })
    const save = monitor.operation("save")
    let now = drive(save, 0, 8, 120)
    let stats = monitor.stats(save, now)
    expect(stats.rate).toBeCloseTo(8, 1)
    expect(stats.exceeded).toBe(false)
    now = drive(save, now, 14, 120)
    stats = monitor.stats(save, now)
    expect(stats.rate).toBeGreaterThan(13)
    expect(stats.exceeded).toBe(true)
    // another operation is unaffected
    expect(monitor.stats(monitor.operation("load"), now).exceeded).toBe(false)
  })

  it("the default window is five minutes: a burst moves the rate slowly", () => {
    const monitor = ThresholdMonitor.make({ thresholds: { rate: 5 } })
    expect(monitor.windows).toEqual({ window: 300_000, tick: 5000, latencyWindow: 60_000 })
    const save = monitor.operation("save")
    let now = drive(save, 0, 1, 600, 10, 5)
    now = drive(save, now, 10, 60, 10, 5)
    // one minute of 10/s after a long 1/s: 1 + 9 × (1 − e^(−60/300)) ≈ 2.6 (tick granularity aside)
    const stats = monitor.stats(save, now)
    expect(stats.rate).toBeGreaterThan(2.2)
    expect(stats.rate).toBeLessThan(3)
    expect(stats.exceeded).toBe(false)
  })

  it("exceeded when the median latency of successes passes the latency threshold; old samples leave", () => {
    const monitor = ThresholdMonitor.make({ thresholds: { latency: 100 } })
    const q = monitor.operation("q")
    for (let i = 0; i < 9; i++) q.record(0, i < 5 ? 50 : 500)
    let stats = monitor.stats(q, 1000)
    expect(stats.median).toBeCloseTo(50, -0.3) // within 1%
    expect(stats.exceeded).toBe(false)
    for (let i = 0; i < 4; i++) q.record(1000, 500)
    stats = monitor.stats(q, 2000)
    expect(stats.median! / 500).toBeCloseTo(1, 1)
    expect(stats.exceeded).toBe(true)
    // old samples leave the latency window (1 minute by default)
    stats = monitor.stats(q, 122_000)
    expect(stats.median).toBeUndefined()
    expect(stats.exceeded).toBe(false)
  })

  it("the median is re-read at most once per second, and at once after a first sample", () => {
    const operation = new ThresholdMonitor.Operation("op", ThresholdMonitor.defaults)
    expect(operation.median(0)).toBeUndefined()
    operation.record(10, 40)
    expect(operation.median(10)! / 40).toBeCloseTo(1, 1) // a first sample is seen at once
    for (let i = 0; i < 10; i++) operation.record(20, 400)
    expect(operation.median(500)! / 40).toBeCloseTo(1, 1) // cached within the second
    expect(operation.median(1010)! / 400).toBeCloseTo(1, 1)
  })

  it("exceeded when the rate passes the rate threshold", () => {
    const monitor = ThresholdMonitor.make({ thresholds: { rate: 10 } })
    expect(monitor.judge("save", 8, 10).exceeded).toBe(false)
    expect(monitor.judge("save", 10, 10).exceeded).toBe(false) // passes it, not reaches it
    expect(monitor.judge("save", 13.5, 10).exceeded).toBe(true)
    expect(monitor.judge("save", 13.5, 10).rateThreshold).toBe(10)
  })

  it("exceeded when the median latency of successes passes the latency threshold", () => {
    const monitor = ThresholdMonitor.make({ thresholds: { latency: 100 } })
    expect(monitor.judge("q", 0, 50)).toEqual({
      rateThreshold: undefined,
      latencyThreshold: 100,
      instances: 1,
      exceeded: false
    })
    expect(monitor.judge("q", 0, 500).exceeded).toBe(true)
    // without samples there is no median: never exceeded
    expect(monitor.judge("q", 0, undefined).exceeded).toBe(false)
    // an absent threshold is never exceeded
    expect(ThresholdMonitor.make().judge("q", 1e9, 1e9).exceeded).toBe(false)
  })

  it("thresholds change at run time and the rate threshold is divided by instances", () => {
    const monitor = ThresholdMonitor.make({ thresholds: { rate: 6 }, instances: 3 })
    const rate = 3 // 3/s on this instance
    let stats = monitor.judge("save", rate, 10)
    expect(stats.rateThreshold).toBe(2)
    expect(stats.exceeded).toBe(true)
    monitor.setInstances(1)
    expect(monitor.judge("save", rate, 10).exceeded).toBe(false)
    monitor.setInstances(2)
    monitor.setThresholds({ rate: 5 }) // 2.5 each
    expect(monitor.judge("save", rate, 10).exceeded).toBe(true)
    monitor.setThresholds({ rate: 100 }, "save") // per-operation override
    stats = monitor.judge("save", rate, 10)
    expect(stats.rateThreshold).toBe(50)
    expect(stats.exceeded).toBe(false)
    expect(monitor.judge("other", rate, 10).rateThreshold).toBe(2.5)
    expect(() => monitor.setInstances(0)).toThrow(RangeError)
    expect(() => monitor.setThresholds({ rate: -1 })).toThrow(/rate/)
    expect(monitor.instances).toBe(2)
    expect(monitor.limits("save")).toEqual({ rate: 100, latency: undefined })
  })

  it("per-operation thresholds from options", () => {
    const monitor = ThresholdMonitor.make({ thresholds: { rate: 100 }, operations: { export: { rate: 1 } } })
    expect(monitor.judge("export", 2, 10).exceeded).toBe(true)
    expect(monitor.judge("save", 2, 10).exceeded).toBe(false)
  })

  it("judge: exceeded exactly when rate > rate / instances or median > latency (property)", () => {
    fc.assert(
      fc.property(
        fc.option(fc.double({ min: 0.1, max: 1000, noNaN: true }), { nil: undefined }),
        fc.option(fc.double({ min: 0.1, max: 1000, noNaN: true }), { nil: undefined }),
        fc.integer({ min: 1, max: 64 }),
        fc.double({ min: 0, max: 2000, noNaN: true }),
        fc.option(fc.double({ min: 0, max: 2000, noNaN: true }), { nil: undefined }),
        (rateLimit, latency, instances, rate, median) => {
          const j = ThresholdMonitor.judge({ rate: rateLimit, latency }, instances, rate, median)
          const byRate = rateLimit !== undefined && rate * instances > rateLimit * (1 + 1e-12)
          const byLatency = latency !== undefined && median !== undefined && median > latency
          if (byRate || byLatency) expect(j.exceeded).toBe(true)
          const underRate = rateLimit === undefined || rate * instances < rateLimit * (1 - 1e-12)
          const underLatency = latency === undefined || median === undefined || median <= latency
          if (underRate && underLatency) expect(j.exceeded).toBe(false)
        }
      )
    )
  })

  it("bad options throw a RangeError", () => {
    const cases: Array<ThresholdMonitor.Options> = [
      { thresholds: { rate: 0 } },
      { thresholds: { latency: -5 } },
      { instances: 0 },
      { instances: 1.5 },
      { operations: { save: { rate: Number.NaN } } },
      { window: 1000, tick: 5000 },
      { latencyWindow: 0 }
    ]
    for (const options of cases) expect(() => ThresholdMonitor.make(options)).toThrow(RangeError)
  })

  it("issues name every field out of range, operations and the window order included", () => {
    const paths = (options: ThresholdMonitor.Options) => ThresholdMonitor.issues(options).map((i) => i.path)
    expect(ThresholdMonitor.issues({})).toEqual([])
    expect(
      paths({
        thresholds: { rate: 0, latency: Infinity },
        operations: { save: { rate: Number.NaN }, load: { latency: 5 } },
        instances: 1.5,
        latencyWindow: 0
      })
    ).toEqual([
      ["thresholds", "rate"],
      ["thresholds", "latency"],
      ["operations", "save", "rate"],
      ["instances"],
      ["latencyWindow"]
    ])
    // the default window (five minutes) counts too
    expect(ThresholdMonitor.issues({ tick: 600_000 })).toEqual([
      { path: ["tick"], message: "tick must not exceed window" }
    ])
    expect(ThresholdMonitor.limitsIssues({ rate: -1 })).toEqual([
      { path: ["rate"], message: "expected a positive finite number, got -1" }
    ])
    expect(ThresholdMonitor.instancesIssues(0)).toEqual([
      { path: ["instances"], message: "expected a positive integer, got 0" }
    ])
  })

  it("an operation's windows are kept; its figures are due for reporting once per second, each crossing once", () => {
    const monitor = ThresholdMonitor.make()
    const save = monitor.operation("save")
    expect(monitor.operation("save")).toBe(save) // one per operation, kept
    expect(monitor.operation("load")).not.toBe(save)
    expect(save.reportDue(0)).toBe(true)
    expect(save.reportDue(999)).toBe(false)
    expect(save.reportDue(1000)).toBe(true)
    expect(save.reportDue(1500)).toBe(false)
    expect(save.crossed(false)).toBe(false)
    expect(save.crossed(true)).toBe(true)
    expect(save.crossed(true)).toBe(false)
    expect(save.crossed(false)).toBe(true)
  })
})

import * as ThresholdMonitor from "@sluice/adaptive/ThresholdMonitor"
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Exit, Fiber } from "effect"
import { TestClock } from "effect/testing"
import { metricValue } from "./metricSnapshot.js"

/** `perSecond` successful calls of `latencyMs` each, for `seconds`, advancing the clock `step` seconds at a time. */
const drive = (
  monitor: ThresholdMonitor.Service,
  op: string,
  perSecond: number,
  seconds: number,
  latencyMs = 10,
  step = 1
) =>
  Effect.gen(function* () {
    for (let s = 0; s < seconds; s += step) {
      for (let i = 0; i < perSecond * step; i++) yield* monitor.record(op, latencyMs)
      yield* TestClock.adjust(Duration.seconds(step))
    }
  })

describe("ThresholdMonitor", () => {
  it.effect("exceeded when the weighted rate passes the rate threshold", () =>
    Effect.gen(function* () {
      const monitor = yield* ThresholdMonitor.make({
        thresholds: { rate: 10 },
        window: "1 minute",
        tick: "1 second"
      })
      yield* drive(monitor, "save", 8, 120)
      let stats = yield* monitor.stats("save")
      expect(stats.rate).toBeCloseTo(8, 1)
      expect(stats.exceeded).toBe(false)
      yield* drive(monitor, "save", 14, 120)
      stats = yield* monitor.stats("save")
      expect(stats.rate).toBeGreaterThan(13)
      expect(stats.exceeded).toBe(true)
      // another operation is unaffected
      expect(yield* monitor.exceeded("load")).toBe(false)
    })
  )

  it.effect("the default window is five minutes: a burst moves the rate slowly", () =>
    Effect.gen(function* () {
      const monitor = yield* ThresholdMonitor.make({ thresholds: { rate: 5 } })
      yield* drive(monitor, "save", 1, 600, 10, 5)
      yield* drive(monitor, "save", 10, 60, 10, 5)
      // one minute of 10/s after a long 1/s: 1 + 9 × (1 − e^(−60/300)) ≈ 2.6 (tick granularity aside)
      const rate = (yield* monitor.stats("save")).rate
      expect(rate).toBeGreaterThan(2.2)
      expect(rate).toBeLessThan(3)
      expect(yield* monitor.exceeded("save")).toBe(false)
    })
  )

  it.effect("exceeded when the median latency of successes passes the latency threshold", () =>
    Effect.gen(function* () {
      const monitor = yield* ThresholdMonitor.make({ thresholds: { latency: "100 millis" } })
      for (let i = 0; i < 9; i++) yield* monitor.record("q", i < 5 ? 50 : 500)
      yield* TestClock.adjust("1 second")
      let stats = yield* monitor.stats("q")
      expect(stats.medianMillis).toBeCloseTo(50, -0.3) // within 1%
      expect(stats.exceeded).toBe(false)
      for (let i = 0; i < 4; i++) yield* monitor.record("q", 500)
      yield* TestClock.adjust("1 second")
      stats = yield* monitor.stats("q")
      expect(stats.medianMillis! / 500).toBeCloseTo(1, 1)
      expect(stats.exceeded).toBe(true)
      // old samples leave the latency window (1 minute by default)
      yield* TestClock.adjust("2 minutes")
      stats = yield* monitor.stats("q")
      expect(stats.medianMillis).toBeUndefined()
      expect(stats.exceeded).toBe(false)
    })
  )

  it.effect("withMonitor times successes with the Clock and ignores failures", () =>
    Effect.gen(function* () {
      const monitor = yield* ThresholdMonitor.make({ thresholds: { latency: "1 second" }, tick: "1 second" })
      const slow = Effect.sleep("3 seconds").pipe(Effect.as("ok"))
      const fastFailure = Effect.fail("boom" as const)
      // many fast failures must not pull the median below the threshold
      for (let i = 0; i < 20; i++)
        yield* Effect.exit(fastFailure.pipe(ThresholdMonitor.withMonitor("op", monitor)))
      for (let i = 0; i < 3; i++) {
        const fiber = yield* Effect.forkChild(ThresholdMonitor.withMonitor(slow, "op", monitor))
        yield* TestClock.adjust("3 seconds")
        yield* Fiber.await(fiber)
      }
      const stats = yield* monitor.stats("op")
      expect(stats.medianMillis! / 3000).toBeCloseTo(1, 1)
      expect(stats.exceeded).toBe(true)
      yield* TestClock.adjust("5 seconds")
      // three successes recorded, the failures were not counted in the rate either
      expect((yield* monitor.stats("op")).rate).toBeLessThan(1)
    })
  )

  it.effect("thresholds change at run time and the rate threshold is divided by instances", () =>
    Effect.gen(function* () {
      const monitor = yield* ThresholdMonitor.make({
        thresholds: { rate: 6 },
        instances: 3,
        window: "30 seconds",
        tick: "1 second"
      })
      yield* drive(monitor, "save", 3, 120) // 3/s on this instance
      let stats = yield* monitor.stats("save")
      expect(stats.rateThreshold).toBe(2)
      expect(stats.exceeded).toBe(true)
      yield* monitor.setInstances(1)
      expect(yield* monitor.exceeded("save")).toBe(false)
      yield* monitor.setInstances(2)
      yield* monitor.setThresholds({ rate: 5 }) // 2.5 each
      expect(yield* monitor.exceeded("save")).toBe(true)
      yield* monitor.setThresholds({ rate: 100 }, "save") // per-operation override
      stats = yield* monitor.stats("save")
      expect(stats.rateThreshold).toBe(50)
      expect(stats.exceeded).toBe(false)
      expect((yield* monitor.stats("other")).rateThreshold).toBe(2.5)
      const bad = yield* Effect.exit(monitor.setInstances(0))
      expect(Exit.isFailure(bad)).toBe(true)
      const badThreshold = yield* Effect.exit(monitor.setThresholds({ rate: -1 }))
      expect(Exit.isFailure(badThreshold)).toBe(true)
      if (Exit.isFailure(badThreshold)) expect(String(badThreshold.cause)).toMatch(/rate/)
      expect(yield* monitor.instances).toBe(2)
    })
  )

  it.effect("per-operation thresholds from options", () =>
    Effect.gen(function* () {
      const monitor = yield* ThresholdMonitor.make({
        thresholds: { rate: 100 },
        operations: { export: { rate: 1 } },
        window: "10 seconds",
        tick: "1 second"
      })
      yield* drive(monitor, "export", 2, 30)
      expect(yield* monitor.exceeded("export")).toBe(true)
      yield* drive(monitor, "save", 2, 30)
      expect(yield* monitor.exceeded("save")).toBe(false)
    })
  )

  it.effect("reports rate, median and exceeded gauges", () =>
    Effect.gen(function* () {
      const monitor = yield* ThresholdMonitor.make({
        name: "gauges",
        thresholds: { rate: 1 },
        window: "10 seconds",
        tick: "1 second"
      })
      yield* drive(monitor, "save", 5, 30, 40)
      expect(yield* monitor.exceeded("save")).toBe(true)
      const tags = { name: "gauges", operation: "save" }
      expect((yield* metricValue("sluice_threshold_monitor_rate", tags))?.value).toBeCloseTo(5, 1)
      expect((yield* metricValue("sluice_threshold_monitor_median_ms", tags))?.value / 40).toBeCloseTo(1, 1)
      expect((yield* metricValue("sluice_threshold_monitor_exceeded", tags))?.value).toBe(1)
    })
  )

  it.effect("works as a Layer service", () =>
    Effect.gen(function* () {
      const monitor = yield* ThresholdMonitor.ThresholdMonitor
      yield* monitor.record("x", Duration.millis(5))
      expect((yield* monitor.stats("x")).instances).toBe(4)
    }).pipe(Effect.provide(ThresholdMonitor.layer({ thresholds: { rate: 8 }, instances: 4 })))
  )

  it.effect("rejects bad options naming the field", () =>
    Effect.gen(function* () {
      const cases: Array<[ThresholdMonitor.ThresholdMonitorOptions, RegExp]> = [
        [{ thresholds: { rate: 0 } }, /rate/],
        [{ thresholds: { latency: -5 } }, /latency/],
        [{ instances: 0 }, /instances/],
        [{ instances: 1.5 }, /instances/],
        [{ window: "1 second", tick: "5 seconds" }, /tick/],
        [{ latencyWindow: 0 }, /latencyWindow/],
        [{ operations: { save: { rate: Number.NaN } } }, /rate/]
      ]
      for (const [options, field] of cases) {
        const exit = yield* Effect.exit(ThresholdMonitor.make(options))
        expect(Exit.isFailure(exit)).toBe(true)
        if (Exit.isFailure(exit)) expect(String(exit.cause)).toMatch(field)
        expect(() => ThresholdMonitor.makeUnsafe(options)).toThrow(field)
      }
    })
  )
})

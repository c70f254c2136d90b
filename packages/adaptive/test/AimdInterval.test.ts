import * as AimdInterval from "@sluice/adaptive/AimdInterval"
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Exit, Fiber, Ref } from "effect"
import { TestClock } from "effect/testing"
import { metricValue } from "./metricSnapshot.js"

const base = { min: "1 second", max: "16 seconds", step: "1 second" } as const

describe("AimdInterval", () => {
  it.effect("doubles on throttle up to max and shrinks by step down to min", () =>
    Effect.gen(function* () {
      const aimd = yield* AimdInterval.make(base)
      expect(Duration.toMillis(yield* aimd.interval)).toBe(1000)
      const ups: Array<number> = []
      for (let i = 0; i < 6; i++) ups.push(Duration.toMillis(yield* aimd.signal(true)))
      expect(ups).toEqual([2000, 4000, 8000, 16000, 16000, 16000])
      const downs: Array<number> = []
      for (let i = 0; i < 17; i++) downs.push(Duration.toMillis(yield* aimd.signal(false)))
      expect(downs.slice(0, 3)).toEqual([15000, 14000, 13000])
      expect(downs.slice(-3)).toEqual([1000, 1000, 1000])
    })
  )

  it.effect("honours factor, step and initial", () =>
    Effect.gen(function* () {
      const aimd = yield* AimdInterval.make({
        ...base,
        factor: 1.5,
        step: "250 millis",
        initial: "4 seconds"
      })
      expect(aimd.intervalUnsafe()).toBe(4000)
      expect(aimd.signalUnsafe(true)).toBe(6000)
      expect(aimd.signalUnsafe(false)).toBe(5750)
    })
  )

  it.effect("as a Schedule, each recurrence waits the current interval", () =>
    Effect.gen(function* () {
      const aimd = yield* AimdInterval.make(base)
      const runs = yield* Ref.make<Array<number>>([])
      const clock = Effect.clockWith((c) => c.currentTimeMillis)
      const fiber = yield* clock.pipe(
        Effect.flatMap((now) => Ref.update(runs, (xs) => [...xs, now])),
        Effect.repeat(aimd.schedule),
        Effect.forkChild
      )
      yield* TestClock.adjust("3 seconds") // runs at 0, 1, 2, 3
      yield* aimd.signal(true) // 2 s from the next wait on
      yield* TestClock.adjust("1 second") // 4
      yield* TestClock.adjust("6 seconds") // 6, 8, 10
      yield* Fiber.interrupt(fiber)
      expect(yield* Ref.get(runs)).toEqual([0, 1000, 2000, 3000, 4000, 6000, 8000, 10000])
    })
  )

  it.effect("scheduleFrom reads the signal from each run's result", () =>
    Effect.gen(function* () {
      const aimd = yield* AimdInterval.make(base)
      const runs = yield* Ref.make<Array<number>>([])
      // the server throttles the first three responses, then clears
      const save = Effect.gen(function* () {
        const now = yield* Effect.clockWith((c) => c.currentTimeMillis)
        const xs = yield* Ref.updateAndGet(runs, (xs) => [...xs, now])
        return { throttle: xs.length <= 3 }
      })
      const fiber = yield* Effect.forkChild(
        Effect.repeat(
          save,
          aimd.scheduleFrom((r: { readonly throttle: boolean }) => r.throttle)
        )
      )
      yield* TestClock.adjust("40 seconds")
      yield* Fiber.interrupt(fiber)
      const xs = yield* Ref.get(runs)
      // waits: 2, 4, 8 (throttled), then 7, 6, 5, ...
      expect(xs.slice(0, 7)).toEqual([0, 2000, 6000, 14000, 21000, 27000, 32000])
    })
  )

  it.effect("rateStep mode: a clear signal raises the rate by rateStep per second waited", () =>
    Effect.sync(() => {
      const aimd = AimdInterval.makeUnsafe({
        min: "100 millis",
        max: "1 minute",
        rateStep: 0.25,
        initial: "2 seconds"
      })
      expect(aimd.step).toBeUndefined()
      expect(aimd.signalUnsafe(false)).toBeCloseTo(1000, 6) // 1/2 + 0.25 × 2 = 1 per second
      expect(aimd.signalUnsafe(false)).toBeCloseTo(800, 6) // 1 + 0.25 × 1 = 1.25 per second
      expect(aimd.signalUnsafe(true)).toBeCloseTo(1600, 6)
      for (let i = 0; i < 1000; i++) aimd.signalUnsafe(false)
      expect(aimd.intervalUnsafe()).toBe(100)
    })
  )

  it.effect("reports the interval gauge", () =>
    Effect.gen(function* () {
      const aimd = yield* AimdInterval.make({ ...base, name: "gauge-test" })
      yield* aimd.signal(true)
      const gauge = yield* metricValue("sluice_aimd_interval_ms", { name: "gauge-test" })
      expect(gauge?.value).toBe(2000)
      const signals = yield* metricValue("sluice_aimd_interval_signals", {
        name: "gauge-test",
        throttled: "true"
      })
      expect(signals?.count).toBe(1)
    })
  )

  it.effect("rejects bad options naming the field", () =>
    Effect.gen(function* () {
      const cases: Array<[AimdInterval.AimdIntervalOptions, RegExp]> = [
        [{ ...base, min: "20 seconds" }, /min/],
        [{ ...base, max: 0 }, /max/],
        [{ ...base, step: -1 }, /step/],
        [{ ...base, factor: 1 }, /factor/],
        [{ ...base, factor: Number.NaN }, /factor/],
        [{ ...base, initial: "1 minute" }, /initial/],
        [{ min: 1, max: 2 }, /step/],
        [{ ...base, rateStep: 1 }, /step/],
        [{ min: 1, max: 2, rateStep: 0 }, /rateStep/]
      ]
      for (const [options, field] of cases) {
        const exit = yield* Effect.exit(AimdInterval.make(options))
        expect(Exit.isFailure(exit)).toBe(true)
        if (Exit.isFailure(exit)) expect(String(exit.cause)).toMatch(field)
        expect(() => AimdInterval.makeUnsafe(options)).toThrow(field)
      }
    })
  )
})

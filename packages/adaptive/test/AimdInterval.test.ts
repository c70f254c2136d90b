import * as AimdInterval from "@sluice/adaptive/AimdInterval"
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Exit, FastCheck as fc, Fiber, Ref, TestClock } from "effect"
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
      expect(aimd.unsafeInterval()).toBe(4000)
      expect(aimd.unsafeSignal(true)).toBe(6000)
      expect(aimd.unsafeSignal(false)).toBe(5750)
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
        Effect.fork
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
      const fiber = yield* Effect.fork(
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

  it.effect("clients following the same signals from different starts converge once a bound is hit", () =>
    Effect.sync(() => {
      const clients = [1, 3, 7, 12, 16].map((s) => AimdInterval.unsafeMake({ ...base, initial: s * 1000 }))
      const signals = [true, true, true, false, true, true, false, false, true]
      for (const s of signals) for (const c of clients) c.unsafeSignal(s)
      const intervals = clients.map((c) => c.unsafeInterval())
      expect(new Set(intervals).size).toBe(1)
    })
  )

  it.effect("rateStep mode: a clear signal raises the rate by rateStep per second waited", () =>
    Effect.sync(() => {
      const aimd = AimdInterval.unsafeMake({
        min: "100 millis",
        max: "1 minute",
        rateStep: 0.25,
        initial: "2 seconds"
      })
      expect(aimd.step).toBeUndefined()
      expect(aimd.unsafeSignal(false)).toBeCloseTo(1000, 6) // 1/2 + 0.25 × 2 = 1 per second
      expect(aimd.unsafeSignal(false)).toBeCloseTo(800, 6) // 1 + 0.25 × 1 = 1.25 per second
      expect(aimd.unsafeSignal(true)).toBeCloseTo(1600, 6)
      for (let i = 0; i < 1000; i++) aimd.unsafeSignal(false)
      expect(aimd.unsafeInterval()).toBe(100)
    })
  )

  // 7 clients, each wanting a save every 0.5 s (14/s in total); the server throttles
  // while more than 30 saves arrived in the last 5 s (6/s). They start far apart.
  const shareCapacity = (options: { readonly step: number } | { readonly rateStep: number }) => {
    let seed = 42
    const random = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648
    const clients = [0.5, 1, 2, 4, 8, 16, 30].map((initial) => ({
      aimd: AimdInterval.unsafeMake({ min: 500, max: "30 seconds", initial: initial * 1000, ...options }),
      next: random() * 1000,
      saves: 0
    }))
    const arrivals: Array<number> = []
    for (;;) {
      const client = clients.reduce((a, b) => (a.next < b.next ? a : b))
      const now = client.next
      if (now > 600_000) break
      while (arrivals.length > 0 && arrivals[0]! <= now - 5000) arrivals.shift()
      arrivals.push(now)
      if (now > 300_000) client.saves++
      const interval = client.aimd.unsafeSignal(arrivals.length > 30)
      client.next = now + interval * (0.95 + 0.1 * random())
    }
    const rates = clients.map((c) => c.saves / 300)
    const total = rates.reduce((a, b) => a + b, 0)
    return { total, fairness: (total * total) / (rates.length * rates.reduce((a, b) => a + b * b, 0)) }
  }

  it.effect(
    "rateStep mode: clients sharing a capacity through one throttle signal converge to equal rates",
    () =>
      Effect.sync(() => {
        const { fairness, total } = shareCapacity({ rateStep: 0.2 })
        expect(fairness).toBeGreaterThan(0.99)
        expect(total).toBeGreaterThan(5)
        expect(total).toBeLessThan(6.5)
        // the interval-step mode, same run: the fast clients keep the capacity (see the module doc)
        expect(shareCapacity({ step: 250 }).fairness).toBeLessThan(0.9)
      })
  )

  it.effect("the interval always stays within [min, max] (property)", () =>
    Effect.sync(() => {
      fc.assert(
        fc.property(
          fc.integer({ min: 1, max: 5000 }),
          fc.integer({ min: 0, max: 50000 }),
          fc.integer({ min: 1, max: 5000 }),
          fc.double({ min: 1.01, max: 10, noNaN: true }),
          fc.array(fc.boolean(), { maxLength: 200 }),
          (min, extra, step, factor, signals) => {
            const aimd = AimdInterval.unsafeMake({ min, max: min + extra, step, factor })
            for (const s of signals) {
              const before = aimd.unsafeInterval()
              const after = aimd.unsafeSignal(s)
              if (after < min || after > min + extra) return false
              if (s ? after < before : after > before) return false
            }
            return true
          }
        )
      )
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
        expect(() => AimdInterval.unsafeMake(options)).toThrow(field)
      }
    })
  )
})

import * as ProportionalSampler from "@sluice/adaptive/ProportionalSampler"
import * as QpsSensor from "@sluice/adaptive/QpsSensor"
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Exit, Layer, Option } from "effect"
import { TestClock } from "effect/testing"
import { metricValue } from "./metricSnapshot.js"

/** Offers `perSecond` calls per second to every sampler for `seconds`, in 250 ms slices. */
const offer = (samplers: ReadonlyArray<ProportionalSampler.Service>, perSecond: number, seconds: number) =>
  Effect.gen(function* () {
    const perSlice = perSecond / 4
    let sent = 0
    for (let slice = 0; slice < seconds * 4; slice++) {
      const now = yield* Effect.clockWith((c) => c.currentTimeMillis)
      for (const sampler of samplers) {
        for (let i = 0; i < perSlice; i++) if (sampler.sampleUnsafe(now)) sent++
      }
      yield* TestClock.adjust(Duration.millis(250))
    }
    return sent / seconds
  })

/** A sensor whose readings the test scripts. */
const scriptedSensor = () => {
  let next: Option.Option<QpsSensor.Reading> | ((now: number) => Option.Option<QpsSensor.Reading>) =
    Option.none()
  let recorded = 0
  const sensor: QpsSensor.Service = {
    recordUnsafe: (_now, n) => {
      recorded += n
    },
    measure: Effect.clockWith((clock) =>
      Effect.sync(() => (typeof next === "function" ? next(clock.currentTimeMillisUnsafe()) : next))
    )
  }
  return {
    sensor,
    set: (reading: typeof next) => {
      next = reading
    },
    recorded: () => recorded
  }
}
const live = (qps: number) => (now: number) => Option.some({ qps, at: now })

describe("QpsSensor", () => {
  it.effect("averages the last complete seconds; sensors on one store see the sum", () =>
    Effect.gen(function* () {
      const store = QpsSensor.makeMemoryStore()
      const a = yield* QpsSensor.makeMemory({ store, window: 2 })
      const b = yield* QpsSensor.makeMemory({ store, window: 2 })
      const solo = yield* QpsSensor.makeLocal({ window: 2 })
      expect(Option.isNone(yield* a.measure)).toBe(true) // no complete second yet
      for (let s = 0; s < 3; s++) {
        a.recordUnsafe(s * 1000 + 10, 10)
        b.recordUnsafe(s * 1000 + 500, 20 + s)
        solo.recordUnsafe(s * 1000 + 10, 7)
        yield* TestClock.adjust("1 second")
      }
      // seconds 1 and 2: (10 + 21 + 10 + 22) / 2
      expect(Option.getOrThrow(yield* a.measure)).toEqual({ qps: 31.5, at: 3000 })
      expect(Option.getOrThrow(yield* b.measure).qps).toBe(31.5)
      expect(Option.getOrThrow(yield* solo.measure).qps).toBe(7)
      // the current, incomplete second is not read
      a.recordUnsafe(3500, 1000)
      expect(Option.getOrThrow(yield* a.measure).qps).toBe(31.5)
    })
  )

  it.effect("rejects a bad window", () =>
    Effect.gen(function* () {
      const exit = yield* Effect.exit(QpsSensor.makeLocal({ window: 0 }))
      expect(Exit.isFailure(exit)).toBe(true)
      if (Exit.isFailure(exit)) expect(String(exit.cause)).toMatch(/window/)
    })
  )
})

describe("ProportionalSampler", () => {
  it.effect("one worker with a local sensor converges to its goal", () =>
    Effect.gen(function* () {
      const sampler = yield* ProportionalSampler.make({ goal: 20, updatePeriod: "5 seconds" })
      yield* offer([sampler], 50, 40)
      expect(yield* sampler.ratio).toBeCloseTo(0.4, 1)
      const rate = yield* offer([sampler], 50, 20)
      expect(rate).toBeGreaterThan(19)
      expect(rate).toBeLessThan(21)
    }).pipe(Effect.provide(QpsSensor.layerLocal()))
  )

  it.effect("workers sharing a global sensor hold the goal together, whatever their number", () =>
    Effect.gen(function* () {
      const store = QpsSensor.makeMemoryStore()
      const spawn = (initialRatio = 1) =>
        Effect.flatMap(QpsSensor.makeMemory({ store }), (sensor) =>
          ProportionalSampler.makeWith({ goal: 60, updatePeriod: "5 seconds", initialRatio }, sensor)
        )
      const first = yield* Effect.all([spawn(), spawn(), spawn()])
      yield* offer(first, 30, 40)
      const three = yield* offer(first, 30, 20)
      expect(three).toBeGreaterThan(57)
      expect(three).toBeLessThan(63)
      // two more join, starting low so they do not overshoot
      const all = [...first, ...(yield* Effect.all([spawn(0.05), spawn(0.05)]))]
      yield* offer(all, 30, 40)
      const five = yield* offer(all, 30, 20)
      expect(five).toBeGreaterThan(57)
      expect(five).toBeLessThan(63)
    })
  )

  it.effect("sampled runs the work or the caller's skip value, and counts both", () =>
    Effect.gen(function* () {
      const { sensor, recorded } = scriptedSensor()
      const sampler = yield* ProportionalSampler.makeWith(
        { name: "skip-test", goal: 1, initialRatio: 0.5 },
        sensor
      )
      const results: Array<string> = []
      for (let i = 0; i < 10; i++) {
        results.push(
          yield* Effect.succeed("sent").pipe(
            ProportionalSampler.withSampler({ onSkip: Effect.succeed("204"), sampler })
          )
        )
      }
      expect(results.filter((x) => x === "sent")).toHaveLength(5)
      expect(results.filter((x) => x === "204")).toHaveLength(5)
      expect(recorded()).toBe(5)
      yield* sampler.update
      const tags = { name: "skip-test" }
      expect((yield* metricValue("sluice_sampler_sent", tags))?.count).toBe(5)
      expect((yield* metricValue("sluice_sampler_skipped", tags))?.count).toBe(5)
      expect((yield* metricValue("sluice_sampler_ratio", tags))?.value).toBe(0.5)
      const state = yield* sampler.state
      expect(state.sent).toBe(5)
      expect(state.skipped).toBe(5)
    })
  )

  it.effect("updates every period with per-worker jitter", () =>
    Effect.gen(function* () {
      const times: Array<number> = []
      const sensor: QpsSensor.Service = {
        recordUnsafe: () => {},
        measure: Effect.clockWith((clock) =>
          Effect.sync(() => {
            times.push(clock.currentTimeMillisUnsafe())
            return Option.none()
          })
        )
      }
      yield* ProportionalSampler.makeWith({ goal: 1, updatePeriod: "10 seconds", jitter: 0.2 }, sensor)
      for (let i = 0; i < 200; i++) yield* TestClock.adjust("1 second")
      const gaps = times.map((t, i) => t - (i === 0 ? 0 : times[i - 1]!))
      expect(gaps.length).toBeGreaterThan(15)
      for (const gap of gaps) {
        expect(gap).toBeGreaterThanOrEqual(8000)
        expect(gap).toBeLessThanOrEqual(13000) // 12 s plus the 1 s clock step
      }
      expect(new Set(gaps).size).toBeGreaterThan(3) // really jittered
    })
  )

  it.effect("r follows r × G / M, clamped to [minRatio, 1]", () =>
    Effect.gen(function* () {
      const s = scriptedSensor()
      const sampler = yield* ProportionalSampler.makeWith({ goal: 100, minRatio: 0.01, jitter: 0 }, s.sensor)
      s.set(live(400))
      yield* sampler.update
      expect(yield* sampler.ratio).toBe(0.25)
      s.set(live(50))
      yield* sampler.update
      expect(yield* sampler.ratio).toBe(0.5)
      s.set(live(10))
      yield* sampler.update
      expect(yield* sampler.ratio).toBe(1)
      s.set(live(1e9))
      yield* sampler.update
      expect(yield* sampler.ratio).toBe(0.01)
      s.set(live(0))
      yield* sampler.update
      expect(yield* sampler.ratio).toBe(1)
    })
  )

  it.effect("a stale sensor: r is held, then decays toward the floor, never rises, and recovers", () =>
    Effect.gen(function* () {
      const s = scriptedSensor()
      const sampler = yield* ProportionalSampler.makeWith(
        {
          goal: 100,
          updatePeriod: "5 seconds",
          jitter: 0,
          staleAfter: "15 seconds",
          staleFloor: 0.1,
          staleDecay: 0.5
        },
        s.sensor
      )
      s.set(live(125))
      yield* TestClock.adjust("5 seconds") // update at 5 s
      expect(yield* sampler.ratio).toBe(0.8)
      s.set(Option.none()) // the sensor dies
      const ratios: Array<number> = []
      for (let i = 0; i < 8; i++) {
        yield* TestClock.adjust("5 seconds")
        ratios.push(yield* sampler.ratio)
      }
      // held for 15 s (updates at 10, 15, 20), then 0.4, 0.2, 0.1, 0.1, 0.1
      expect(ratios).toEqual([0.8, 0.8, 0.8, 0.4, 0.2, 0.1, 0.1, 0.1])
      expect((yield* sampler.state).mode).toBe("stale")
      // traffic keeps flowing at the floor
      let sent = 0
      for (let i = 0; i < 100; i++) if (yield* sampler.sample) sent++
      expect(sent).toBe(10)
      s.set(live(10)) // back: control resumes from the current r
      yield* TestClock.adjust("5 seconds")
      expect(yield* sampler.ratio).toBe(1)
      expect((yield* sampler.state).mode).toBe("tracking")
    })
  )

  it.effect("a stale sensor below the floor holds r: it is never raised", () =>
    Effect.gen(function* () {
      const s = scriptedSensor()
      const sampler = yield* ProportionalSampler.makeWith(
        { goal: 10, jitter: 0, staleAfter: "1 second", staleFloor: 0.2 },
        s.sensor
      )
      s.set(live(200))
      yield* sampler.update
      expect(yield* sampler.ratio).toBe(0.05)
      s.set(Option.none())
      for (let i = 0; i < 5; i++) yield* TestClock.adjust("5 seconds")
      expect(yield* sampler.ratio).toBe(0.05)
      expect((yield* sampler.state).mode).toBe("stale")
    })
  )

  it.effect("NaN, negative, infinite and old readings are treated as stale, never fed in", () =>
    Effect.gen(function* () {
      const s = scriptedSensor()
      const sampler = yield* ProportionalSampler.makeWith(
        { goal: 100, updatePeriod: "5 seconds", jitter: 0, staleAfter: "10 seconds", staleDecay: 0.5 },
        s.sensor
      )
      s.set(live(200))
      yield* TestClock.adjust("5 seconds")
      expect(yield* sampler.ratio).toBe(0.5)
      const bad = [Number.NaN, -5, Number.POSITIVE_INFINITY]
      const seen: Array<number> = []
      for (const qps of bad) {
        s.set(live(qps))
        yield* TestClock.adjust("5 seconds")
        seen.push(yield* sampler.ratio)
      }
      // held within staleAfter (10 s), then decaying: never NaN, never from the bad value
      expect(seen).toEqual([0.5, 0.5, 0.25])
      // a reading that stopped updating: its timestamp stays in the past
      s.set(live(100))
      yield* TestClock.adjust("5 seconds")
      expect(yield* sampler.ratio).toBe(0.25)
      const frozenAt = yield* Effect.clockWith((c) => c.currentTimeMillis)
      s.set(Option.some({ qps: 100, at: frozenAt }))
      const frozen: Array<number> = []
      for (let i = 0; i < 4; i++) {
        yield* TestClock.adjust("5 seconds")
        frozen.push(yield* sampler.ratio)
      }
      // fed while younger than staleAfter, then stale: decays
      expect(frozen).toEqual([0.25, 0.25, 0.125, 0.1])
      expect((yield* sampler.state).mode).toBe("stale")
    })
  )

  it.effect("goal 0 pauses: only a probe trickle at minRatio, and setGoal resumes control", () =>
    Effect.gen(function* () {
      const s = scriptedSensor()
      const sampler = yield* ProportionalSampler.makeWith({ goal: 0, minRatio: 0.01, jitter: 0 }, s.sensor)
      expect(yield* sampler.ratio).toBe(0.01)
      expect((yield* sampler.state).mode).toBe("paused")
      s.set(live(0)) // nothing measured would normally give r = 1: not while paused
      yield* sampler.update
      expect(yield* sampler.ratio).toBe(0.01)
      let sent = 0
      for (let i = 0; i < 1000; i++) if (yield* sampler.sample) sent++
      expect(sent).toBe(10) // probes still go out
      yield* sampler.setGoal(50)
      s.set(live(5))
      yield* sampler.update
      expect(yield* sampler.ratio).toBeCloseTo(0.1, 12)
      expect((yield* sampler.state).mode).toBe("tracking")
      yield* sampler.setGoal(0) // pausing again takes effect at once
      expect(yield* sampler.ratio).toBe(0.01)
      const bad = yield* Effect.exit(sampler.setGoal(-1))
      expect(Exit.isFailure(bad)).toBe(true)
      if (Exit.isFailure(bad)) expect(String(bad.cause)).toMatch(/goal/)
    })
  )

  it.effect("rejects bad options naming the field", () =>
    Effect.gen(function* () {
      const { sensor } = scriptedSensor()
      const cases: Array<[ProportionalSampler.ProportionalSamplerOptions, RegExp]> = [
        [{ goal: -1 }, /goal/],
        [{ goal: Number.NaN }, /goal/],
        [{ goal: 10, updatePeriod: 0 }, /updatePeriod/],
        [{ goal: 10, jitter: 1 }, /jitter/],
        [{ goal: 10, minRatio: 0 }, /minRatio/],
        [{ goal: 10, initialRatio: 1.5 }, /initialRatio/],
        [{ goal: 10, minRatio: 0.5, initialRatio: 0.1 }, /initialRatio/],
        [{ goal: 10, staleAfter: -1 }, /staleAfter/],
        [{ goal: 10, staleFloor: 0 }, /staleFloor/],
        [{ goal: 10, staleDecay: 2 }, /staleDecay/]
      ]
      for (const [options, field] of cases) {
        const exit = yield* Effect.exit(ProportionalSampler.makeWith(options, sensor))
        expect(Exit.isFailure(exit)).toBe(true)
        if (Exit.isFailure(exit)) expect(String(exit.cause)).toMatch(field)
      }
    })
  )

  it.effect("works as a Layer over the QpsSensor service", () =>
    Effect.gen(function* () {
      const sampler = yield* ProportionalSampler.ProportionalSampler
      expect(sampler.name).toBe("layered")
      expect(yield* sampler.ratio).toBe(0.5)
    }).pipe(
      Effect.provide(
        ProportionalSampler.layer({ name: "layered", goal: 5, initialRatio: 0.5 }).pipe(
          Layer.provide(QpsSensor.layerLocal())
        )
      )
    )
  )
})

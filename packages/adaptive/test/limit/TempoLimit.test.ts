import { ConcurrencyLimiter, type LimitAlgorithm, Pacer, TempoLimit } from "@sluice/adaptive"
import { Options } from "@sluice/core"
import { describe, expect, it } from "@effect/vitest"
import { Clock, Effect, Exit, Fiber, Option } from "effect"
import { TestClock } from "effect/testing"

describe("LimitAlgorithm hooks", () => {
  it.effect("the limiter reports departures and hands the mark back with the outcome", () =>
    Effect.gen(function* () {
      const departures: Array<LimitAlgorithm.Departure> = []
      const samples: Array<LimitAlgorithm.Sample> = []
      const algorithm: LimitAlgorithm.LimitAlgorithm = {
        name: "recording",
        limit: 10,
        onSample: (s) => (samples.push({ ...s }), 10),
        onDeparture: (d) => (departures.push({ ...d }), 100 + d.id)
      }
      const limiter = yield* ConcurrencyLimiter.make({ algorithm: () => algorithm })
      const call = Effect.sleep("50 millis")
      const fiber = yield* Effect.forkChild(
        Effect.all([limiter.withLimiter(call), limiter.withLimiter(call)], { concurrency: 2 })
      )
      yield* TestClock.adjust("50 millis")
      yield* Fiber.join(fiber)
      expect(departures).toEqual([
        { id: 0, inFlight: 1, now: 0 },
        { id: 1, inFlight: 2, now: 0 }
      ])
      expect(samples.map((s) => [s.id, s.mark, s.departedAt, s.rtt]).sort((a, b) => a[0]! - b[0]!)).toEqual([
        [0, 100, 0, 50],
        [1, 101, 0, 50]
      ])
    })
  )
})

/** An algorithm that only drives a pacer: a settable interval, one burst, one timer. */
const driver = () => {
  const state = {
    interval: 10 as number | undefined,
    burst: 0,
    timer: undefined as number | undefined,
    fired: [] as Array<number>
  }
  const algorithm: LimitAlgorithm.LimitAlgorithm = {
    name: "driver",
    limit: 1000,
    onSample: () => 1000,
    get pacingInterval() {
      return state.interval
    },
    takeBurst: () => {
      const k = state.burst
      state.burst = 0
      return k
    },
    get nextTimer() {
      return state.timer
    },
    onTimer: (now) => {
      state.fired.push(now)
      state.timer = undefined
    }
  }
  return { state, algorithm }
}

const paced = (pacer: Pacer.Pacer, n: number) =>
  Effect.gen(function* () {
    const times: Array<number> = []
    const call = Effect.flatMap(Clock.currentTimeMillis, (t) => Effect.sync(() => times.push(t)))
    for (let i = 0; i < n; i++) {
      yield* Effect.forkChild(pacer.withPacer(call))
      yield* Effect.yieldNow
    }
    return times
  })

describe("Pacer driven by the algorithm", () => {
  it.effect("departs every pacingInterval, and a new interval applies to the whole queue at once", () =>
    Effect.gen(function* () {
      const { algorithm, state } = driver()
      const pacer = yield* Pacer.make({ limit: () => 1000, algorithm, maxQueue: 100 })
      const times = yield* paced(pacer, 6)
      yield* TestClock.adjust("20 millis")
      expect(times).toEqual([0, 10, 20])
      state.interval = 50 // slower: the one already due at 30 leaves, the two after it follow 50
      yield* TestClock.adjust("30 millis")
      expect(times).toEqual([0, 10, 20, 30])
      yield* TestClock.adjust("200 millis")
      expect(times).toEqual([0, 10, 20, 30, 80, 130])
    })
  )

  it.effect("a burst releases the next k at once and moves the schedule back by k intervals", () =>
    Effect.gen(function* () {
      const { algorithm, state } = driver()
      const pacer = yield* Pacer.make({ limit: () => 1000, algorithm, maxQueue: 100 })
      const times = yield* paced(pacer, 8)
      yield* TestClock.adjust("10 millis")
      expect(times).toEqual([0, 10])
      state.burst = 3 // taken at the next departure (due at 20)
      yield* TestClock.adjust("10 millis")
      // the departures due at 20, 30 and 40 all leave at 20; the schedule moves back by 3 intervals
      expect(times).toEqual([0, 10, 20, 20, 20])
      yield* TestClock.adjust("100 millis")
      expect(times).toEqual([0, 10, 20, 20, 20, 50, 60, 70])
      expect(pacer.queued).toBe(0)
    })
  )

  it.effect("holds while the interval is infinite, resumes when a departure settles, runs timers", () =>
    Effect.gen(function* () {
      const { algorithm, state } = driver()
      state.interval = Number.POSITIVE_INFINITY
      state.burst = 1
      const pacer = yield* Pacer.make({ limit: () => 1000, algorithm, maxQueue: 100 })
      const times: Array<number> = []
      const call = Effect.andThen(
        Effect.flatMap(Clock.currentTimeMillis, (t) => Effect.sync(() => times.push(t))),
        Effect.sleep("100 millis")
      )
      for (let i = 0; i < 3; i++) {
        yield* Effect.forkChild(pacer.withPacer(call))
        yield* Effect.yieldNow
      }
      expect(times).toEqual([0]) // the burst of one; the rest is held
      yield* TestClock.adjust("90 millis")
      expect(times).toEqual([0])
      state.interval = 25
      state.timer = 110
      yield* TestClock.adjust("10 millis") // the first settles at 100: pacing starts now
      expect(times).toEqual([0, 100])
      yield* TestClock.adjust("50 millis")
      expect(times).toEqual([0, 100, 125])
      expect(state.fired).toEqual([110]) // run by the timer fiber while a departure waited
    })
  )
})

describe("TempoLimit", () => {
  it("has one documented default parameter set and validates options", () => {
    const tempo = TempoLimit.makeUnsafe()
    expect(tempo.options).toMatchObject({
      initial: 20,
      startupGain: 1.25,
      cut: 0.6,
      probeSize: 2,
      probeEvery: 8,
      firstProbe: 5,
      probeDeadline: 1.5,
      headroom: 1.25
    })
    expect(() => TempoLimit.makeUnsafe({ cut: 1.5 })).toThrow(Options.InvalidOptions)
    expect(() => TempoLimit.makeUnsafe({ initial: 5, minLimit: 10 })).toThrow(/minLimit/)
  })

  it.effect("make fails with InvalidOptions naming the field", () =>
    Effect.gen(function* () {
      const exit = yield* Effect.exit(TempoLimit.make({ probeSize: 0 }))
      expect(Exit.isFailure(exit)).toBe(true)
      expect(String(Option.getOrUndefined(Exit.findErrorOption(exit))?.message)).toMatch(/probeSize/)
    })
  )
})

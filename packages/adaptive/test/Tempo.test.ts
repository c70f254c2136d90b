import { ConcurrencyLimiter, type LimitAlgorithm, Pacer, Tempo } from "@sluice/adaptive"
import { Options } from "@sluice/core"
import { describe, expect, it } from "@effect/vitest"
import { Clock, Effect, Exit, Fiber, TestClock } from "effect"

/** A sample as the limiter builds it for a departure-aware algorithm. */
const sample = (
  fields: Partial<LimitAlgorithm.Sample> & Pick<LimitAlgorithm.Sample, "id" | "outcome" | "rtt" | "now">
): LimitAlgorithm.Sample => ({
  nextId: fields.id + 1,
  inFlight: 1,
  departedAt: fields.now - fields.rtt,
  ...fields
})

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
      const fiber = yield* Effect.fork(
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
      yield* Effect.fork(pacer.withPacer(call))
      yield* Effect.yieldNow()
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
      const call = Effect.zipRight(
        Effect.flatMap(Clock.currentTimeMillis, (t) => Effect.sync(() => times.push(t))),
        Effect.sleep("100 millis")
      )
      for (let i = 0; i < 3; i++) {
        yield* Effect.fork(pacer.withPacer(call))
        yield* Effect.yieldNow()
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

describe("Tempo", () => {
  it("has one documented default parameter set and validates options", () => {
    const tempo = Tempo.unsafeMake()
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
    expect(() => Tempo.unsafeMake({ cut: 1.5 })).toThrow(Options.InvalidOptions)
    expect(() => Tempo.unsafeMake({ initial: 5, minLimit: 10 })).toThrow(/minLimit/)
  })

  it.effect("make fails with InvalidOptions naming the field", () =>
    Effect.gen(function* () {
      const exit = yield* Effect.exit(Tempo.make({ probeSize: 0 }))
      expect(Exit.isFailure(exit)).toBe(true)
      expect(
        String(Exit.isFailure(exit) && exit.cause._tag === "Fail" ? exit.cause.error.message : "")
      ).toMatch(/probeSize/)
    })
  )

  it("start-up: the initial window leaves as one burst, then paces and grows by one per success", () => {
    const tempo = Tempo.unsafeMake()
    expect(tempo.phase).toBe("startup")
    expect(tempo.limit).toBe(20)
    expect(tempo.pacingInterval).toBe(Number.POSITIVE_INFINITY)
    expect(tempo.takeBurst(0)).toBe(20)
    expect(tempo.takeBurst(0)).toBe(0)
    for (let id = 0; id < 20; id++) tempo.onDeparture({ id, inFlight: id + 1, now: 0 })
    // the first of the window (which saw 1 in flight) does not grow it: the window was not used yet
    tempo.onSample(sample({ id: 0, outcome: "success", rtt: 600, now: 600, inFlight: 20 }))
    expect(tempo.window).toBe(20)
    tempo.onSample(sample({ id: 19, outcome: "success", rtt: 600, now: 600, inFlight: 19 }))
    expect(tempo.minRtt).toBe(600)
    expect(tempo.window).toBe(21)
    expect(tempo.pacingInterval).toBeCloseTo(600 / (21 * 1.25), 9)
    expect(tempo.limit).toBe(Math.ceil(21 * 1.25 * 1.25))
  })

  it("exits start-up at the first overload to what that request saw in flight; its burst counts once", () => {
    const tempo = Tempo.unsafeMake()
    tempo.takeBurst(0)
    tempo.onDeparture({ id: 0, inFlight: 1, now: 0 })
    tempo.onSample(sample({ id: 0, outcome: "success", rtt: 600, now: 600 }))
    for (let id = 1; id <= 80; id++) tempo.onDeparture({ id, inFlight: Math.min(id, 75), now: 600 + id })
    expect(tempo.window).toBe(20)
    // request 57 saw 57 in flight and was rejected 150 ms after it left
    tempo.onSample(sample({ id: 57, nextId: 81, outcome: "dropped", rtt: 150, now: 807, inFlight: 75 }))
    expect(tempo.phase).toBe("steady")
    expect(tempo.window).toBe(20) // never above the window it had
    const big = Tempo.unsafeMake({ initial: 70 })
    big.takeBurst(0)
    big.onDeparture({ id: 0, inFlight: 1, now: 0 })
    big.onSample(sample({ id: 0, outcome: "success", rtt: 600, now: 600 }))
    for (let id = 1; id <= 80; id++) big.onDeparture({ id, inFlight: id, now: 600 + id })
    big.onSample(sample({ id: 57, nextId: 81, outcome: "dropped", rtt: 150, now: 807 }))
    expect(big.window).toBe(57)
    expect(big.minRejectRtt).toBe(150)
    expect(big.takeBurst(807)).toBe(-1) // one interval's pause
    // the rest of that burst (in flight at the exit, or sent within a round trip) does not count
    big.onSample(sample({ id: 60, nextId: 81, outcome: "dropped", rtt: 150, now: 810 }))
    big.onDeparture({ id: 81, inFlight: 58, now: 900 })
    big.onSample(sample({ id: 81, nextId: 82, outcome: "dropped", rtt: 150, now: 1050, departedAt: 900 }))
    expect(big.window).toBe(57)
    expect(big.pacingInterval).toBeCloseTo(600 / 57, 9)
  })

  it("probes with a burst, accepts it when no rejection came back by the deadline, doubles the next", () => {
    const tempo = Tempo.unsafeMake({ initial: 70 })
    tempo.takeBurst(0)
    tempo.onDeparture({ id: 0, inFlight: 1, now: 0 })
    tempo.onSample(sample({ id: 0, outcome: "success", rtt: 600, now: 600 }))
    tempo.onDeparture({ id: 1, inFlight: 50, now: 650 })
    tempo.onSample(sample({ id: 1, outcome: "dropped", rtt: 150, now: 800 }))
    expect(tempo.window).toBe(50)
    tempo.takeBurst(800)
    // firstProbe = 5 round trips after the exit: the first success after 3800 starts a probe
    let id = 2
    const success = (now: number) => {
      tempo.onDeparture({ id, inFlight: 50, now: now - 600 })
      tempo.onSample(sample({ id: id++, outcome: "success", rtt: 600, now }))
    }
    success(3700)
    expect(tempo.takeBurst(3700)).toBe(0)
    success(3810)
    expect(tempo.takeBurst(3810)).toBe(2)
    expect(tempo.limit).toBe(Math.ceil(50 * 1.25) + 2)
    expect(tempo.onDeparture({ id: 100, inFlight: 51, now: 3810 })).toBe(1) // probe number 1
    expect(tempo.onDeparture({ id: 101, inFlight: 52, now: 3810 })).toBe(1)
    expect(tempo.onDeparture({ id: 102, inFlight: 52, now: 3811 })).toBe(0)
    expect(tempo.nextTimer).toBe(3810 + 1.5 * 150)
    tempo.onTimer(4000) // too early: nothing
    expect(tempo.window).toBe(50)
    tempo.onTimer(4035)
    expect(tempo.window).toBe(52)
    expect(tempo.nextTimer).toBeUndefined()
    success(4040)
    expect(tempo.takeBurst(4040)).toBe(4) // the next probe, twice as large
    expect(tempo.onDeparture({ id: 103, inFlight: 53, now: 4040 })).toBe(2)
    // a rejected probe request: the probe fails, the window stays, the size resets
    tempo.onSample(sample({ id: 103, outcome: "dropped", rtt: 150, now: 4190, mark: 2 }))
    for (let k = 104; k < 107; k++) tempo.onDeparture({ id: k, inFlight: 53, now: 4040 })
    tempo.onTimer(5000)
    expect(tempo.window).toBe(52)
  })

  it("cuts to 0.6 when most outcomes of a round trip are errors", () => {
    const tempo = Tempo.unsafeMake({ initial: 70 })
    tempo.takeBurst(0)
    tempo.onDeparture({ id: 0, inFlight: 1, now: 0 })
    tempo.onSample(sample({ id: 0, outcome: "success", rtt: 600, now: 600 }))
    tempo.onDeparture({ id: 1, inFlight: 60, now: 650 })
    tempo.onSample(sample({ id: 1, nextId: 2, outcome: "dropped", rtt: 150, now: 800 }))
    expect(tempo.window).toBe(60)
    // a capacity drop: a round trip of errors, each from a request that saw 60 in flight
    for (let k = 2; k < 12; k++) {
      tempo.onDeparture({ id: k, inFlight: 60, now: 1500 })
      tempo.onSample(sample({ id: k, nextId: 12, outcome: "dropped", rtt: 150, now: 1650 + k }))
    }
    expect(tempo.window).toBe(60)
    // the round trip that started at 1652 ends with the next outcome after 2252
    tempo.onDeparture({ id: 12, inFlight: 60, now: 2150 })
    tempo.onSample(sample({ id: 12, nextId: 13, outcome: "dropped", rtt: 150, now: 2300 }))
    expect(tempo.window).toBeCloseTo(60 * 0.6, 9)
  })
})

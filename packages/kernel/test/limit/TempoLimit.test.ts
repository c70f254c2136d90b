import type * as Limit from "@sluice/kernel/limit/Limit"
import * as TempoLimit from "@sluice/kernel/limit/TempoLimit"
import { describe, expect, it } from "vitest"

/** A TempoLimit with the binding's default parameter set, overridden by `config`. */
const make = (config: Partial<TempoLimit.Config> = {}) =>
  new TempoLimit.TempoLimit({
    initial: 20,
    minLimit: 1,
    maxLimit: Infinity,
    startupGain: 1.25,
    cut: 0.6,
    probeSize: 2,
    probeEvery: 8,
    firstProbe: 5,
    probeDeadline: 1.5,
    headroom: 1.25,
    ...config
  })

/** A sample as the limiter builds it for a departure-aware algorithm. */
const sample = (
  fields: Partial<Limit.Sample> & Pick<Limit.Sample, "id" | "outcome" | "rtt" | "now">
): Limit.Sample => ({
  nextId: fields.id + 1,
  inFlight: 1,
  departedAt: fields.now - fields.rtt,
  ...fields
})

describe("TempoLimit", () => {
  it("validates the order of its bounds", () => {
    const config = { initial: 20, minLimit: 1, maxLimit: Infinity, startupGain: 1.25, cut: 0.6, probeSize: 2 }
    const full = { ...config, probeEvery: 8, firstProbe: 5, probeDeadline: 1.5, headroom: 1.25 }
    expect(TempoLimit.issues(full)).toEqual([])
    expect(TempoLimit.issues({ ...full, initial: 5, minLimit: 10 }).map((i) => i.path[0])).toEqual([
      "minLimit"
    ])
    expect(TempoLimit.issues({ ...full, maxLimit: 10 }).map((i) => i.path[0])).toEqual(["initial"])
  })

  it("start-up: the initial window leaves as one burst, then paces and grows by one per success", () => {
    const tempo = make()
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
    const tempo = make()
    tempo.takeBurst(0)
    tempo.onDeparture({ id: 0, inFlight: 1, now: 0 })
    tempo.onSample(sample({ id: 0, outcome: "success", rtt: 600, now: 600 }))
    for (let id = 1; id <= 80; id++) tempo.onDeparture({ id, inFlight: Math.min(id, 75), now: 600 + id })
    expect(tempo.window).toBe(20)
    // request 57 saw 57 in flight and was rejected 150 ms after it left
    tempo.onSample(sample({ id: 57, nextId: 81, outcome: "dropped", rtt: 150, now: 807, inFlight: 75 }))
    expect(tempo.phase).toBe("steady")
    expect(tempo.window).toBe(20) // never above the window it had
    const big = make({ initial: 70 })
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
    const tempo = make({ initial: 70 })
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
    const tempo = make({ initial: 70 })
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

import type * as Limit from "@sluice/kernel/limit/Limit"
import * as Pacer from "@sluice/kernel/limit/Pacer"
import fc from "fast-check"
import { describe, expect, it } from "vitest"

/** A reservation pacer with the binding's defaults, overridden by `config`. */
const reservations = (config: Partial<Pacer.ReservationConfig> = {}) =>
  new Pacer.ReservationPacer({
    gain: 1,
    slowStartGain: 1.25,
    smoothing: 0.125,
    initialRtt: undefined,
    maxQueue: 1000,
    limit: () => 10,
    ...config
  })

/** Arrivals at `now`, one after the other: the delay each is told (waiters counted, their slots kept in `slots`). */
const arrive = (
  pacer: Pacer.ReservationPacer,
  now: number,
  n: number,
  slots: Array<Pacer.Slot> = []
): Array<number> =>
  Array.from({ length: n }, () => {
    const delay = pacer.reserve(now)
    if (delay > 0) slots.push(pacer.enter(now, delay))
    return delay
  })

describe("ReservationPacer", () => {
  it("paces nothing before a round trip is known", () => {
    const pacer = reservations()
    expect(pacer.srtt).toBeUndefined()
    expect(pacer.interval).toBe(0)
    expect(arrive(pacer, 0, 3)).toEqual([0, 0, 0])
  })

  it("spreads a window over one round trip: departures every srtt / limit, in arrival order", () => {
    const pacer = reservations({ initialRtt: 100 })
    expect(pacer.interval).toBe(10)
    expect(arrive(pacer, 0, 5)).toEqual([0, 10, 20, 30, 40])
    expect(pacer.queued).toBe(4)
    expect(pacer.reservedInterval).toBe(10)
  })

  it("RFC 6298 smoothing of successes' round trips; a negative or NaN round trip is not a measurement", () => {
    const pacer = reservations({ limit: () => 4 })
    expect(pacer.observe(80)).toBe(true)
    expect(pacer.srtt).toBe(80)
    expect(pacer.interval).toBe(20)
    pacer.observe(160)
    expect(pacer.srtt).toBe(80 + 0.125 * (160 - 80))
    expect(pacer.observe(Number.NaN)).toBe(false)
    expect(pacer.observe(-1)).toBe(false)
    expect(pacer.observe(Infinity)).toBe(false)
    expect(pacer.srtt).toBe(90)
    expect(Pacer.smooth(undefined, 42, 0.5)).toBe(42)
    expect(Pacer.smooth(40, 80, 0.5)).toBe(60)
  })

  it("follows the limit as it changes, and does not pace an unusable limit", () => {
    let limit = 10
    const pacer = reservations({ limit: () => limit, initialRtt: 100 })
    expect(pacer.interval).toBe(10)
    limit = 50
    expect(pacer.interval).toBe(2)
    for (const bad of [0, -1, Number.NaN, Infinity]) {
      limit = bad
      expect(pacer.interval).toBe(0)
    }
  })

  it("uses slowStartGain while slowStart() holds", () => {
    let slowStart = true
    const pacer = reservations({ slowStart: () => slowStart, initialRtt: 100, slowStartGain: 2, gain: 1.25 })
    expect(pacer.gain).toBe(2)
    expect(pacer.interval).toBe(5)
    slowStart = false
    expect(pacer.gain).toBe(1.25)
    expect(pacer.interval).toBe(8)
  })

  it("an idle pacer banks no credit: after a pause one departure leaves at once, the next one interval later", () => {
    const pacer = reservations({ initialRtt: 100 })
    const slots: Array<Pacer.Slot> = []
    expect(arrive(pacer, 0, 2, slots)).toEqual([0, 10])
    pacer.leave(slots[0]!)
    expect(arrive(pacer, 1000, 3).map((d) => 1000 + d)).toEqual([1000, 1010, 1020])
  })

  it("a full queue refuses without taking a slot; maxQueue 0 never waits", () => {
    const pacer = reservations({ initialRtt: 100, maxQueue: 2 })
    expect(arrive(pacer, 0, 3)).toEqual([0, 10, 20])
    expect(pacer.queued).toBe(2)
    expect(pacer.reserve(0)).toBe(Pacer.QUEUE_FULL)
    expect(pacer.nextDeparture).toBe(30)
    const never = reservations({ initialRtt: 100, maxQueue: 0 })
    expect(never.reserve(0)).toBe(0)
    expect(never.reserve(0)).toBe(Pacer.QUEUE_FULL)
  })

  it("a waiter that gives up frees its place; the last reservation gives its slot back", () => {
    const pacer = reservations({ initialRtt: 100 })
    const slots: Array<Pacer.Slot> = []
    expect(arrive(pacer, 0, 3, slots)).toEqual([0, 10, 20])
    expect(pacer.nextDeparture).toBe(30)
    // the last one gives back its slot [20, 30)
    expect(slots[1]).toEqual({ start: 20, end: 30, waiting: true })
    expect(pacer.cancel(slots[1]!)).toBe(true)
    expect(pacer.queued).toBe(1)
    expect(pacer.nextDeparture).toBe(20)
    // an earlier one leaves a gap: later reservations keep their times
    expect(arrive(pacer, 0, 1, slots)).toEqual([20])
    expect(slots[0]).toEqual({ start: 10, end: 20, waiting: true })
    expect(pacer.cancel(slots[0]!)).toBe(true)
    expect(pacer.queued).toBe(1)
    expect(pacer.nextDeparture).toBe(30)
    // giving up twice, or after departing, changes nothing
    expect(pacer.cancel(slots[0]!)).toBe(false)
    pacer.leave(slots[2]!)
    pacer.leave(slots[2]!)
    expect(pacer.cancel(slots[2]!)).toBe(false)
    expect(pacer.queued).toBe(0)
    expect(pacer.nextDeparture).toBe(30)
  })

  it("a burst lets k leave at once and moves the schedule back by k intervals; a pause moves it only", () => {
    const pacer = reservations({ initialRtt: 100 })
    expect(arrive(pacer, 0, 1)).toEqual([0])
    pacer.release(3, 0)
    expect(pacer.nextDeparture).toBe(40)
    expect(arrive(pacer, 0, 4)).toEqual([0, 0, 0, 40])
    expect(pacer.reservedInterval).toBe(10)
    pacer.release(-2, 0)
    expect(pacer.nextDeparture).toBe(70)
    pacer.release(Number.NaN, 0)
    pacer.release(0, 0)
    expect(pacer.nextDeparture).toBe(70)
  })

  it("a departure on a burst credit takes no slot", () => {
    const pacer = reservations({ initialRtt: 100 })
    pacer.release(1, 0)
    expect(pacer.reserve(0)).toBe(0)
    expect(pacer.reservedInterval).toBeUndefined()
  })

  it("property: arrivals at one instant are spaced by the interval, in arrival order", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 200 }),
        fc.integer({ min: 1, max: 2000 }),
        fc.integer({ min: 1, max: 50 }),
        (limit, rtt, n) => {
          const pacer = reservations({ limit: () => limit, initialRtt: rtt })
          const interval = rtt / limit
          arrive(pacer, 0, n).forEach((delay, i) => expect(Math.abs(delay - i * interval)).toBeLessThan(1e-6))
        }
      )
    )
  })
})

/** An algorithm that only drives a pacer: a settable interval, one burst, one timer. */
const driver = () => {
  const state = {
    interval: 10 as number | undefined,
    burst: 0,
    timer: undefined as number | undefined,
    fired: [] as Array<number>
  }
  const algorithm: Limit.Limit = {
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

/** `n` arrivals at `now`, as the binding makes them: a tick, then the admission. */
const arrivals = (pacer: Pacer.ScheduledPacer, now: number, n: number): Array<Pacer.Admission> =>
  Array.from({ length: n }, () => {
    expect(pacer.tick(now)).toBe(0)
    return pacer.depart(now)
  })

describe("ScheduledPacer", () => {
  it("only an algorithm that declares pacingInterval drives a pacer", () => {
    expect(Pacer.drivesPacing(driver().algorithm)).toBe(true)
    expect(Pacer.drivesPacing({ name: "fixed", limit: 4, onSample: () => 4 })).toBe(false)
    expect(Pacer.drivesPacing(undefined)).toBe(false)
  })

  it("departs every pacingInterval, and a new interval applies to the whole queue at once", () => {
    const { algorithm, state } = driver()
    const pacer = new Pacer.ScheduledPacer({ smoothing: 0.125, maxQueue: 100 }, algorithm)
    expect(arrivals(pacer, 0, 6)).toEqual(["depart", "wait", "wait", "wait", "wait", "wait"])
    expect(pacer.queued).toBe(5)
    expect(pacer.wakeAt(0)).toBe(10)
    expect(pacer.tick(10)).toBe(1)
    expect(pacer.tick(20)).toBe(1)
    state.interval = 50 // slower: the one already due at 30 leaves, the two after it follow 50
    expect(pacer.tick(30)).toBe(1)
    expect(pacer.wakeAt(30)).toBe(80)
    expect(pacer.tick(79)).toBe(0)
    expect(pacer.tick(80)).toBe(1)
    expect(pacer.tick(130)).toBe(1)
    expect(pacer.queued).toBe(0)
    expect(pacer.wakeAt(130)).toBe(Infinity)
  })

  it("a burst releases the next k at once and moves the schedule back by k intervals", () => {
    const { algorithm, state } = driver()
    const pacer = new Pacer.ScheduledPacer({ smoothing: 0.125, maxQueue: 100 }, algorithm)
    arrivals(pacer, 0, 8)
    expect(pacer.tick(10)).toBe(1)
    state.burst = 3 // taken at the next departure (due at 20)
    // the departures due at 20, 30 and 40 all leave at 20; the schedule moves back by 3 intervals
    expect(pacer.tick(20)).toBe(3)
    expect(pacer.nextDeparture).toBe(50)
    expect([pacer.tick(50), pacer.tick(60), pacer.tick(70)]).toEqual([1, 1, 1])
    expect(pacer.queued).toBe(0)
  })

  it("holds while the interval is infinite, resumes at the next tick, runs timers", () => {
    const { algorithm, state } = driver()
    state.interval = Number.POSITIVE_INFINITY
    state.burst = 1
    const pacer = new Pacer.ScheduledPacer({ smoothing: 0.125, maxQueue: 100 }, algorithm)
    // the burst of one is credit for the first arrival; the rest is held
    expect(arrivals(pacer, 0, 3)).toEqual(["depart", "wait", "wait"])
    expect(pacer.wakeAt(0)).toBe(Infinity)
    expect(pacer.tick(90)).toBe(0)
    state.interval = 25
    state.timer = 110
    // the first settles at 100: pacing starts now
    expect(pacer.tick(100)).toBe(1)
    expect(pacer.wakeAt(100)).toBe(110)
    expect(pacer.tick(110)).toBe(0)
    expect(state.fired).toEqual([110])
    expect(pacer.tick(125)).toBe(1)
  })

  it("a burst larger than the queue leaves credit for the next arrivals; a full queue refuses", () => {
    const { algorithm } = driver()
    const pacer = new Pacer.ScheduledPacer({ smoothing: 0.125, maxQueue: 1 }, algorithm)
    expect(arrivals(pacer, 0, 3)).toEqual(["depart", "wait", "full"])
    expect(pacer.release(3, 0)).toBe(1)
    expect(pacer.queued).toBe(0)
    expect(pacer.depart(0)).toBe("depart")
    expect(pacer.depart(0)).toBe("depart")
    expect(pacer.depart(0)).toBe("wait")
    pacer.leave()
    expect(pacer.queued).toBe(0)
  })

  it("a waiter that leaves is no longer counted", () => {
    const { algorithm } = driver()
    const pacer = new Pacer.ScheduledPacer({ smoothing: 0.125, maxQueue: 100 }, algorithm)
    arrivals(pacer, 0, 3)
    pacer.leave()
    expect(pacer.queued).toBe(1)
    expect(pacer.tick(10)).toBe(1)
    expect(pacer.tick(20)).toBe(0)
  })
})

/** A scheduled pacer that records the waiters it releases, as the binding resumes them. */
class Recording extends Pacer.ScheduledPacer<Pacer.Waiter & { readonly n: number }> {
  released: Array<number> = []
  protected override onReleased(waiter: Pacer.Waiter & { readonly n: number }): void {
    this.released.push(waiter.n)
  }
}

describe("ScheduledPacer waiters", () => {
  const waiter = (n: number) => Object.assign(new Pacer.Waiter(), { n })
  const joined = (pacer: Recording, now: number, count: number) =>
    Array.from({ length: count }, (_, n) => {
      pacer.tick(now)
      const admission = pacer.depart(now)
      const w = waiter(n)
      if (admission === "wait") pacer.join(w)
      return w
    })

  it("releases joined waiters in arrival order, skipping the ones that gave up", () => {
    const { algorithm, state } = driver()
    const pacer = new Recording({ smoothing: 0.125, maxQueue: 100 }, algorithm)
    const waiters = joined(pacer, 0, 5) // 0 departs, 1..4 wait
    expect(pacer.abandon(waiters[2]!)).toBe(true)
    expect(pacer.abandon(waiters[2]!)).toBe(false) // idempotent
    expect(pacer.queued).toBe(3)
    pacer.tick(10)
    expect(pacer.released).toEqual([1])
    expect(waiters[1]!.released).toBe(true)
    expect(pacer.abandon(waiters[1]!)).toBe(false) // already released: nothing to give back
    state.burst = 2
    pacer.tick(20)
    expect(pacer.released).toEqual([1, 3, 4])
    expect(pacer.queued).toBe(0)
  })

  it("a burst asked for from outside releases heads at once", () => {
    const { algorithm } = driver()
    const pacer = new Recording({ smoothing: 0.125, maxQueue: 100 }, algorithm)
    joined(pacer, 0, 4)
    expect(pacer.release(2, 0)).toBe(2)
    expect(pacer.released).toEqual([1, 2])
    expect(pacer.gain).toBe(1)
  })
})

describe("ScheduledPacer timer", () => {
  it("one timer runs while departures wait: armed once, ended when there is nothing to wake for", () => {
    const { algorithm, state } = driver()
    const pacer = new Pacer.ScheduledPacer({ smoothing: 0.125, maxQueue: 100 }, algorithm)
    expect(pacer.arm()).toBe(false) // nothing waits
    arrivals(pacer, 0, 3)
    expect(pacer.arm()).toBe(true)
    expect(pacer.arm()).toBe(false) // already running
    expect(pacer.wakeAt(0)).toBe(10)
    expect(pacer.armed).toBe(true)
    state.interval = Number.POSITIVE_INFINITY // held, no algorithm timer: the timer ends
    expect(pacer.wakeAt(0)).toBe(Infinity)
    expect(pacer.armed).toBe(false)
    expect(pacer.arm()).toBe(true) // an outcome arms it again
  })
})

describe("Pacer options", () => {
  const limit = () => 10

  it("the documented defaults", () => {
    expect(Pacer.configure({ limit })).toEqual({
      ok: true,
      value: { limit, gain: 1, slowStartGain: 1.25, smoothing: 0.125, maxQueue: 1000, key: "default" }
    })
  })

  it("bad fields are named", () => {
    const cases: Array<[object, string]> = [
      [{ limit: 10 }, "limit"],
      [{}, "limit"],
      [{ limit, gain: 0 }, "gain"],
      [{ limit, slowStartGain: -1 }, "slowStartGain"],
      [{ limit, smoothing: 0 }, "smoothing"],
      [{ limit, smoothing: 1.5 }, "smoothing"],
      [{ limit, maxQueue: 1.5 }, "maxQueue"],
      [{ limit, slowStart: true }, "slowStart"],
      [{ limit, algorithm: { limit: 3 } }, "algorithm"],
      [{ limit, key: 3 }, "key"]
    ]
    for (const [input, field] of cases) {
      const result = Pacer.configure(input)
      expect(!result.ok && result.issues.map((i) => i.path[0])).toEqual([field])
    }
  })

  it("a congestion window's slow start is cwnd < ssthresh, read live; other limits have none", () => {
    const window = { name: "cw", limit: 4, cwnd: 4, ssthresh: 8, onSample: () => 4 }
    const slowStart = Pacer.slowStartOf(window)!
    expect(slowStart()).toBe(true)
    window.cwnd = 8
    expect(slowStart()).toBe(false)
    expect(Pacer.slowStartOf({ name: "fixed", limit: 4, onSample: () => 4 })).toBeUndefined()
  })

  it("a pacer for a limit follows it when it drives pacing and takes a window's slow start", () => {
    const fixed = { name: "fixed", limit: 4, onSample: () => 4 }
    expect(Pacer.pacingOf(fixed)).toEqual({})
    const window = { ...fixed, cwnd: 4, ssthresh: 8 }
    expect(Object.keys(Pacer.pacingOf(window))).toEqual(["slowStart"])
    const { algorithm } = driver()
    expect(Pacer.pacingOf(algorithm)).toEqual({ algorithm })
  })
})

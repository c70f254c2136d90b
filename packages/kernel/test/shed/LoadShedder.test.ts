import * as Criticality from "@sluice/kernel/criticality/Criticality"
import * as LoadShedder from "@sluice/kernel/shed/LoadShedder"
import fc from "fast-check"
import { describe, expect, it } from "vitest"

type Level = LoadShedder.Level

// most critical first
const levels: ReadonlyArray<Level> = ["CRITICAL_PLUS", "CRITICAL", "SHEDDABLE_PLUS", "SHEDDABLE"]
const rank = (l: Level) => Criticality.ascending.indexOf(l)

/** Tries work of `level` at `now`: admitted and counted in, or shed. */
const enter = (shedder: LoadShedder.LoadShedder, level: Level, now: number): boolean => {
  const u = shedder.arrive(level, now)
  if (shedder.sheds(level, u)) return false
  shedder.admit(level)
  return true
}

/** Which levels are admitted at `now` (each probe completes at once, so it does not move utilization). */
const admitted = (shedder: LoadShedder.LoadShedder, now: number): Array<Level> =>
  levels.filter((level) => {
    const ok = enter(shedder, level, now)
    if (ok) shedder.leave(level, now)
    return ok
  })

/** `n` pieces of CRITICAL_PLUS work (so they are admitted) that stay in flight. */
const hold = (shedder: LoadShedder.LoadShedder, n: number, now: number) => {
  for (let i = 0; i < n; i++) expect(enter(shedder, "CRITICAL_PLUS", now)).toBe(true)
}

describe("LoadShedder", () => {
  it("over quota is shed first within its level, never before a less critical level", () => {
    expect(
      Criticality.ascending.map((l) => LoadShedder.overQuotaThreshold(LoadShedder.defaultThresholds, l))
    ).toEqual([0.75, 0.85, 0.95, 1.05].map((x) => expect.closeTo(x, 9)))
    const shedder = LoadShedder.make({ capacity: 20, smoothing: 1000 })
    // 12 CRITICAL within quota and 8 CRITICAL over quota in flight for 20 time constants
    for (let i = 0; i < 12; i++) {
      shedder.arrive("CRITICAL", 0)
      shedder.admit("CRITICAL")
    }
    for (let i = 0; i < 8; i++) {
      shedder.arrive("CRITICAL", 0, true)
      shedder.admit("CRITICAL", true)
    }
    expect([shedder.activeOf("CRITICAL"), shedder.overQuotaOf("CRITICAL")]).toEqual([20, 8])
    const now = 20_000
    // over-quota CRITICAL sees all 20 (1.0 ≥ 0.95): shed; within-quota CRITICAL sees its 12 only (0.6)
    expect(shedder.levelUtilization("CRITICAL", now, true)).toBeCloseTo(1, 6)
    expect(shedder.wouldShed("CRITICAL", now, true)).toBe(true)
    expect(shedder.levelUtilization("CRITICAL", now)).toBeCloseTo(0.6, 6)
    expect(shedder.wouldShed("CRITICAL", now)).toBe(false)
    // a less critical level sees the over-quota work: it is shed, within quota or not (criticality first)
    expect(shedder.wouldShed("SHEDDABLE_PLUS", now)).toBe(true)
    expect(shedder.wouldShed("CRITICAL_PLUS", now, true)).toBe(false)
    for (let i = 0; i < 8; i++) shedder.leave("CRITICAL", now, true)
    expect(shedder.overQuotaOf("CRITICAL")).toBe(0)
    expect(shedder.active).toBe(12)
  })

  it("sheds by criticality, SHEDDABLE first and CRITICAL_PLUS last", () => {
    const shedder = LoadShedder.make({ capacity: 20, smoothing: 1000 })
    expect(admitted(shedder, 0)).toEqual(["CRITICAL_PLUS", "CRITICAL", "SHEDDABLE_PLUS", "SHEDDABLE"])
    // 17 in flight for 20 s (20 time constants): utilization 0.85.
    hold(shedder, 17, 0)
    expect(shedder.active).toBe(17)
    expect(shedder.utilization(20_000)).toBeCloseTo(0.85, 6)
    expect(admitted(shedder, 20_000)).toEqual(["CRITICAL_PLUS", "CRITICAL", "SHEDDABLE_PLUS"])
    hold(shedder, 2, 20_000) // 0.95
    expect(admitted(shedder, 40_000)).toEqual(["CRITICAL_PLUS", "CRITICAL"])
    hold(shedder, 2, 40_000) // 1.05
    expect(admitted(shedder, 60_000)).toEqual(["CRITICAL_PLUS"])
    hold(shedder, 2, 60_000) // 1.15
    expect(shedder.active).toBe(23)
    expect(admitted(shedder, 80_000)).toEqual([])
    for (let i = 0; i < 23; i++) shedder.leave("CRITICAL_PLUS", 80_000)
    expect(shedder.active).toBe(0)
  })

  it("smooths with exponential decay and recovers when load falls", () => {
    const shedder = LoadShedder.make({ capacity: 10, smoothing: 2000 })
    hold(shedder, 10, 0)
    // A step from 0 to 10 in flight: utilization 1 − e^(−t/τ).
    expect(shedder.utilization(1000)).toBeCloseTo(1 - Math.exp(-0.5), 9)
    expect(admitted(shedder, 1000)).toEqual(levels)
    const u0 = shedder.utilization(10_000)
    expect(u0).toBeCloseTo(1 - Math.exp(-5), 9) // 0.993: just below CRITICAL's 1.0
    expect(admitted(shedder, 10_000)).toEqual(["CRITICAL_PLUS", "CRITICAL"])
    // Load falls to 0: utilization decays as u0 · e^(−t/τ).
    for (let i = 0; i < 10; i++) shedder.leave("CRITICAL_PLUS", 10_000)
    expect(shedder.active).toBe(0)
    expect(shedder.utilization(10_100)).toBeCloseTo(u0 * Math.exp(-0.05), 9)
    expect(admitted(shedder, 10_100)).toEqual(["CRITICAL_PLUS", "CRITICAL"])
    // SHEDDABLE comes back once u0 · e^(−t/τ) < 0.8, i.e. after τ · ln(u0 / 0.8) ≈ 0.43 s.
    const back = 10_000 + 2000 * Math.log(u0 / 0.8)
    expect(admitted(shedder, back - 20)).toEqual(["CRITICAL_PLUS", "CRITICAL", "SHEDDABLE_PLUS"])
    expect(admitted(shedder, back + 20)).toEqual(levels)
  })

  it("combines an event-loop utilization reading, applied to the least critical levels still arriving", () => {
    const shedder = LoadShedder.make({ capacity: 100, smoothing: 1000, eventLoop: { interval: 500 } })
    expect(shedder.eventLoop).toBe(0)
    expect(admitted(shedder, 0)).toEqual(levels)
    expect(shedder.setEventLoop(0.85)).toBe(0.85)
    expect(admitted(shedder, 500)).toEqual(["CRITICAL_PLUS", "CRITICAL", "SHEDDABLE_PLUS"])
    expect(shedder.setEventLoop(Number.NaN)).toBe(0.85) // a broken reading keeps the last good one
    expect(shedder.setEventLoop(7)).toBe(1) // clamped to 1
    expect(shedder.setEventLoop(-1)).toBe(0) // and to 0
    shedder.setEventLoop(1)
    // Strictly by criticality: SHEDDABLE arrived within two sampling intervals, so the
    // event-loop signal sheds SHEDDABLE only, not the levels above it.
    expect(admitted(shedder, 1500)).toEqual(["CRITICAL_PLUS", "CRITICAL", "SHEDDABLE_PLUS"])
    // Once only CRITICAL work arrives, the loop's load is CRITICAL's: it sheds CRITICAL
    // (1.0) but never CRITICAL_PLUS (1.1).
    const critical = (level: Level, now: number) => {
      const ok = enter(shedder, level, now)
      if (ok) shedder.leave(level, now)
      return ok
    }
    expect(critical("CRITICAL_PLUS", 3000)).toBe(true)
    expect(critical("CRITICAL", 3000)).toBe(false)
    expect(shedder.wouldShed("SHEDDABLE_PLUS", 3000)).toBe(true)
    // a SHEDDABLE_PLUS arrival (shed) lifts the signal off CRITICAL again, from the next
    // instant on: within one instant every decision sees the same cover
    expect(critical("SHEDDABLE_PLUS", 3000)).toBe(false)
    expect(critical("CRITICAL", 3000)).toBe(false)
    expect(critical("CRITICAL", 3001)).toBe(true)
    shedder.setEventLoop(0.1)
    expect(admitted(shedder, 8001)).toEqual(levels)
  })

  it("strictly by criticality: SHEDDABLE work in flight never gets CRITICAL within capacity shed", () => {
    const shedder = LoadShedder.make({ capacity: 10, smoothing: 100 })
    // 9 SHEDDABLE fill the shedder past SHEDDABLE's threshold (0.8)
    for (let i = 0; i < 9; i++) expect(enter(shedder, "SHEDDABLE", 0)).toBe(true)
    let now = 2000
    expect(enter(shedder, "SHEDDABLE", now)).toBe(false)
    expect(shedder.utilization(now)).toBeCloseTo(0.9, 6)
    // CRITICAL is judged by CRITICAL work only: admitted while CRITICAL's own smoothed
    // work is below capacity (10 in flight smooth to just under 1.0, so an 11th still
    // enters), shed once it reaches it, though the total is far past 1.
    for (let i = 0; i < 11; i++) {
      expect(enter(shedder, "CRITICAL", now)).toBe(true)
      now += 2000
    }
    expect(shedder.activeOf("CRITICAL")).toBe(11)
    expect(shedder.activeOf("SHEDDABLE")).toBe(9)
    expect(shedder.levelUtilization("CRITICAL", now)).toBeCloseTo(1.1, 6)
    expect(shedder.utilization(now)).toBeCloseTo(2, 6)
    expect(enter(shedder, "CRITICAL", now)).toBe(false)
    expect(enter(shedder, "CRITICAL_PLUS", now)).toBe(true)
    for (let i = 0; i < 11; i++) shedder.leave("CRITICAL", now)
    for (let i = 0; i < 9; i++) shedder.leave("SHEDDABLE", now)
    shedder.leave("CRITICAL_PLUS", now)
    expect(shedder.active).toBe(0)
    expect(levels.map((l) => shedder.activeOf(l))).toEqual([0, 0, 0, 0])
  })

  it("misordered and bad options throw a RangeError", () => {
    expect(LoadShedder.misordered(LoadShedder.defaultThresholds)).toBeUndefined()
    expect(LoadShedder.misordered({ ...LoadShedder.defaultThresholds, CRITICAL: 0.7 })).toEqual({
      level: "CRITICAL",
      lower: "SHEDDABLE_PLUS"
    })
    expect(LoadShedder.misordered({ ...LoadShedder.defaultThresholds, CRITICAL_PLUS: 0.95 })).toEqual({
      level: "CRITICAL_PLUS",
      lower: "CRITICAL"
    })
    const t = LoadShedder.defaultThresholds
    const cases: Array<LoadShedder.Options> = [
      { capacity: 0, smoothing: 1000 },
      { capacity: -3, smoothing: 1000 },
      { capacity: Number.NaN, smoothing: 1000 },
      { capacity: 1, smoothing: 0 },
      { capacity: 1, smoothing: 1000, thresholds: { ...t, CRITICAL: 0.7 } },
      { capacity: 1, smoothing: 1000, thresholds: { ...t, SHEDDABLE: 0 } },
      { capacity: 1, smoothing: 1000, thresholds: { ...t, CRITICAL_PLUS: 0.95 } },
      { capacity: 1, smoothing: 1000, eventLoop: { interval: 0 } }
    ]
    for (const options of cases) expect(() => LoadShedder.make(options)).toThrow(RangeError)
    expect(
      LoadShedder.make({ capacity: 1, smoothing: 1, thresholds: { ...t, CRITICAL_PLUS: Infinity } })
        .thresholds.CRITICAL_PLUS
    ).toBe(Infinity)
  })
})

const level = fc.constantFrom<Level>(...levels)

const command = fc.oneof(
  // Work that arrives and stays in flight until a "finish".
  fc.record({
    _tag: fc.constant("arrive" as const),
    levels: fc.array(level, { minLength: 1, maxLength: 12 })
  }),
  fc.record({ _tag: fc.constant("advance" as const), millis: fc.integer({ min: 1, max: 5_000 }) }),
  fc.record({ _tag: fc.constant("finish" as const), count: fc.integer({ min: 0, max: 12 }) }),
  // Instant requests at several levels, in random order, at one instant.
  fc.record({ _tag: fc.constant("probe" as const), levels: fc.array(level, { minLength: 1, maxLength: 8 }) }),
  fc.record({ _tag: fc.constant("eventLoop" as const), value: fc.double({ min: 0, max: 1, noNaN: true }) })
)

// Four positive thresholds, sorted so they do not decrease with criticality.
const thresholds = fc
  .array(fc.double({ min: 0.05, max: 2, noNaN: true }), { minLength: 4, maxLength: 4 })
  .map((xs) => [...xs].sort((a, b) => a - b))
  .map(([a, b, c, d]) => ({ SHEDDABLE: a!, SHEDDABLE_PLUS: b!, CRITICAL: c!, CRITICAL_PLUS: d! }))

describe("LoadShedder (property)", () => {
  it("never sheds CRITICAL_PLUS while a lower level is being admitted: admitted levels form an upper set", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 20 }),
        thresholds,
        fc.array(command, { minLength: 1, maxLength: 25 }),
        (capacity, t, commands) => {
          const shedder = LoadShedder.make({
            capacity,
            thresholds: t,
            smoothing: 1000,
            eventLoop: { interval: 1000 }
          })
          const holders: Array<Level> = []
          let now = 0
          // Decisions taken at the current instant (utilization is constant within an instant).
          let instant: Array<[Level, boolean]> = []
          for (const c of commands) {
            switch (c._tag) {
              case "advance":
                now += c.millis
                instant = []
                break
              case "eventLoop":
                shedder.setEventLoop(c.value)
                instant = []
                break
              case "finish":
                for (const l of holders.splice(0, c.count)) shedder.leave(l, now)
                break
              case "arrive":
              case "probe":
                for (const l of c.levels) {
                  const ok = enter(shedder, l, now)
                  if (ok && c._tag === "arrive") holders.push(l)
                  else if (ok) shedder.leave(l, now)
                  instant.push([l, ok])
                }
                break
            }
            for (const [a, okA] of instant) {
              for (const [b, okB] of instant) if (okA && rank(b) >= rank(a)) expect(okB).toBe(true)
            }
          }
          for (const l of holders) shedder.leave(l, now)
          expect(shedder.active).toBe(0)
        }
      ),
      { numRuns: 200 }
    )
  })

  it("strictly by criticality: a level is not shed while its own work and above stayed below its share, unless the loop is busy with it alone", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 20 }),
        thresholds,
        fc.array(command, { minLength: 1, maxLength: 30 }),
        (capacity, t, commands) => {
          const shedder = LoadShedder.make({
            capacity,
            thresholds: t,
            smoothing: 1000,
            eventLoop: { interval: 1000 }
          })
          const holders: Array<Level> = []
          // The most work of each level and above ever in flight: the smoothed work
          // (an average of the past) can never exceed it.
          const peak = [0, 0, 0, 0]
          // Arrival times per level: cover comes from arrivals of earlier instants only.
          const arrivals: Array<Array<number>> = [[], [], [], []]
          let now = 0
          for (const c of commands) {
            switch (c._tag) {
              case "advance":
                now += c.millis
                break
              case "eventLoop":
                shedder.setEventLoop(c.value)
                break
              case "finish":
                for (const l of holders.splice(0, c.count)) shedder.leave(l, now)
                break
              case "arrive":
              case "probe":
                for (const l of c.levels) {
                  const r = rank(l)
                  const belowShare = peak[r]! < t[l] * capacity
                  const loopNotOnIt =
                    shedder.eventLoop < t[l] ||
                    arrivals.slice(0, r).some((times) => times.some((at) => at < now && now - at <= 2000))
                  const ok = enter(shedder, l, now)
                  if (belowShare && loopNotOnIt) expect(ok).toBe(true)
                  arrivals[r]!.push(now)
                  if (ok && c._tag === "arrive") holders.push(l)
                  else if (ok) shedder.leave(l, now)
                  for (let i = 0; i < 4; i++) {
                    peak[i] = Math.max(peak[i]!, holders.filter((h) => rank(h) >= i).length)
                  }
                }
                break
            }
          }
          for (const l of holders) shedder.leave(l, now)
          expect(shedder.active).toBe(0)
        }
      ),
      { numRuns: 200 }
    )
  })

  it("issues name every field out of range; absent thresholds and smoothing take the defaults", () => {
    const paths = (options: LoadShedder.Options) => LoadShedder.issues(options).map((i) => i.path)
    expect(LoadShedder.issues({ capacity: 1 })).toEqual([])
    expect(paths({ capacity: 0, smoothing: 0, eventLoop: { interval: -1 } })).toEqual([
      ["capacity"],
      ["smoothing"],
      ["eventLoop", "interval"]
    ])
    expect(paths({ capacity: 1, thresholds: { SHEDDABLE: 0, CRITICAL: Number.NaN } })).toEqual([
      ["thresholds", "SHEDDABLE"],
      ["thresholds", "CRITICAL"]
    ])
    // a partial set is ordered against the defaults of the levels it leaves out
    expect(LoadShedder.issues({ capacity: 1, thresholds: { CRITICAL: 0.7 } })).toEqual([
      {
        path: ["thresholds", "CRITICAL"],
        message:
          "thresholds.CRITICAL (0.7) must not be below thresholds.SHEDDABLE_PLUS (0.9): a more critical level may not be shed first"
      }
    ])
    expect(LoadShedder.issues({ capacity: 1, thresholds: { CRITICAL_PLUS: Infinity } })).toEqual([])
    const shedder = LoadShedder.make({ capacity: 2, thresholds: { SHEDDABLE: 0.5 } })
    expect(shedder.thresholds).toEqual({ ...LoadShedder.defaultThresholds, SHEDDABLE: 0.5 })
    expect(shedder.eventLoopInterval).toBeUndefined()
    expect(LoadShedder.make({ capacity: 2, eventLoop: {} }).eventLoopInterval).toBe(
      LoadShedder.defaults.eventLoopInterval
    )
    // the default time constant: half-way to a step after ln 2 seconds
    shedder.utilization(0)
    shedder.admit("CRITICAL")
    expect(shedder.utilization(Math.LN2 * LoadShedder.defaults.smoothing)).toBeCloseTo(0.25, 12)
  })
})

import { CongestionWindow, LimitAlgorithm } from "@sluice/adaptive"
import { Options } from "@sluice/core"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit } from "effect"

type Sample = LimitAlgorithm.Sample
const success = (inFlight: number, id = 0, nextId = id + 1): Sample => ({
  id,
  nextId,
  outcome: "success",
  rtt: 10,
  inFlight,
  now: 0
})
const drop = (id: number, nextId: number, inFlight = 10): Sample => ({
  id,
  nextId,
  outcome: "dropped",
  rtt: 1,
  inFlight,
  now: 0
})

describe("CongestionWindow", () => {
  it("has the documented defaults", () => {
    const cw = CongestionWindow.unsafeMake()
    expect(cw.cwnd).toBe(20)
    expect(cw.limit).toBe(20)
    expect(cw.ssthresh).toBe(1024)
    expect(cw.options.backoffRatio).toBe(0.5)
    expect(cw.options.variant).toBe("reno")
  })

  it("slow start: +1 per used success, never beyond in-flight + 1", () => {
    const cw = CongestionWindow.unsafeMake()
    expect(cw.onSample(success(20))).toBe(21)
    expect(cw.onSample(success(21))).toBe(22)
    // only 5 in flight: the window may not grow past 6, and does not shrink either
    expect(cw.onSample(success(5))).toBe(22)
    // 22 in flight: capped at 23 even in slow start
    expect(cw.onSample(success(22))).toBe(23)
    expect(cw.onSample(success(22))).toBe(23)
  })

  it("congestion avoidance above ssthresh: +1/cwnd", () => {
    const cw = CongestionWindow.unsafeMake({ ssthresh: 22 })
    expect(cw.onSample(success(100))).toBe(21)
    expect(cw.onSample(success(100))).toBe(22)
    expect(cw.onSample(success(100))).toBeCloseTo(22 + 1 / 22, 12)
    const w = 22 + 1 / 22
    expect(cw.onSample(success(100))).toBeCloseTo(w + 1 / w, 12)
  })

  it("Reno: ssthresh = cwnd × backoffRatio, cwnd = ssthresh; the rest of the burst is ignored", () => {
    const cw = CongestionWindow.unsafeMake({ initial: 30 })
    // permit 5 fails while permits 0..39 have been granted
    expect(cw.onSample(drop(5, 40))).toBe(15)
    expect(cw.ssthresh).toBe(15)
    expect(cw.ignoreBelow).toBe(40)
    // the rest of that burst (ids < 40) counts once
    expect(cw.onSample(drop(6, 41))).toBe(15)
    expect(cw.onSample(drop(39, 45))).toBe(15)
    // above ssthresh now: congestion avoidance
    expect(cw.onSample(success(30, 41, 46))).toBeCloseTo(15 + 1 / 15, 12)
    // a drop from a request sent after the first drop is a new burst
    const w = 15 + 1 / 15
    expect(cw.onSample(drop(40, 50))).toBeCloseTo(w * 0.5, 12)
    expect(cw.ssthresh).toBeCloseTo(w * 0.5, 12)
    expect(cw.ignoreBelow).toBe(50)
  })

  it("Tahoe: cwnd back to the initial value, then slow start up to ssthresh", () => {
    const cw = CongestionWindow.unsafeMake({ variant: "tahoe", initial: 4 })
    for (const expected of [5, 6, 7, 8, 9, 10]) expect(cw.onSample(success(100))).toBe(expected)
    expect(cw.onSample(drop(3, 10))).toBe(4)
    expect(cw.ssthresh).toBe(5)
    expect(cw.onSample(success(100, 10, 11))).toBe(5)
    // at ssthresh: congestion avoidance
    expect(cw.onSample(success(100, 11, 12))).toBeCloseTo(5.2, 12)
  })

  it("backoffRatio 0.9 for a stable capacity: 30 → 27", () => {
    const cw = CongestionWindow.unsafeMake({ initial: 30, backoffRatio: 0.9 })
    expect(cw.onSample(drop(0, 1))).toBeCloseTo(27, 12)
  })

  it("ignored outcomes change nothing; bounds hold", () => {
    const cw = CongestionWindow.unsafeMake({ initial: 2, minLimit: 2, maxLimit: 3 })
    expect(cw.onSample({ ...success(10), outcome: "ignored" })).toBe(2)
    expect(cw.onSample(success(10))).toBe(3)
    expect(cw.onSample(success(10))).toBe(3)
    expect(cw.onSample(drop(5, 6))).toBe(2)
    expect(cw.onSample(drop(6, 7))).toBe(2)
  })

  it.effect("rejects bad options naming the field", () =>
    Effect.gen(function* () {
      const cases: Array<[CongestionWindow.CongestionWindowOptions, RegExp]> = [
        [{ backoffRatio: 0 }, /backoffRatio/],
        [{ backoffRatio: 1 }, /backoffRatio/],
        [{ backoffRatio: 1.5 }, /backoffRatio/],
        [{ initial: -1 }, /initial/],
        [{ ssthresh: 0 }, /ssthresh/],
        [{ minLimit: 5, maxLimit: 3, initial: 4 }, /minLimit/],
        [{ initial: 50, maxLimit: 10 }, /initial/],
        [{ variant: "vegas" as any }, /variant/]
      ]
      for (const [bad, field] of cases) {
        const exit = yield* Effect.exit(CongestionWindow.make(bad))
        expect(Exit.isFailure(exit)).toBe(true)
        if (Exit.isFailure(exit) && exit.cause._tag === "Fail") {
          expect(exit.cause.error).toBeInstanceOf(Options.InvalidOptions)
          expect(exit.cause.error.message).toMatch(field)
        }
        // a factory never throws when made; it reports the bad options when the limiter uses it
        expect(() => CongestionWindow.factory(bad)).not.toThrow()
        expect(() => CongestionWindow.factory(bad)("k")).toThrow(field)
      }
    })
  )
})

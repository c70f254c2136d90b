import * as CongestionWindow from "@sluice/kernel/limit/CongestionWindow"
import type * as Limit from "@sluice/kernel/limit/Limit"
import fc from "fast-check"
import { describe, expect, it } from "vitest"

const make = (config: Partial<CongestionWindow.Config> = {}) =>
  new CongestionWindow.CongestionWindow({
    initial: 20,
    minLimit: 1,
    maxLimit: 1000,
    ssthresh: 1024,
    backoffRatio: 0.5,
    variant: "reno",
    ...config
  })

type Sample = Limit.Sample
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
  it("starts at the initial window and ssthresh; names its variant; needs no clock", () => {
    const cw = make({ variant: "tahoe" })
    expect(cw.cwnd).toBe(20)
    expect(cw.limit).toBe(20)
    expect(cw.ssthresh).toBe(1024)
    expect(cw.name).toBe("congestion-window(tahoe)")
    expect(cw.usesTime).toBe(false)
  })

  it("slow start: +1 per used success, never beyond in-flight + 1", () => {
    const cw = make()
    expect(cw.onSample(success(20))).toBe(21)
    expect(cw.onSample(success(21))).toBe(22)
    // only 5 in flight: the window may not grow past 6, and does not shrink either
    expect(cw.onSample(success(5))).toBe(22)
    // 22 in flight: capped at 23 even in slow start
    expect(cw.onSample(success(22))).toBe(23)
    expect(cw.onSample(success(22))).toBe(23)
  })

  it("congestion avoidance above ssthresh: +1/cwnd", () => {
    const cw = make({ ssthresh: 22 })
    expect(cw.onSample(success(100))).toBe(21)
    expect(cw.onSample(success(100))).toBe(22)
    expect(cw.onSample(success(100))).toBeCloseTo(22 + 1 / 22, 12)
    const w = 22 + 1 / 22
    expect(cw.onSample(success(100))).toBeCloseTo(w + 1 / w, 12)
  })

  it("Reno: ssthresh = cwnd × factor, cwnd = ssthresh; the rest of the burst is ignored", () => {
    const cw = make({ initial: 30 })
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
    const cw = make({ variant: "tahoe", initial: 4 })
    for (const expected of [5, 6, 7, 8, 9, 10]) expect(cw.onSample(success(100))).toBe(expected)
    expect(cw.onSample(drop(3, 10))).toBe(4)
    expect(cw.ssthresh).toBe(5)
    expect(cw.onSample(success(100, 10, 11))).toBe(5)
    // at ssthresh: congestion avoidance
    expect(cw.onSample(success(100, 11, 12))).toBeCloseTo(5.2, 12)
  })

  it("factor 0.9 for a stable capacity: 30 → 27", () => {
    const cw = make({ initial: 30, backoffRatio: 0.9 })
    expect(cw.onSample(drop(0, 1))).toBeCloseTo(27, 12)
  })

  it("ignored outcomes change nothing; bounds hold", () => {
    const cw = make({ initial: 2, minLimit: 2, maxLimit: 3 })
    expect(cw.onSample({ ...success(10), outcome: "ignored" })).toBe(2)
    expect(cw.onSample(success(10))).toBe(3)
    expect(cw.onSample(success(10))).toBe(3)
    expect(cw.onSample(drop(5, 6))).toBe(2)
    expect(cw.onSample(drop(6, 7))).toBe(2)
  })
})

describe("CongestionWindow properties", () => {
  const outcome = fc.constantFrom<Limit.Outcome>("success", "dropped", "ignored")
  it("the window stays in [minLimit, maxLimit], a success never grows it past in-flight + 1, a burst counts once", () => {
    fc.assert(
      fc.property(
        fc.constantFrom<"tahoe" | "reno">("tahoe", "reno"),
        fc.integer({ min: 1, max: 10 }),
        fc.integer({ min: 10, max: 200 }),
        fc.array(fc.tuple(outcome, fc.integer({ min: 1, max: 300 }), fc.nat(5)), { maxLength: 200 }),
        (variant, minLimit, maxLimit, steps) => {
          const cw = make({ variant, minLimit, maxLimit, initial: minLimit })
          let nextId = 0
          for (const [result, inFlight, sent] of steps) {
            nextId += sent
            const id = Math.max(0, nextId - 1)
            const before = cw.cwnd
            const ignoreBelow = cw.ignoreBelow
            const after = cw.onSample({ id, nextId, outcome: result, rtt: 1, inFlight, now: 0 })
            expect(after).toBeGreaterThanOrEqual(minLimit)
            expect(after).toBeLessThanOrEqual(maxLimit)
            if (result === "success") expect(after === before || after <= inFlight + 1).toBe(true)
            if (result === "ignored" || (result === "dropped" && id < ignoreBelow)) expect(after).toBe(before)
          }
        }
      )
    )
  })
})

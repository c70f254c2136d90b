import * as AimdLimit from "@sluice/kernel/limit/AimdLimit"
import * as CongestionWindow from "@sluice/kernel/limit/CongestionWindow"
import * as Fixed from "@sluice/kernel/limit/Fixed"
import * as Limit from "@sluice/kernel/limit/Limit"
import type * as Field from "@sluice/kernel/options/Field"
import * as TempoLimit from "@sluice/kernel/limit/TempoLimit"
import * as VegasLimit from "@sluice/kernel/limit/VegasLimit"
import { describe, expect, it } from "vitest"

const value = <C>(result: Field.Result<C>): C => {
  if (!result.ok) throw new Error(JSON.stringify(result.issues))
  return result.value
}
const fields = <C>(result: Field.Result<C>): Array<string> =>
  result.ok ? [] : result.issues.map((i) => i.path[0]!)

describe("limit options", () => {
  it("the documented defaults", () => {
    expect(value(AimdLimit.configure({}))).toEqual({
      initial: 20,
      minLimit: 1,
      maxLimit: 1000,
      backoffRatio: 0.9
    })
    expect(value(CongestionWindow.configure({}))).toEqual({
      initial: 20,
      minLimit: 1,
      maxLimit: 1000,
      ssthresh: 1024,
      backoffRatio: 0.5,
      variant: "reno"
    })
    expect(value(VegasLimit.configure({}))).toEqual({
      initial: 20,
      minLimit: 1,
      maxLimit: 1000,
      alpha: 3,
      beta: 6,
      smoothing: 1,
      backoffRatio: 0.9,
      probeMultiplier: 30
    })
    expect(value(TempoLimit.configure({}))).toEqual({
      initial: 20,
      minLimit: 1,
      maxLimit: Infinity,
      startupGain: 1.25,
      cut: 0.6,
      probeSize: 2,
      probeEvery: 8,
      firstProbe: 5,
      probeDeadline: 1.5,
      headroom: 1.25
    })
    expect(value(Fixed.configure({ limit: 10 }))).toEqual({ limit: 10 })
  })

  it("a default initial is clamped into the bounds; an explicit one outside them is an issue", () => {
    expect(value(VegasLimit.configure({ maxLimit: 8 })).initial).toBe(8)
    expect(value(AimdLimit.configure({ minLimit: 30, maxLimit: 40 })).initial).toBe(30)
    expect(value(CongestionWindow.configure({ maxLimit: Infinity })).maxLimit).toBe(Infinity)
    expect(fields(VegasLimit.configure({ initial: 50, maxLimit: 8 }))).toEqual(["initial"])
    expect(fields(AimdLimit.configure({ minLimit: 10, maxLimit: 5, initial: 7 }))).toContain("minLimit")
  })

  it("bad fields are named", () => {
    expect(fields(AimdLimit.configure({ backoffRatio: 1 }))).toEqual(["backoffRatio"])
    expect(fields(AimdLimit.configure({ initial: 2.5, minLimit: -1 }))).toEqual(["initial", "minLimit"])
    expect(fields(CongestionWindow.configure({ backoffRatio: 2, variant: "vegas" }))).toEqual([
      "backoffRatio",
      "variant"
    ])
    expect(fields(VegasLimit.configure({ alpha: 6, beta: 3 }))).toEqual(["alpha"])
    expect(fields(VegasLimit.configure({ smoothing: 0, probeMultiplier: 1.5 }))).toEqual([
      "smoothing",
      "probeMultiplier"
    ])
    expect(fields(TempoLimit.configure({ cut: 1.5, probeSize: 2.5, maxLimit: 0 }))).toEqual([
      "maxLimit",
      "cut",
      "probeSize"
    ])
    expect(fields(TempoLimit.configure({ initial: 5, minLimit: 10 }))).toEqual(["minLimit"])
    // TempoLimit's window may be fractional; the bounded algorithms' may not
    expect(value(TempoLimit.configure({ initial: 2.5, minLimit: 0.5 })).initial).toBe(2.5)
    expect(fields(Fixed.configure({ limit: 0 }))).toEqual(["limit"])
    expect(fields(Fixed.configure({}))).toEqual(["limit"])
  })

  it("a limit hears success and dropped as they are, any other outcome as ignored", () => {
    expect(Limit.sampleOutcome("success")).toBe("success")
    expect(Limit.sampleOutcome("dropped")).toBe("dropped")
    for (const outcome of ["refused", "ignored", "failed"] as const)
      expect(Limit.sampleOutcome(outcome)).toBe("ignored")
  })
})

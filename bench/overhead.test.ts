// Smoke test: the overhead benchmark runs in its short mode and prints the JSON the
// README quotes. Shape and sanity only: speed depends on the machine, so it is not asserted.
import { describe, expect, it } from "vitest"
import { runScript } from "./runScript.js"

describe("bench:overhead --quick --json", () => {
  it("prints one JSON object with the per-call figures", { timeout: 120_000 }, async () => {
    const { stdout } = await runScript("bench/overhead.ts", ["--json", "--quick"])
    const lines = stdout.trim().split("\n")
    // --json: nothing but the object on stdout
    expect(lines).toHaveLength(1)
    const result = JSON.parse(lines[0]!)
    expect(Object.keys(result).sort()).toEqual(
      [
        "addedNsPerCall",
        "bareNsPerCall",
        "cockatielNsPerCall",
        "floorNsPerCall",
        "floorVsCockatiel",
        "limiterAloneNsPerCall",
        "limiterAloneVsStack",
        "mode",
        "naiveEffectNsPerCall",
        "ratioVsCockatiel",
        "ratioVsNaiveEffect",
        "sluiceNsPerCall"
      ].sort()
    )
    for (const key of ["bareNsPerCall", "sluiceNsPerCall", "naiveEffectNsPerCall", "cockatielNsPerCall"]) {
      expect(Number.isFinite(result[key]), key).toBe(true)
      expect(result[key], key).toBeGreaterThan(0)
    }
    // derived fields agree with the measured ones (up to the rounding of the output)
    expect(result.addedNsPerCall).toBeCloseTo(result.sluiceNsPerCall - result.bareNsPerCall, 0)
    expect(result.ratioVsCockatiel).toBeCloseTo(result.sluiceNsPerCall / result.cockatielNsPerCall, 2)
    expect(result.floorVsCockatiel).toBeCloseTo(result.floorNsPerCall / result.cockatielNsPerCall, 2)
  })

  it("--effect3 adds the 3.x line, measured in effect3/, and the goal", { timeout: 180_000 }, async () => {
    const { stdout } = await runScript("bench/overhead.ts", ["--json", "--quick", "--effect3"], 150_000)
    const lines = stdout.trim().split("\n")
    expect(lines).toHaveLength(1)
    const result = JSON.parse(lines[0]!)
    expect(Object.keys(result)).toEqual(
      expect.arrayContaining(["sluiceNsPerCall", "effect3", "lines", "goal"])
    )
    const effect3 = result.effect3
    // the child resolved Effect 3, not this root's Effect 4
    expect(effect3.effect).toMatch(/^3\./)
    expect(effect3.mode).toBe("sync")
    for (const key of ["sluiceNsPerCall", "cockatielNsPerCall", "floorNsPerCall"]) {
      expect(Number.isFinite(effect3[key]), key).toBe(true)
      expect(effect3[key], key).toBeGreaterThan(0)
    }
    expect(effect3.ratioVsCockatiel).toBeCloseTo(effect3.sluiceNsPerCall / effect3.cockatielNsPerCall, 2)
    expect(effect3.floorVsCockatiel).toBeCloseTo(effect3.floorNsPerCall / effect3.cockatielNsPerCall, 2)
    expect(result.lines).toEqual({
      effect4: { ratioVsCockatiel: result.ratioVsCockatiel, floorVsCockatiel: result.floorVsCockatiel },
      effect3: { ratioVsCockatiel: effect3.ratioVsCockatiel, floorVsCockatiel: effect3.floorVsCockatiel }
    })
    expect(result.goal.ratioVsCockatiel).toEqual({
      value: result.ratioVsCockatiel,
      max: 1,
      met: result.ratioVsCockatiel <= 1
    })
  })
})

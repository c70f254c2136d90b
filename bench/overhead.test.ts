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
})

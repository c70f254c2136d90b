import { describe, expect, it } from "@effect/vitest"
import { runScript } from "./runScript.js"

describe("bench/sim-sweep.ts", () => {
  it("prints one JSON object with the best settings (short grid)", async () => {
    const { stdout } = await runScript("bench/sim-sweep.ts", ["--quick"])
    const result = JSON.parse(stdout)
    expect(result).toMatchObject({
      benchmark: "sim-sweep",
      settings: 3,
      goals: { overloadRatio: 1.05, overloadFailed: 20, capacityDropRatio: 1.15 }
    })
    const rows = result.topOverload as Array<{
      setting: string
      overloadRatio: number
      capacityDropRatio: number
    }>
    expect(rows.map((r) => r.setting)).toContain("unpaced")
    // no client beats the clairvoyant optimum, and the list is sorted
    for (const r of rows) expect(r.overloadRatio).toBeGreaterThanOrEqual(1)
    expect(rows.map((r) => r.overloadRatio)).toEqual(
      [...rows.map((r) => r.overloadRatio)].sort((a, b) => a - b)
    )
    expect(result.bestOverload).toEqual(rows[0])
    expect(Math.min(...rows.map((r) => r.capacityDropRatio))).toBe(result.bestCapacityDrop.capacityDropRatio)
  }, 120_000)
})

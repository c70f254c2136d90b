// Smoke test: the hedging benchmark runs in its short mode (a real server, hedging and plain
// clients, the tail and the overload phases) and prints the JSON bench/README.md quotes. Shape
// and sanity only: latencies and goodput depend on the machine, so no goal is asserted.
import { describe, expect, it } from "vitest"
import { runScript } from "./runScript.js"

describe("bench:hedge --quick --json", () => {
  it(
    "prints one JSON object with the tail and overload figures and the goals",
    { timeout: 180_000 },
    async () => {
      const { stdout } = await runScript(
        "bench/hedge.ts",
        ["--json", "--quick", "--median-ms", "200"],
        150_000
      )
      const lines = stdout.trim().split("\n")
      expect(lines).toHaveLength(1)
      const result = JSON.parse(lines[0]!)
      for (const key of ["p50Ms", "p99NoHedgeMs", "p99HedgeMs", "extraRequestRatio", "overload", "goals"])
        expect(result).toHaveProperty(key)
      expect(result.p50Ms).toBeGreaterThan(0)
      expect(result.p99NoHedgeMs).toBeGreaterThanOrEqual(result.p50Ms)
      expect(result.p99HedgeMs).toBeGreaterThan(0)
      // at most one hedge per request (maxHedges 1)
      expect(result.extraRequestRatio).toBeGreaterThanOrEqual(0)
      expect(result.extraRequestRatio).toBeLessThanOrEqual(1)
      const overload = result.overload
      for (const key of ["hedgeShare", "goodputRatio", "goodputRatioNoHedge"]) {
        expect(typeof overload[key]).toBe("number")
        expect(overload[key]).toBeGreaterThanOrEqual(0)
      }
      expect(overload.hedgeShare).toBeLessThanOrEqual(1)
      expect(overload.offeredRps).toBeCloseTo(overload.capacityRps * 10, 0)
      const goals = result.goals
      expect(goals.met).toBe(
        goals.p99Ratio.value >= 4 &&
          goals.extraRequests.value <= 0.06 &&
          goals.hedgeShare.value <= 0.01 &&
          goals.goodput.value >= goals.goodput.minOfNoHedge
      )
      expect(result.machine.loadAverage).toHaveLength(3)
    }
  )
})

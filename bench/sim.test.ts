import { describe, expect, it } from "@effect/vitest"
import { execFile } from "node:child_process"
import { promisify } from "node:util"

describe("bench:sim", () => {
  it("prints one JSON object with the wall times (short mode)", async () => {
    const { stdout } = await promisify(execFile)("npm", ["run", "--silent", "bench:sim", "--", "--short"], {
      cwd: new URL("..", import.meta.url).pathname
    })
    const result = JSON.parse(stdout)
    expect(result).toMatchObject({ benchmark: "sim", mode: "short", scenario: "overload-200" })
    expect(typeof result.loadAverage1m).toBe("number")
    expect(result.exponential.runs).toBe(1)
    expect(result.exponential.wallMs).toHaveLength(1)
    expect(result.exponential.medianWallMs).toBeGreaterThan(0)
    expect(result.exponential.attempts).toBeGreaterThan(200)
    expect(result.exponential.targetMs).toBe(2000)
    expect(result.exponential.withinTarget).toBeNull() // targets apply to the full run only
    expect(result.demo.strategies.map((s: { strategy: string }) => s.strategy)).toEqual(
      expect.arrayContaining([
        "naive",
        "exponential",
        "exponential-budget",
        "cwnd-tahoe",
        "cwnd-reno",
        "aimd"
      ])
    )
    for (const s of result.demo.strategies) {
      expect(s.wallMs).toBeGreaterThan(0)
      expect(s.attempts).toBeGreaterThan(0)
    }
    expect(result.demo.totalWallMs).toBeGreaterThan(0)
    expect(result.demo.targetMs).toBe(20000)
  }, 120_000)
})

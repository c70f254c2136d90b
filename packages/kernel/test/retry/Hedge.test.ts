import { describe, expect, it } from "vitest"
import { Delay, verdict } from "@sluice/kernel/retry/Hedge"

const config = { maxHedges: 2, delayMillis: undefined, quantile: 0.9, minSamples: 5, windowMillis: 10_000 }

describe("retry/Hedge", () => {
  it("verdict: max, then a failure, then a pause, and spends budget only when nothing else refused", () => {
    let asked = 0
    const withdraw = (granted: boolean) => () => (asked++, granted)
    expect(verdict({ sent: 2, failed: false, paused: false }, config, withdraw(true))).toBe("max")
    expect(verdict({ sent: 0, failed: true, paused: false }, config, withdraw(true))).toBe("failed")
    expect(verdict({ sent: 0, failed: false, paused: true }, config, withdraw(true))).toBe("paused")
    expect(asked).toBe(0)
    expect(verdict({ sent: 0, failed: false, paused: false }, config, withdraw(false))).toBe("budget")
    expect(verdict({ sent: 1, failed: false, paused: false }, config, withdraw(true))).toBe("hedge")
    expect(asked).toBe(2)
  })

  it("Delay: a fixed delay only after minSamples successful calls in the window (at once with minSamples 0)", () => {
    expect(new Delay({ ...config, delayMillis: 40, minSamples: 0 }).millis(0)).toBe(40)
    const fixed = new Delay({ ...config, delayMillis: 40 })
    for (let i = 1; i <= 4; i++) {
      expect(fixed.millis(i)).toBeUndefined()
      fixed.record(i, 1_000)
    }
    // the fifth sample warms it: the delay stays the fixed one whatever the latencies were
    fixed.record(5, 1_000)
    expect(fixed.millis(6)).toBe(40)
    // and a key not heard from for a window is cold again
    expect(fixed.millis(20_006)).toBeUndefined()
  })

  it("Delay: a learned one only after minSamples, as the quantile of the window", () => {
    expect(new Delay({ ...config, minSamples: 0 }).millis(0)).toBeUndefined()
    const learned = new Delay(config)
    for (let i = 1; i <= 4; i++) learned.record(i, 10 * i)
    expect(learned.millis(5)).toBeUndefined()
    for (let i = 5; i <= 10; i++) learned.record(i, 10 * i)
    // p90 of 10, 20, …, 100 (rank 8 of 0..9): 90, within the window's 1% accuracy
    expect(learned.millis(11)).toBeCloseTo(90, -0.5)
    // the window forgets: ten seconds later nothing is known, so no hedge
    expect(learned.millis(20_011)).toBeUndefined()
  })
})

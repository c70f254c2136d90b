import * as QuotaOptions from "@sluice/kernel/quota/QuotaOptions"
import { SustainedFailure } from "@sluice/kernel/quota/SustainedFailure"
import { describe, expect, it } from "vitest"

const make = (overrides: Partial<QuotaOptions.Breaker> = {}) =>
  new SustainedFailure({ ...QuotaOptions.defaults.breaker, ...overrides })

describe("quota store: sustained failure feeds the breaker", () => {
  it("one stall (every call in flight failing at once) does not trip", () => {
    const rule = make()
    for (let i = 0; i < 32; i++) expect(rule.failure(1000)).toBe(false)
    expect(rule.suspect).toBe(false)
  })

  it("consecutive failures trip once they span minFailureSpan", () => {
    const rule = make({ minimumCalls: 1000 })
    for (let i = 0; i < 4; i++) expect(rule.failure(1000 + i * 100)).toBe(false)
    // the fifth in a row, 400 ms after the first: consecutive, but the ratio needs 1000 calls
    expect(rule.failure(1400)).toBe(true)
    expect(rule.suspect).toBe(true)
  })

  it("a success ends the run of failures", () => {
    const rule = make({ minimumCalls: 1000 })
    for (let i = 0; i < 4; i++) rule.failure(1000 + i * 100)
    rule.success()
    expect(rule.failure(1400)).toBe(false)
  })

  it("an episode trips on its failure ratio once it spans minFailureSpan with minimumCalls", () => {
    const rule = make({ consecutiveFailures: 1000, minimumCalls: 4, failureRatio: 0.5 })
    expect(rule.failure(0)).toBe(false)
    rule.success()
    expect(rule.failure(100)).toBe(false)
    rule.success()
    // 5 calls, 3 failed, but only 200 ms since the episode began
    expect(rule.failure(200)).toBe(false)
    rule.success()
    rule.success()
    // 8 calls, 4 failed (0.5), 250 ms: trips
    expect(rule.failure(250)).toBe(true)
  })

  it("below the ratio it does not trip; a failure after the window starts a new episode", () => {
    const rule = make({ consecutiveFailures: 1000, minimumCalls: 2, failureRatio: 0.5, windowMs: 1000 })
    rule.failure(0)
    for (let i = 0; i < 10; i++) rule.success()
    expect(rule.failure(300)).toBe(false) // 2 of 12
    // the window has forgotten both failures: the episode starts again here
    expect(rule.failure(5000)).toBe(false)
    rule.success()
    expect(rule.failure(5300)).toBe(true) // 2 of 3 over 300 ms
  })

  it("closed() forgets the episode and the suspicion", () => {
    const rule = make({ minFailureSpanMs: 0, consecutiveFailures: 1 })
    expect(rule.failure(0)).toBe(true)
    rule.closed()
    expect(rule.suspect).toBe(false)
    const strict = make({ minimumCalls: 1000 })
    for (let i = 0; i < 4; i++) strict.failure(i * 100)
    strict.closed()
    expect(strict.failure(400)).toBe(false)
  })
})

import * as Policy from "@sluice/kernel/retry/Retry"
import { describe, expect, it } from "vitest"

const marked = Symbol("retryable")
const judge = (overrides: Partial<Policy.Judge> = {}): Policy.Judge => ({
  maxAttempts: 3,
  maxRetryAfterMillis: 30_000,
  isRetryable: (error) =>
    ["Overloaded", "QuotaExceeded"].includes((error as any)?._tag) || (error as any)?.[marked],
  isRetryableType: (error) => ["Overloaded", "QuotaExceeded"].includes((error as any)?._tag),
  millisOf: (hint) => (typeof hint === "number" ? hint : undefined),
  ...overrides
})

const overloaded = (fields: object = {}) => ({ _tag: "Overloaded", reason: "server", ...fields })
const quota = (retryAfter?: unknown) => ({ _tag: "QuotaExceeded", retryAfter })

describe("Policy.verdict", () => {
  it("passes on what a lower layer gave up on and local refusals that are never retried", () => {
    for (const tag of ["DontRetry", "Throttled", "CircuitOpen"]) {
      const asked: Array<unknown> = []
      const verdict = Policy.verdict({ _tag: tag }, 1, judge({ isRetryable: (e) => asked.push(e) > 0 }))
      expect(verdict).toBe("pass")
      // the policy's predicate is not asked about them
      expect(asked).toEqual([])
    }
  })

  it("work this process refused itself is refused, whatever the predicate says", () => {
    expect(Policy.verdict(overloaded({ origin: "local" }), 1, judge())).toBe("refused")
    expect(Policy.verdict({ ...quota(10), origin: "local" }, 2, judge())).toBe("refused")
    expect(Policy.verdict(overloaded({ origin: "remote" }), 1, judge())).toBe("retry")
  })

  it("a quota that resets later than maxRetryAfter (or says nonsense) is not retryable", () => {
    expect(Policy.verdict(quota(1000), 1, judge())).toBe("retry")
    expect(Policy.verdict(quota(), 1, judge())).toBe("retry")
    expect(Policy.verdict(quota(30_000), 1, judge())).toBe("retry")
    expect(Policy.verdict(quota(30_001), 1, judge())).toBe("not-retryable")
    expect(Policy.verdict(quota(-1), 1, judge())).toBe("not-retryable")
    expect(Policy.verdict(quota(Number.NaN), 1, judge())).toBe("not-retryable")
    expect(Policy.verdict(quota(1000), 1, judge({ maxRetryAfterMillis: 500 }))).toBe("not-retryable")
  })

  it("retries until maxAttempts tries were made, the first included", () => {
    expect(Policy.verdict(overloaded(), 1, judge())).toBe("retry")
    expect(Policy.verdict(overloaded(), 2, judge())).toBe("retry")
    expect(Policy.verdict(overloaded(), 3, judge())).toBe("attempts")
    expect(Policy.verdict(overloaded(), 1, judge({ maxAttempts: 1 }))).toBe("attempts")
    expect(Policy.verdict({ _tag: "Boom", [marked]: true }, 2, judge())).toBe("retry")
  })

  it("a retryable type the predicate does not retry gives up; anything else passes untouched", () => {
    const never = judge({ isRetryable: () => false })
    expect(Policy.verdict(overloaded(), 1, never)).toBe("not-retryable")
    expect(Policy.verdict(quota(5), 2, never)).toBe("not-retryable")
    expect(Policy.verdict(new Error("boom"), 1, never)).toBe("pass")
    expect(Policy.verdict("boom", 1, judge())).toBe("pass")
    expect(Policy.verdict(undefined, 1, judge())).toBe("pass")
  })
})

describe("Policy.nextDelay", () => {
  it("waits for the schedule, or for a longer server hint", () => {
    expect(Policy.nextDelay(1000, 1100, 0, Infinity)).toBe(100)
    expect(Policy.nextDelay(1000, 1100, 250, Infinity)).toBe(250)
    expect(Policy.nextDelay(1000, 1100, 50, Infinity)).toBe(100)
    // a schedule that asks for the past starts at once
    expect(Policy.nextDelay(1000, 900, 0, Infinity)).toBe(0)
  })

  it("gives up when the schedule is done, or when the try could not start before the deadline", () => {
    expect(Policy.nextDelay(1000, undefined, 0, Infinity)).toBe("attempts")
    expect(Policy.nextDelay(1000, 1100, 0, 1100)).toBe("timeout")
    expect(Policy.nextDelay(1000, 1100, 0, 1101)).toBe(100)
    expect(Policy.nextDelay(1000, 1100, 500, 1200)).toBe("timeout")
    expect(Policy.nextDelay(1000, 1000, 0, 1000)).toBe("timeout")
  })
})

describe("Policy.options", () => {
  it("at most 3 tries and 30-second hints by default; maxAttempts a positive integer", () => {
    expect(Policy.options.maxAttempts.fallback.value).toBe(3)
    expect(Policy.options.maxRetryAfter.fallback.value).toBe(30_000)
    expect(Policy.options.maxAttempts.check(0)).toBe("expected a positive integer, got 0")
    expect(Policy.options.maxAttempts.check(1.5)).toBe("expected a positive integer, got 1.5")
    expect(Policy.options.maxRetryAfter.check(Infinity)).toBe("expected a finite duration, got Infinity")
    expect(Policy.options.maxRetryAfter.check(0)).toBeUndefined()
  })
})

describe("Policy.optionsIssue", () => {
  const isHandle = (u: unknown) => typeof u === "object" && u !== null && "tryWithdraw" in u
  it("isRetryable a predicate; budget a non-empty client key or a handle", () => {
    expect(Policy.optionsIssue({}, isHandle)).toBeUndefined()
    expect(Policy.optionsIssue({ isRetryable: () => true, budget: "api" }, isHandle)).toBeUndefined()
    expect(Policy.optionsIssue({ budget: { tryWithdraw: () => true } }, isHandle)).toBeUndefined()
    expect(Policy.optionsIssue({ isRetryable: true }, isHandle)).toEqual({
      path: ["isRetryable"],
      message: "expected a predicate function"
    })
    for (const budget of ["", 3, {}, null]) {
      expect(Policy.optionsIssue({ budget }, isHandle)).toEqual({
        path: ["budget"],
        message: "expected a RetryBudget.Budget or a non-empty client key"
      })
    }
    // the predicate is judged first
    expect(Policy.optionsIssue({ isRetryable: 1, budget: "" }, isHandle)?.path).toEqual(["isRetryable"])
  })
})

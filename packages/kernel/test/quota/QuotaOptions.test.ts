import * as MemoryStore from "@sluice/kernel/quota/MemoryStore"
import * as QuotaOptions from "@sluice/kernel/quota/QuotaOptions"
import { describe, expect, it } from "vitest"

const ms = (d: number) => d

describe("quota options", () => {
  it("absent fields take the defaults; maxDeadline is the deadline unless set above it", () => {
    expect(QuotaOptions.resolve({}, ms)).toEqual(QuotaOptions.defaults)
    expect(QuotaOptions.defaults).toMatchObject({
      mode: "fallback",
      deadlineMs: 15,
      maxDeadlineMs: 15,
      failClosedRetryAfterMs: 1000,
      fallbackShare: 1,
      fallbackMaxClients: 100_000,
      maxClientIdLength: 256
    })
    expect(QuotaOptions.resolve({ deadline: 50 }, ms)).toMatchObject({ deadlineMs: 50, maxDeadlineMs: 50 })
    expect(QuotaOptions.resolve({ deadline: 50, maxDeadline: 20 }, ms)).toMatchObject({ maxDeadlineMs: 50 })
    expect(QuotaOptions.resolve({ deadline: 50, maxDeadline: 1000 }, ms)).toMatchObject({
      maxDeadlineMs: 1000
    })
  })

  it("a breaker given in part keeps the other defaults", () => {
    const resolved = QuotaOptions.resolve({ breaker: { openFor: 2000, minimumCalls: 3 } }, ms)
    expect(resolved).toMatchObject({
      breaker: { ...QuotaOptions.defaults.breaker, openForMs: 2000, minimumCalls: 3 }
    })
  })

  it("durations go through the binding's conversion", () => {
    const seconds = (s: string) => Number(s) * 1000
    expect(QuotaOptions.resolve({ deadline: "2", breaker: { window: "3" } }, seconds)).toMatchObject({
      deadlineMs: 2000,
      breaker: { windowMs: 3000 }
    })
  })

  it("every field out of range is an issue naming it", () => {
    const issues = QuotaOptions.resolve(
      {
        mode: "sometimes" as QuotaOptions.FailureMode,
        deadline: 0,
        maxDeadline: Infinity,
        breaker: {
          failureRatio: 1.5,
          window: NaN,
          minimumCalls: 0,
          consecutiveFailures: 2.5,
          minFailureSpan: -1,
          openFor: 0,
          halfOpenProbes: -1
        },
        failClosedRetryAfter: 0,
        fallbackShare: 0,
        fallbackMaxClients: 0.5,
        maxClientIdLength: 10
      },
      ms
    )
    expect(Array.isArray(issues)).toBe(true)
    expect((issues as Array<{ path: Array<string> }>).map((i) => i.path.join(".")).sort()).toEqual(
      [
        "mode",
        "deadline",
        "maxDeadline",
        "breaker.failureRatio",
        "breaker.window",
        "breaker.minimumCalls",
        "breaker.consecutiveFailures",
        "breaker.minFailureSpan",
        "breaker.openFor",
        "breaker.halfOpenProbes",
        "failClosedRetryAfter",
        "fallbackShare",
        "fallbackMaxClients",
        "maxClientIdLength"
      ].sort()
    )
  })

  it("edges: a share of 1 and a zero failure span are valid; ids need room for a prefix and a SHA-256", () => {
    expect(QuotaOptions.resolve({ fallbackShare: 1, breaker: { minFailureSpan: 0 } }, ms)).toMatchObject({
      fallbackShare: 1,
      breaker: { minFailureSpanMs: 0 }
    })
    expect(QuotaOptions.resolve({ maxClientIdLength: 80 }, ms)).toMatchObject({ maxClientIdLength: 80 })
    expect(QuotaOptions.resolve({ maxClientIdLength: 79 }, ms)).toEqual([
      {
        path: ["maxClientIdLength"],
        message: "expected at least 80 (a prefix, `#` and 64 hex digits of SHA-256), got 79"
      }
    ])
    // what the binding could not read as a duration names what was given
    expect(QuotaOptions.resolve({ deadline: "soon" }, () => NaN)).toEqual([
      { path: ["deadline"], message: "expected a positive, finite duration, got soon" }
    ])
  })

  it("call arguments: costs, units and block durations", () => {
    expect(QuotaOptions.checkCost(undefined)).toBe(1)
    for (const cost of [0, 1, 7]) expect(QuotaOptions.checkCost(cost)).toBe(cost)
    for (const cost of [1.5, -1, NaN, Infinity, 2 ** 53]) expect(QuotaOptions.checkCost(cost)).toMatch(/cost/)
    expect(QuotaOptions.unitsIssue(3)).toBeUndefined()
    for (const units of [0, -2, 0.5, NaN]) expect(QuotaOptions.unitsIssue(units)).toMatch(/units/)
    expect(QuotaOptions.blockMs(1)).toBe(1)
    expect(QuotaOptions.blockMs(1.2)).toBe(2)
    expect(QuotaOptions.blockMs(0.5)).toMatch(/at least 1 ms/)
    expect(QuotaOptions.blockMs(Infinity, "forever")).toBe(
      "duration must be at least 1 ms and finite, got forever"
    )
  })

  it("the memory store holds at most maxClients clients, 100,000 by default", () => {
    expect(MemoryStore.resolveOptions({})).toEqual({ maxClients: 100_000 })
    expect(QuotaOptions.defaults.fallbackMaxClients).toBe(MemoryStore.DEFAULT_MAX_CLIENTS)
    expect(MemoryStore.resolveOptions({ maxClients: 5 })).toEqual({ maxClients: 5 })
    for (const maxClients of [0, -1, 1.5, NaN]) {
      expect(MemoryStore.resolveOptions({ maxClients })).toEqual([
        { path: ["maxClients"], message: `expected a positive integer, got ${maxClients}` }
      ])
    }
  })

  it("issues read as one line each, the field's path first", () => {
    expect(
      QuotaOptions.describeIssues([
        { path: ["breaker", "window"], message: "expected a positive, finite duration, got 0" },
        { path: ["mode"], message: "expected one of fail-open, fail-closed, fallback, got x" }
      ])
    ).toBe(
      "breaker.window: expected a positive, finite duration, got 0\nmode: expected one of fail-open, fail-closed, fallback, got x"
    )
  })
})

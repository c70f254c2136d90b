import * as ErrorBody from "@sluice/kernel/wire/ErrorBody"
import * as ErrorResponse from "@sluice/kernel/wire/ErrorResponse"
import * as Headers from "@sluice/kernel/wire/Headers"
import * as Verdict from "@sluice/kernel/wire/Verdict"
import fc from "fast-check"
import { describe, expect, it } from "vitest"

const names = Headers.defaultHeaderNames
const answer = (error: ErrorBody.Decoded) => ErrorResponse.answer(error, names)
const quota = { _tag: "QuotaExceeded", tier: "per-key", limit: 5, remaining: 0, retryAfterMs: 1500 } as const

describe("ErrorResponse", () => {
  it("a quota is a 429 with Retry-After and its tier's RateLimit-Policy and RateLimit", () => {
    expect(answer(quota)).toEqual({
      status: 429,
      headers: { "retry-after": "2", "ratelimit-policy": `"per-key";q=5`, ratelimit: `"per-key";r=0;t=2` }
    })
    // one that never resets has no date: "don't retry", and no `t`
    expect(answer({ ...quota, remaining: 5, retryAfterMs: Infinity })).toEqual({
      status: 429,
      headers: { "x-sluice-dont-retry": "1", "ratelimit-policy": `"per-key";q=5`, ratelimit: `"per-key";r=5` }
    })
  })

  it("an overload or an open breaker is a 503 with a hint of whole seconds, at least 1, when there is one", () => {
    expect(answer({ _tag: "Overloaded", reason: "busy" })).toEqual({ status: 503, headers: {} })
    expect(answer({ _tag: "Overloaded", reason: "busy", retryAfterMs: 1 })).toEqual({
      status: 503,
      headers: { "retry-after": "1" }
    })
    expect(answer({ _tag: "Overloaded", reason: "busy", retryAfterMs: 0 })).toEqual({
      status: 503,
      headers: {}
    })
    const open = { _tag: "CircuitOpen", name: "db", halfOpenAt: 0, retryAfterMs: 4200 } as const
    expect(answer(open)).toEqual({ status: 503, headers: { "retry-after": "5" } })
    // a breaker isolated by hand: "don't retry" instead of a date
    expect(answer({ ...open, retryAfterMs: Infinity })).toEqual({
      status: 503,
      headers: { "x-sluice-dont-retry": "1" }
    })
  })

  it("a local throttle and a DontRetry say don't retry; a DontRetry keeps its cause's status and hint", () => {
    expect(answer({ _tag: "Throttled", key: "k" })).toEqual({
      status: 503,
      headers: { "x-sluice-dont-retry": "1" }
    })
    expect(answer({ _tag: "DontRetry", reason: "timeout" })).toEqual({
      status: 503,
      headers: { "x-sluice-dont-retry": "1" }
    })
    expect(answer({ _tag: "DontRetry", reason: "attempts", attempts: 2, cause: quota })).toEqual({
      status: 429,
      headers: {
        "x-sluice-dont-retry": "1",
        "retry-after": "2",
        "ratelimit-policy": `"per-key";q=5`,
        ratelimit: `"per-key";r=0;t=2`
      }
    })
    expect(
      answer({
        _tag: "DontRetry",
        reason: "budget",
        cause: { _tag: "Overloaded", reason: "x", retryAfterMs: 3000 }
      })
    ).toEqual({ status: 503, headers: { "x-sluice-dont-retry": "1", "retry-after": "3" } })
  })

  it("renamed headers are used", () => {
    const renamed = { ...names, dontRetry: "x-acme-final", retryAfter: "x-acme-wait" }
    expect(
      ErrorResponse.answer({ _tag: "DontRetry", reason: "server", cause: { ...quota, tier: "t" } }, renamed)
        .headers
    ).toMatchObject({ "x-acme-final": "1", "x-acme-wait": "2" })
  })

  it("only an overload and an open breaker are answered as a plain retryable 503", () => {
    expect(["Overloaded", "CircuitOpen"].every((t) => ErrorResponse.isRetryable503(t as never))).toBe(true)
    expect(
      ["QuotaExceeded", "Throttled", "DontRetry"].some((t) => ErrorResponse.isRetryable503(t as never))
    ).toBe(false)
  })

  it("property: what a client reads from the status and headers alone is the refusal answered", () => {
    const millis = fc.oneof(fc.nat({ max: 86_400_000 }), fc.constant(Infinity))
    const cause = fc.oneof(
      fc.record({ _tag: fc.constant("Overloaded" as const), reason: fc.string(), retryAfterMs: millis }),
      fc.record({
        _tag: fc.constant("QuotaExceeded" as const),
        tier: fc.stringMatching(/^[a-z]{1,20}$/),
        limit: fc.nat(),
        remaining: fc.nat(),
        retryAfterMs: millis
      })
    )
    const error = fc.oneof(
      cause,
      cause.map((c) => ({ _tag: "DontRetry" as const, reason: "attempts", cause: c }))
    )
    fc.assert(
      fc.property(error, (e) => {
        const read = Verdict.verdict(answer(e), 0, names, Infinity).error
        const inner = e._tag === "DontRetry" ? e.cause : e
        const terminal = e._tag === "DontRetry" || inner.retryAfterMs === Infinity
        expect(read?._tag).toBe(terminal ? "DontRetry" : inner._tag)
        const readInner = read?._tag === "DontRetry" ? read.cause : read
        expect(readInner?._tag).toBe(inner._tag)
        if (inner._tag === "QuotaExceeded")
          expect(readInner).toMatchObject({ tier: inner.tier, limit: inner.limit })
      })
    )
  })
  it("any hint, zero, negative and NaN included: never `Retry-After: 0`, never a negative or NaN hint in the body", () => {
    const hint = fc.oneof(
      fc.constantFrom(0, -0, -1, -1500, NaN, Infinity, -Infinity, 1, 999, 1000, 1001),
      fc.double({ noNaN: false })
    )
    const cause = fc.oneof(
      hint.map((retryAfterMs): ErrorBody.DecodedCause => ({ ...quota, retryAfterMs })),
      hint.map((retryAfterMs): ErrorBody.DecodedCause => ({
        _tag: "Overloaded",
        reason: "busy",
        retryAfterMs
      })),
      hint.map((retryAfterMs): ErrorBody.DecodedCause => ({
        _tag: "CircuitOpen",
        name: "db",
        halfOpenAt: 1,
        retryAfterMs
      }))
    )
    const error = fc.oneof(
      cause,
      cause.map((c): ErrorBody.Decoded => ({ _tag: "DontRetry", reason: "attempts", attempts: 3, cause: c }))
    )
    fc.assert(
      fc.property(error, (e) => {
        const { headers } = answer(e)
        const retryAfter = headers["retry-after"]
        if (retryAfter !== undefined) expect(Number(retryAfter)).toBeGreaterThanOrEqual(1)
        const t = /;t=(\d+)/.exec(headers["ratelimit"] ?? "")
        if (t !== null) expect(Number(t[1])).toBeGreaterThanOrEqual(0)
        const text = JSON.stringify(ErrorBody.encode(e))
        const hints = [...text.matchAll(/"retryAfterMs":("?[^,}"]*"?)/g)].map(
          (m) => JSON.parse(m[1]!) as unknown
        )
        expect(hints.length).toBeGreaterThan(0)
        for (const h of hints) expect(h === "Infinity" || (typeof h === "number" && h >= 0)).toBe(true)
        // and so a Sluice reader decodes the body it is sent
        expect(ErrorBody.parse(text)).toBeDefined()
      }),
      { numRuns: 500 }
    )
  })
})

import * as ErrorBody from "@sluice/kernel/wire/ErrorBody"
import fc from "fast-check"
import { describe, expect, it } from "vitest"

const quota = {
  _tag: "QuotaExceeded",
  tier: "per-key",
  limit: 5,
  remaining: 0,
  retryAfterMs: 750.25
} as const

const every: ReadonlyArray<ErrorBody.Decoded> = [
  { _tag: "Overloaded", reason: "busy" },
  { _tag: "Overloaded", reason: "busy", retryAfterMs: 1500 },
  quota,
  { _tag: "QuotaExceeded", tier: "t", limit: Infinity, remaining: 3, retryAfterMs: 2000 },
  { _tag: "Throttled", key: "backend:8080" },
  { _tag: "Throttled", key: "backend:8080", probability: 0.25 },
  { _tag: "CircuitOpen", name: "db", halfOpenAt: 1_700_000_000_000, retryAfterMs: 4000 },
  { _tag: "CircuitOpen", name: "db", halfOpenAt: Infinity, retryAfterMs: Infinity },
  { _tag: "DontRetry", reason: "timeout" },
  {
    _tag: "DontRetry",
    reason: "attempts",
    attempts: 3,
    cause: { _tag: "Overloaded", reason: "x", retryAfterMs: 1000 }
  },
  { _tag: "DontRetry", reason: "budget", attempts: 2, cause: quota },
  { _tag: "DontRetry", reason: "refused", attempts: 1, cause: { _tag: "Throttled", key: "k" } }
]

describe("ErrorBody", () => {
  it('durations are plain milliseconds, an infinite one the string "Infinity"', () => {
    expect(ErrorBody.encode({ _tag: "Overloaded", reason: "busy", retryAfterMs: 1500 })).toEqual({
      error: { _tag: "Overloaded", reason: "busy", retryAfterMs: 1500 }
    })
    expect(
      JSON.parse(
        JSON.stringify(ErrorBody.encode({ _tag: "DontRetry", reason: "attempts", attempts: 2, cause: quota }))
      )
    ).toEqual({
      error: {
        _tag: "DontRetry",
        reason: "attempts",
        attempts: 2,
        cause: { _tag: "QuotaExceeded", tier: "per-key", limit: 5, remaining: 0, retryAfterMs: 750.25 }
      }
    })
    expect(
      ErrorBody.encode({ _tag: "CircuitOpen", name: "db", halfOpenAt: Infinity, retryAfterMs: Infinity })
    ).toEqual({
      error: { _tag: "CircuitOpen", name: "db", halfOpenAt: "Infinity", retryAfterMs: "Infinity" }
    })
    expect([ErrorBody.portable(NaN), ErrorBody.portable(-Infinity), ErrorBody.portable(-0)]).toEqual([
      "NaN",
      "-Infinity",
      -0
    ])
  })

  it("the codec is lossless for every tag, from the parsed JSON and from its text", () => {
    for (const error of every) {
      const text = JSON.stringify(ErrorBody.encode(error))
      expect(ErrorBody.decode(JSON.parse(text))).toEqual(error)
      expect(ErrorBody.parse(text)).toEqual(error)
      expect(ErrorBody.parse(`  ${text}\n`)).toEqual(error)
    }
  })

  it("long strings are cut; a DontRetry reason this version does not know is kept for the reader", () => {
    const huge = ErrorBody.parse(JSON.stringify({ error: { _tag: "Overloaded", reason: "r".repeat(5000) } }))
    expect(huge?._tag === "Overloaded" && huge.reason.length).toBe(ErrorBody.MAX_STRING + 1)
    expect(
      ErrorBody.parse(`{"error":{"_tag":"DontRetry","reason":"a-reason-from-a-later-version","attempts":2}}`)
    ).toEqual({
      _tag: "DontRetry",
      reason: "a-reason-from-a-later-version",
      attempts: 2
    })
    // an attempt count that is not a whole number is dropped, the rest kept
    expect(ErrorBody.parse(`{"error":{"_tag":"DontRetry","reason":"attempts","attempts":1.5}}`)).toEqual({
      _tag: "DontRetry",
      reason: "attempts"
    })
    // a text longer than a server's own bodies is not Sluice's
    const padded = `{"error":{"_tag":"Overloaded","reason":"${"r".repeat(ErrorBody.MAX_BODY)}"}}`
    expect(ErrorBody.parse(padded)).toBeUndefined()
  })

  it("anything else is not Sluice's encoding", () => {
    const foreign = [
      "",
      "Service Unavailable",
      "{not json",
      "[]",
      "null",
      `{"error":"db down"}`,
      `{"reason":"busy"}`,
      `{"error":{"_tag":"Nope","reason":"x"}}`,
      `{"error":{"_tag":"__proto__"}}`,
      `{"error":{"_tag":"Overloaded","reason":5}}`,
      `{"error":{"_tag":"Overloaded"}}`,
      // Effect Schema's own encoding of a Duration is not ours
      `{"error":{"_tag":"QuotaExceeded","tier":"t","limit":1,"remaining":0,"retryAfter":{"_tag":"Millis","millis":5}}}`,
      `{"error":{"_tag":"QuotaExceeded","tier":"t","limit":-1,"remaining":0,"retryAfterMs":5}}`,
      `{"error":{"_tag":"CircuitOpen","name":"db","halfOpenAt":0,"retryAfterMs":"soon"}}`
    ]
    for (const body of foreign) expect(ErrorBody.parse(body), body).toBeUndefined()
    expect(ErrorBody.decode(null)).toBeUndefined()
    expect(ErrorBody.decode({ error: [] })).toBeUndefined()
    // a negative or mistyped optional hint is dropped, the rest is kept
    expect(ErrorBody.parse(`{"error":{"_tag":"Overloaded","reason":"x","retryAfterMs":-5}}`)).toEqual({
      _tag: "Overloaded",
      reason: "x"
    })
    expect(ErrorBody.parse(`{"error":{"_tag":"Throttled","key":"k","probability":"NaN"}}`)).toEqual({
      _tag: "Throttled",
      key: "k"
    })
  })

  it("property: never throws on any JSON; any error of the encoding survives encode → text → parse", () => {
    fc.assert(
      fc.property(fc.jsonValue(), (json) => {
        const decoded = ErrorBody.decode(json)
        if (decoded !== undefined)
          expect(ErrorBody.decode(JSON.parse(JSON.stringify(ErrorBody.encode(decoded))))).toEqual(decoded)
        ErrorBody.parse(JSON.stringify(json))
      })
    )
    const millis = fc.oneof(
      fc.nat({ max: 86_400_000 }),
      fc.constant(Infinity),
      fc.double({ min: 0, max: 1e9, noNaN: true })
    )
    const reason = fc.string({ maxLength: 300 })
    const cause: fc.Arbitrary<ErrorBody.DecodedCause> = fc.oneof(
      fc.record({ _tag: fc.constant("Overloaded" as const), reason }, { requiredKeys: ["_tag", "reason"] }),
      fc.record({ _tag: fc.constant("Overloaded" as const), reason, retryAfterMs: millis }),
      fc.record({
        _tag: fc.constant("QuotaExceeded" as const),
        tier: fc.string({ maxLength: 64 }),
        limit: fc.oneof(fc.nat(), fc.constant(Infinity)),
        remaining: fc.nat(),
        retryAfterMs: millis
      }),
      fc.record({
        _tag: fc.constant("Throttled" as const),
        key: reason,
        probability: fc.double({ min: 0, max: 1, noNaN: true })
      }),
      fc.record({
        _tag: fc.constant("CircuitOpen" as const),
        name: reason,
        halfOpenAt: fc.oneof(fc.integer(), fc.constant(Infinity)),
        retryAfterMs: millis
      })
    )
    const dontRetry: fc.Arbitrary<ErrorBody.Decoded> = fc.record({
      _tag: fc.constant("DontRetry" as const),
      reason,
      attempts: fc.integer({ min: 0, max: 10 }),
      cause
    })
    fc.assert(
      fc.property(fc.oneof(cause, dontRetry), (error) => {
        expect(ErrorBody.parse(JSON.stringify(ErrorBody.encode(error)))).toEqual(error)
      }),
      { numRuns: 300 }
    )
  })

  it("a cause that is not Sluice's is named by its tag, else its Error name, else error, at most 64 characters", () => {
    expect(
      ErrorBody.foreignCause({ _tag: "RequestError", message: "Transport error (GET http://10.0.0.7/x)" })
    ).toEqual({ _tag: "Overloaded", reason: "RequestError" })
    expect(ErrorBody.foreignCause(new TypeError("at 10.0.0.7"))).toEqual({
      _tag: "Overloaded",
      reason: "TypeError"
    })
    expect(ErrorBody.foreignCause("a string")).toEqual({ _tag: "Overloaded", reason: "error" })
    expect(ErrorBody.foreignCause(undefined)).toEqual({ _tag: "Overloaded", reason: "error" })
    expect(ErrorBody.foreignCause({ _tag: 7 })).toEqual({ _tag: "Overloaded", reason: "error" })
    expect(ErrorBody.foreignCause({ _tag: "x".repeat(100) })).toEqual({
      _tag: "Overloaded",
      reason: "x".repeat(64)
    })
  })
})

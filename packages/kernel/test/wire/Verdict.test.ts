import * as ErrorBody from "@sluice/kernel/wire/ErrorBody"
import * as Headers from "@sluice/kernel/wire/Headers"
import * as RetryAfter from "@sluice/kernel/wire/RetryAfter"
import * as Verdict from "@sluice/kernel/wire/Verdict"
import fc from "fast-check"
import { describe, expect, it } from "vitest"

const names = Headers.defaultHeaderNames
const day = RetryAfter.DEFAULT_MAX_MILLIS
const read = (status: number, headers: Record<string, string> = {}, max = day, now = 0) =>
  Verdict.verdict({ status, headers }, now, names, max)

describe("Verdict", () => {
  it("a 503 is the server overloaded, with its Retry-After; other retryable statuses name themselves", () => {
    expect(read(503, { "retry-after": "2" })).toEqual({
      error: { _tag: "Overloaded", reason: "server", retryAfterMs: 2000 },
      throttled: false
    })
    expect(read(503).error).toEqual({ _tag: "Overloaded", reason: "server" })
    for (const status of [408, 502, 504])
      expect(read(status).error).toEqual({ _tag: "Overloaded", reason: `status ${status}` })
    expect(read(503, { "retry-after": "soon" }).error).toEqual({ _tag: "Overloaded", reason: "server" })
    // the hint is clamped to the reader's maximum, and an unusable maximum is a day
    expect(read(503, { "retry-after": "3600" }, 10_000).error).toEqual({
      _tag: "Overloaded",
      reason: "server",
      retryAfterMs: 10_000
    })
    for (const max of [Infinity, -1, NaN])
      expect(read(503, { "retry-after": "999999" }, max).error).toEqual({
        _tag: "Overloaded",
        reason: "server",
        retryAfterMs: day
      })
    // an HTTP date is read against now
    expect(
      read(503, { "retry-after": "Wed, 21 Oct 2015 07:28:05 GMT" }, day, Date.UTC(2015, 9, 21, 7, 28, 0))
        .error
    ).toEqual({ _tag: "Overloaded", reason: "server", retryAfterMs: 5000 })
  })

  it("a 429 is a quota: tier, limit, remaining and hint from the rate-limit headers", () => {
    expect(read(429, { "ratelimit-policy": `"per-key";q=5`, ratelimit: `"per-key";r=0;t=2` }).error).toEqual({
      _tag: "QuotaExceeded",
      tier: "per-key",
      limit: 5,
      remaining: 0,
      retryAfterMs: 2000
    })
    // the exhausted tier is the one named; Retry-After wins over the reset
    expect(
      read(429, {
        "ratelimit-policy": `"spike";q=20;w=1, "count";q=5000;w=3600`,
        ratelimit: `"spike";r=3;t=1, "count";r=0;t=3540`,
        "retry-after": "7"
      }).error
    ).toEqual({ _tag: "QuotaExceeded", tier: "count", limit: 5000, remaining: 0, retryAfterMs: 7000 })
    // no hint at all: a second, at most the maximum; no names: "server"
    expect(read(429).error).toEqual({
      _tag: "QuotaExceeded",
      tier: "server",
      limit: 0,
      remaining: 0,
      retryAfterMs: 1000
    })
    expect(read(429, {}, 250).error).toMatchObject({ retryAfterMs: 250 })
    expect(read(429, { ratelimit: `"t";r=0;t=99999` }, 5000).error).toMatchObject({
      tier: "t",
      retryAfterMs: 5000
    })
    expect(read(429, { ratelimit: `"";r=0` }).error).toMatchObject({ tier: "server" })
    // the tier of the policy when only the policy is sent
    expect(read(429, { "ratelimit-policy": `"count";q=8;w=3600` }).error).toMatchObject({
      tier: "count",
      limit: 8
    })
  })

  it("the don't-retry flag makes a refusal terminal; any 5xx with it is one", () => {
    expect(read(503, { "x-sluice-dont-retry": "1", "retry-after": "1" }).error).toEqual({
      _tag: "DontRetry",
      reason: "server",
      cause: { _tag: "Overloaded", reason: "server", retryAfterMs: 1000 }
    })
    expect(read(429, { "x-sluice-dont-retry": "true" }).error).toMatchObject({
      _tag: "DontRetry",
      reason: "server",
      cause: { _tag: "QuotaExceeded" }
    })
    expect(read(500, { "x-sluice-dont-retry": "yes" }).error).toEqual({
      _tag: "DontRetry",
      reason: "server",
      cause: { _tag: "Overloaded", reason: "status 500" }
    })
    // without the flag a 500 is not a refusal; a 4xx never is with or without it
    expect(read(500).error).toBeUndefined()
    expect(read(400, { "x-sluice-dont-retry": "1" }).error).toBeUndefined()
    expect(read(200, { "x-sluice-dont-retry": "1" }).error).toBeUndefined()
  })

  it("the throttle flag is read whatever the status; the retryable statuses can be chosen", () => {
    expect(read(200, { "x-sluice-throttle": "1" })).toEqual({ error: undefined, throttled: true })
    expect(read(503, { "x-sluice-throttle": "1" }).throttled).toBe(true)
    expect(read(204).throttled).toBe(false)
    const only500 = new Set([500])
    expect(Verdict.verdict({ status: 500, headers: {} }, 0, names, day, only500).error).toEqual({
      _tag: "Overloaded",
      reason: "status 500"
    })
    expect(Verdict.verdict({ status: 503, headers: {} }, 0, names, day, only500).error).toBeUndefined()
    // renamed headers, and a repeated header's first value
    const renamed = { ...names, throttle: "x-acme-slow" }
    expect(
      Verdict.verdict({ status: 200, headers: { "x-acme-slow": ["1", "0"] } }, 0, renamed, day).throttled
    ).toBe(true)
  })

  it("a foreign body's words: a JSON reason, message or error string, else the text, at most 200 characters", () => {
    expect(Verdict.foreignReason(`{"message":"maintenance"}`)).toBe("maintenance")
    expect(Verdict.foreignReason(`{"error":"db down"}`)).toBe("db down")
    expect(Verdict.foreignReason(`{"reason":"busy","error":{"code":7}}`)).toBe("busy")
    expect(Verdict.foreignReason(`{"reason":"  ","message":"m"}`)).toBe("m")
    expect(Verdict.foreignReason("upstream timed out")).toBe("upstream timed out")
    expect(Verdict.foreignReason("{not json")).toBe("{not json")
    expect(Verdict.foreignReason("  ")).toBeUndefined()
    expect(Verdict.foreignReason("x".repeat(500))).toBe(`${"x".repeat(200)}…`)
  })

  it("the throttle attribute of a JSON body of a 2xx", () => {
    expect(Verdict.bodyThrottle({ throttle: true }, "throttle")).toBe(true)
    expect(Verdict.bodyThrottle({ throttle: "true" }, "throttle")).toBe(false)
    expect(Verdict.bodyThrottle([true], "0")).toBe(false)
    expect(Verdict.bodyThrottle(null, "throttle")).toBe(false)
    expect(
      Verdict.mayCarryBodyThrottle({ status: 200, headers: { "content-type": "application/JSON" } })
    ).toBe(true)
    expect(Verdict.mayCarryBodyThrottle({ status: 200, headers: { "content-type": "text/plain" } })).toBe(
      false
    )
    expect(Verdict.mayCarryBodyThrottle({ status: 200, headers: {} })).toBe(false)
    expect(
      Verdict.mayCarryBodyThrottle({ status: 503, headers: { "content-type": "application/json" } })
    ).toBe(false)
  })

  it("a server marks a JSON object body with the throttle attribute; anything else is left as it is", () => {
    expect(Verdict.markBodyThrottle(`{"id":1}`, "throttle")).toEqual({ id: 1, throttle: true })
    expect(Verdict.markBodyThrottle(`{"throttle":false}`, "slow")).toEqual({ throttle: false, slow: true })
    for (const text of ["[1]", "null", "7", `"s"`, "{not json", ""])
      expect(Verdict.markBodyThrottle(text, "throttle")).toBeUndefined()
    // what is marked reads back as throttled
    expect(Verdict.bodyThrottle(Verdict.markBodyThrottle(`{}`, "t"), "t")).toBe(true)
  })

  it("property: any status and header values give a verdict, never a throw, hints within the maximum", () => {
    const value = fc.option(fc.string({ maxLength: 80 }), { nil: undefined })
    fc.assert(
      fc.property(
        fc.integer({ min: 100, max: 599 }),
        fc.record({
          "retry-after": value,
          ratelimit: value,
          "ratelimit-policy": value,
          "x-sluice-dont-retry": value
        }),
        fc.nat({ max: 100_000 }),
        (status, raw, max) => {
          const headers: Record<string, string> = {}
          for (const [k, v] of Object.entries(raw)) if (v !== undefined) headers[k] = v
          const { error } = Verdict.verdict({ status, headers }, 0, names, max)
          if (status < 400) expect(error).toBeUndefined()
          const inner = error?._tag === "DontRetry" ? error.cause : error
          if (inner !== undefined && "retryAfterMs" in inner && inner.retryAfterMs !== undefined) {
            expect(inner.retryAfterMs).toBeGreaterThanOrEqual(0)
            expect(inner.retryAfterMs).toBeLessThanOrEqual(max)
          }
          if (status === 429) expect(inner?._tag).toBe("QuotaExceeded")
        }
      )
    )
  })
})

describe("Verdict.withBody", () => {
  const overloaded = { _tag: "Overloaded", reason: "server", retryAfterMs: 2000 } as const
  const quota = { _tag: "QuotaExceeded", tier: "t", limit: 5, remaining: 0, retryAfterMs: 750 } as const
  const body = (e: ErrorBody.Decoded) => JSON.stringify(ErrorBody.encode(e))
  const hintOf = (e: Verdict.DecodeError): number | undefined => {
    const inner = e._tag === "DontRetry" ? e.cause : e
    return inner !== undefined && "retryAfterMs" in inner ? inner.retryAfterMs : undefined
  }

  it("a Sluice body gives the server's error: its reason, hint and quota fields, the hint at most the maximum", () => {
    expect(
      Verdict.withBody(overloaded, body({ _tag: "Overloaded", reason: "db busy", retryAfterMs: 1500 }), day)
    ).toEqual({ _tag: "Overloaded", reason: "db busy", retryAfterMs: 1500 })
    // a hint only in the header (a proxy added it) is kept
    expect(Verdict.withBody(overloaded, body({ _tag: "Overloaded", reason: "db busy" }), day)).toEqual({
      _tag: "Overloaded",
      reason: "db busy",
      retryAfterMs: 2000
    })
    const fromHeaders = { ...quota, tier: "server", limit: 0, retryAfterMs: 1000 }
    expect(Verdict.withBody(fromHeaders, body(quota), day)).toEqual(quota)
    expect(Verdict.withBody(fromHeaders, body({ ...quota, retryAfterMs: Infinity }), 10_000)).toEqual({
      ...quota,
      retryAfterMs: 10_000
    })
    expect(
      Verdict.withBody(overloaded, body({ _tag: "Overloaded", reason: "x", retryAfterMs: 3_600_000 }), 5000)
    ).toEqual({ _tag: "Overloaded", reason: "x", retryAfterMs: 5000 })
  })

  it("the server's own throttle and breaker are, to the caller, the server refusing the work", () => {
    const terminal = {
      _tag: "DontRetry",
      reason: "server",
      cause: { _tag: "Overloaded", reason: "server" }
    } as const
    expect(Verdict.withBody(terminal, body({ _tag: "Throttled", key: "backend" }), day)).toEqual({
      _tag: "DontRetry",
      reason: "server",
      cause: { _tag: "Overloaded", reason: "throttled: backend" }
    })
    const open = { _tag: "CircuitOpen", name: "db", halfOpenAt: 0, retryAfterMs: 2500 } as const
    expect(Verdict.withBody(overloaded, body(open), day)).toEqual({
      _tag: "Overloaded",
      reason: "circuit open: db",
      retryAfterMs: 2500
    })
    // an isolated breaker has no hint to give
    expect(Verdict.withBody(terminal, body({ ...open, retryAfterMs: Infinity }), day)).toEqual({
      _tag: "DontRetry",
      reason: "server",
      cause: { _tag: "Overloaded", reason: "circuit open: db" }
    })
  })

  it("a DontRetry body gives why and after how many attempts a tier below gave up, and what on", () => {
    const terminal = { _tag: "DontRetry", reason: "server", cause: quota } as const
    const gaveUp = {
      _tag: "DontRetry",
      reason: "budget",
      attempts: 2,
      cause: { ...quota, tier: "below" }
    } as const
    expect(Verdict.withBody(terminal, body(gaveUp), day)).toEqual(gaveUp)
    // a reason this version does not know is kept for the reader to judge
    expect(Verdict.withBody(terminal, body({ ...gaveUp, reason: "later" }), day)).toMatchObject({
      reason: "later"
    })
  })

  it("a body that disagrees with the status fills in only what agrees; the same error when it adds nothing", () => {
    // a quota body on a 503: the status says overloaded
    expect(Verdict.withBody(overloaded, body(quota), day)).toBe(overloaded)
    // a DontRetry body without the flag: the status says retry; its cause still fills in
    const gaveUp = {
      _tag: "DontRetry",
      reason: "attempts",
      attempts: 3,
      cause: { _tag: "Overloaded", reason: "busy" }
    } as const
    expect(Verdict.withBody(overloaded, body(gaveUp), day)).toEqual({
      _tag: "Overloaded",
      reason: "busy",
      retryAfterMs: 2000
    })
    expect(Verdict.withBody(quota, "", day)).toBe(quota)
    expect(Verdict.withBody(quota, "maintenance", day)).toBe(quota)
  })

  it("a foreign body's words become the Overloaded reason, after the status that named it", () => {
    expect(Verdict.withBody(overloaded, `{"message":"maintenance"}`, day)).toEqual({
      _tag: "Overloaded",
      reason: "maintenance",
      retryAfterMs: 2000
    })
    expect(Verdict.withBody({ _tag: "Overloaded", reason: "status 502" }, "bad gateway", day)).toEqual({
      _tag: "Overloaded",
      reason: "status 502: bad gateway"
    })
    const terminal = {
      _tag: "DontRetry",
      reason: "server",
      attempts: 1,
      cause: { _tag: "Overloaded", reason: "server" }
    } as const
    expect(Verdict.withBody(terminal, "down", day)).toEqual({
      _tag: "DontRetry",
      reason: "server",
      attempts: 1,
      cause: { _tag: "Overloaded", reason: "down" }
    })
    expect(Verdict.withReason(overloaded, undefined)).toBe(overloaded)
  })

  it("property: any body refines a verdict without a throw, the hint within the maximum and the tag kept", () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string({ maxLength: 200 }),
          fc.jsonValue().map((v) => JSON.stringify({ error: v })),
          fc
            .record({
              _tag: fc.constantFrom("Overloaded", "QuotaExceeded", "CircuitOpen", "Throttled"),
              retryAfterMs: fc.oneof(fc.nat(), fc.constant("Infinity")),
              reason: fc.string(),
              tier: fc.string(),
              name: fc.string(),
              key: fc.string(),
              limit: fc.nat(),
              remaining: fc.nat(),
              halfOpenAt: fc.nat()
            })
            .map((e) => JSON.stringify({ error: e }))
        ),
        fc.constantFrom<Verdict.DecodeError>(overloaded, quota, {
          _tag: "DontRetry",
          reason: "server",
          cause: quota
        }),
        fc.nat({ max: 100_000 }),
        (text, error, max) => {
          const refined = Verdict.withBody(error, text, max)
          expect(refined._tag).toBe(error._tag)
          // a hint is the verdict's own (from the headers) or the body's, at most the maximum
          const hint = hintOf(refined)
          if (hint !== undefined && hint !== hintOf(error)) expect(hint).toBeLessThanOrEqual(max)
        }
      )
    )
  })
})

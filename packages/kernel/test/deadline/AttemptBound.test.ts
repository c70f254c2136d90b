import * as AttemptBound from "@sluice/kernel/deadline/AttemptBound"
import fc from "fast-check"
import { describe, expect, it } from "vitest"

const facts = (f: Partial<AttemptBound.AttemptFacts>): AttemptBound.AttemptFacts => ({
  attemptTimeout: 1000,
  deadline: Infinity,
  now: 0,
  unwaitedSince: Infinity,
  attempt: 0,
  ...f
})

describe("AttemptBound", () => {
  it("an attempt's bound is its own, else the call's timeout, else none", () => {
    expect(AttemptBound.attemptTimeout(200, 5000)).toBe(200)
    expect(AttemptBound.attemptTimeout(undefined, 5000)).toBe(5000)
    expect(AttemptBound.attemptTimeout(undefined, undefined)).toBe(Infinity)
  })

  it("a call's deadline is now + timeout unless an enclosing one comes first; its timer fires a little later", () => {
    expect(AttemptBound.call(1000, 500, Infinity)).toEqual({
      deadline: 1500,
      left: 500,
      timer: 500 + AttemptBound.GRACE_MILLIS
    })
    expect(AttemptBound.call(1000, 500, 1200)).toEqual({ deadline: 1200, left: 200, timer: 202 })
    // an enclosing deadline already past leaves nothing
    expect(AttemptBound.call(1000, 500, 900)).toEqual({ deadline: 900, left: 0, timer: 2 })
  })

  it("without a deadline, or with at least the bound left of it, an attempt has its own bound", () => {
    expect(AttemptBound.attempt(facts({}))).toBe(1000)
    expect(AttemptBound.attempt(facts({ deadline: 5000, now: 4000, attempt: 2 }))).toBe(1000)
    expect(AttemptBound.attempt(facts({ attemptTimeout: Infinity, deadline: 5000 }))).toBeUndefined()
  })

  it("with less left, it is not bounded (the deadline's timer ends it as an interruption) ...", () => {
    // a retry after a backoff
    expect(
      AttemptBound.attempt(facts({ deadline: 1000, now: 600, unwaitedSince: 0, attempt: 1 }))
    ).toBeUndefined()
    // a first try that waited for a permit
    expect(AttemptBound.attempt(facts({ deadline: 1000, now: 600, unwaitedSince: Infinity }))).toBeUndefined()
    // a first try under an enclosing caller's shorter deadline
    expect(AttemptBound.attempt(facts({ deadline: 800, now: 100, unwaitedSince: 0 }))).toBeUndefined()
  })

  it("... but a first try that waited for nothing had the whole call: the deadline bounds it, at least 1 ms", () => {
    expect(AttemptBound.attempt(facts({ deadline: 1000, now: 3, unwaitedSince: 0 }))).toBe(997)
    expect(AttemptBound.attempt(facts({ deadline: 1000, now: 1000, unwaitedSince: 0 }))).toBe(1)
  })

  it("property: a bound is never longer than the attempt's own, nor than what is left of the deadline (1 ms aside)", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 10_000 }),
        fc.integer({ min: 0, max: 20_000 }),
        fc.integer({ min: 0, max: 20_000 }),
        fc.oneof(fc.integer({ min: 0, max: 20_000 }), fc.constant(Infinity)),
        fc.nat({ max: 3 }),
        (attemptTimeout, deadline, now, unwaitedSince, attempt) => {
          const bound = AttemptBound.attempt({ attemptTimeout, deadline, now, unwaitedSince, attempt })
          if (bound === undefined) return
          expect(bound).toBeLessThanOrEqual(attemptTimeout)
          expect(bound).toBeLessThanOrEqual(Math.max(1, deadline - now))
        }
      )
    )
  })
})

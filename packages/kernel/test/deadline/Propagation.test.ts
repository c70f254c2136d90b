import * as Propagation from "@sluice/kernel/deadline/Propagation"
import fc from "fast-check"
import { describe, expect, it } from "vitest"

describe("Propagation", () => {
  it("an attempt sends the whole milliseconds left, never negative, and nothing without a deadline", () => {
    expect(Propagation.outgoing(Infinity, 1000)).toBeUndefined()
    expect(Propagation.outgoing(NaN, 1000)).toBeUndefined()
    expect(Propagation.outgoing(1850.9, 1000)).toBe("850")
    expect(Propagation.outgoing(900, 1000)).toBe("0")
  })

  it("parses digits only, clamps to a day, and never throws on hostile values", () => {
    expect(Propagation.parse("850")).toBe(850)
    expect(Propagation.parse(" 850 ")).toBe(850)
    expect(Propagation.parse("0")).toBe(0)
    expect(Propagation.parse("99999999999")).toBe(Propagation.MAX_DEADLINE_MS)
    for (const bad of [undefined, null, "", "-5", "1.5", "1e3", "0x10", "abc", " ", "12345678901234567"])
      expect(Propagation.parse(bad)).toBeUndefined()
    fc.assert(
      fc.property(fc.string(), (s) => {
        const ms = Propagation.parse(s)
        return ms === undefined || (Number.isSafeInteger(ms) && ms >= 0 && ms <= Propagation.MAX_DEADLINE_MS)
      })
    )
  })

  it("a server believes a trusted caller's claim, clamps an untrusted one's, and keeps back its margin", () => {
    const base = { trusted: true, maxUntrustedMs: 30_000, marginMs: 5, now: 1000 }
    expect(Propagation.incoming({ ...base, claimedMs: undefined })).toBe(Infinity)
    expect(Propagation.incoming({ ...base, claimedMs: 60_000 })).toBe(1000 + 60_000 - 5)
    expect(Propagation.incoming({ ...base, trusted: false, claimedMs: 60_000 })).toBe(1000 + 30_000 - 5)
    // an untrusted caller may still shorten its own deadline
    expect(Propagation.incoming({ ...base, trusted: false, claimedMs: 200 })).toBe(1000 + 195)
    // less left than the margin: the caller will have given up before an answer reaches it
    const late = Propagation.incoming({ ...base, claimedMs: 3 })
    expect(late).toBe(1000)
    expect(Propagation.expired(late, 1000)).toBe(true)
    expect(Propagation.expired(1001, 1000)).toBe(false)
  })

  it("across hops, what a server believes is never later than what its caller had left", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 10 ** 12 }),
        fc.integer({ min: 0, max: 10 ** 7 }),
        fc.integer({ min: 0, max: 1000 }),
        fc.integer({ min: 0, max: 1000 }),
        fc.boolean(),
        (now, left, transit, margin, trusted) => {
          const sent = Propagation.parse(Propagation.outgoing(now + left, now))
          const deadline = Propagation.incoming({
            claimedMs: sent,
            trusted,
            maxUntrustedMs: 30_000,
            marginMs: margin,
            now: now + transit
          })
          // on the caller's clock the server's deadline falls at most `transit` after the caller's
          return deadline <= now + left + transit && deadline >= now + transit
        }
      )
    )
  })
})

import { Errors } from "@sluice/core"
import { describe, expect, expectTypeOf, it } from "@effect/vitest"
import { Cause, Duration, Schema } from "effect"

const roundTrip = (error: Errors.SluiceError) =>
  Schema.decodeUnknownSync(Errors.SluiceError)(
    JSON.parse(JSON.stringify(Schema.encodeSync(Errors.SluiceError)(error)))
  )

describe("Errors", () => {
  it("every error survives a JSON round trip", () => {
    const errors: Array<Errors.SluiceError> = [
      new Errors.Overloaded({ reason: "shed", retryAfter: Duration.millis(1500) }),
      new Errors.Overloaded({ reason: "server" }),
      new Errors.QuotaExceeded({
        tier: "spike",
        limit: 20,
        remaining: 0,
        retryAfter: Duration.millis(50),
        client: "c1"
      }),
      new Errors.Throttled({ key: "backend", probability: 0.4 }),
      new Errors.CircuitOpen({ name: "redis", halfOpenAt: 12345, retryAfter: Duration.seconds(3) }),
      new Errors.CircuitOpen({ name: "isolated", halfOpenAt: Infinity, retryAfter: Duration.infinity }),
      new Errors.QuotaExceeded({
        tier: "unlimited",
        limit: Infinity,
        remaining: Infinity,
        retryAfter: Duration.zero
      }),
      new Errors.DontRetry({
        reason: "attempts",
        attempts: 3,
        cause: new Errors.Overloaded({ reason: "server" })
      }),
      new Errors.DontRetry({ reason: "budget" })
    ]
    for (const error of errors) {
      const back = roundTrip(error)
      expect(back).toBeInstanceOf(error.constructor)
      expect(back).toEqual(error)
    }
  })

  it("a DontRetry wrapping an unknown cause keeps its message", () => {
    const back = roundTrip(new Errors.DontRetry({ reason: "attempts", cause: new Error("socket hang up") }))
    expect(back._tag).toBe("DontRetry")
    expect((back as Errors.DontRetry).cause).toBeInstanceOf(Error)
    expect(((back as Errors.DontRetry).cause as Error).message).toBe("socket hang up")
  })

  it("isRetryable follows the table", () => {
    expect(Errors.isRetryable(new Errors.Overloaded({ reason: "x" }))).toBe(true)
    expect(
      Errors.isRetryable(
        new Errors.QuotaExceeded({ tier: "t", limit: 1, remaining: 0, retryAfter: Duration.zero })
      )
    ).toBe(true)
    expect(Errors.isRetryable(new Errors.Throttled({ key: "k" }))).toBe(false)
    expect(
      Errors.isRetryable(new Errors.CircuitOpen({ name: "n", halfOpenAt: 0, retryAfter: Duration.zero }))
    ).toBe(false)
    expect(Errors.isRetryable(new Errors.DontRetry({ reason: "server" }))).toBe(false)
    expect(Errors.isRetryable(new Cause.TimeoutError())).toBe(true)
    expect(Errors.isRetryable(new Error("plain"))).toBe(false)
    expect(Errors.isRetryable(Errors.markRetryable(new Error("transport")))).toBe(true)
    expect(Errors.isRetryable(null)).toBe(false)
  })

  it("NonRetryable removes retryable errors from a union", () => {
    type E =
      Errors.Overloaded | Errors.QuotaExceeded | Errors.Throttled | Cause.TimeoutError | Errors.DontRetry
    expectTypeOf<Errors.NonRetryable<E>>().toEqualTypeOf<Errors.Throttled | Errors.DontRetry>()
    expectTypeOf<Errors.RetryablePart<E>>().toEqualTypeOf<
      Errors.Overloaded | Errors.QuotaExceeded | Cause.TimeoutError
    >()
  })
})

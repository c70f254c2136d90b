import { describe, expect, it } from "@effect/vitest"
import { Errors, Outcome } from "@sluice/core"
import { Cause, Duration, Exit } from "effect"

const local = new Errors.Overloaded({ reason: "queue full", origin: "local" })
const remote = new Errors.Overloaded({ reason: "503" })
const quota = new Errors.QuotaExceeded({
  tier: "spike",
  limit: 1,
  remaining: 0,
  retryAfter: Duration.millis(5)
})

describe("Outcome", () => {
  it("classifies every Sluice error by where it came from", () => {
    expect(Outcome.ofError(remote)).toBe("dropped")
    expect(Outcome.ofError(quota)).toBe("dropped")
    expect(Outcome.ofError(new Cause.TimeoutError())).toBe("dropped")
    expect(Outcome.ofError(local)).toBe("refused")
    expect(Outcome.ofError(new Errors.Throttled({ key: "k" }))).toBe("refused")
    expect(
      Outcome.ofError(new Errors.CircuitOpen({ name: "b", halfOpenAt: 0, retryAfter: Duration.seconds(1) }))
    ).toBe("refused")
    expect(Outcome.ofError(new Error("boom"))).toBe("failed")
  })

  it("a DontRetry is what it gave up on", () => {
    expect(Outcome.ofError(new Errors.DontRetry({ reason: "attempts", cause: remote }))).toBe("dropped")
    expect(Outcome.ofError(new Errors.DontRetry({ reason: "refused", cause: local }))).toBe("refused")
    expect(Outcome.ofError(new Errors.DontRetry({ reason: "server" }))).toBe("failed")
  })

  it("a 4xx response error other than 408/429 says nothing about load", () => {
    const responseError = (status: number) => ({ _tag: "ResponseError", response: { status } })
    expect(Outcome.ofError(responseError(404))).toBe("ignored")
    expect(Outcome.ofError(responseError(408))).toBe("failed")
    expect(Outcome.ofError(responseError(500))).toBe("failed")
  })

  it("causes: interruption only is ignored, a defect failed, the first failure decides", () => {
    expect(Outcome.ofCause(Cause.interrupt())).toBe("ignored")
    expect(Outcome.ofCause(Cause.die("bug"))).toBe("failed")
    expect(Outcome.ofCause(Cause.combine(Cause.interrupt(), Cause.fail(remote)))).toBe("dropped")
    expect(Outcome.ofCause(Cause.combine(Cause.fail(local), Cause.fail(remote)))).toBe("refused")
    expect(Outcome.ofExit(Exit.succeed(1))).toBe("success")
    expect(Outcome.ofExit(Exit.fail(new Error("x")), { isDrop: () => true })).toBe("dropped")
  })

  it("what is retried and what is evidence", () => {
    expect(Outcome.isRetryable("dropped", remote)).toBe(true)
    expect(Outcome.isRetryable("refused", local)).toBe(false)
    expect(Outcome.isRetryable("failed", Errors.markRetryable(new Error("ECONNRESET")))).toBe(true)
    expect(Outcome.isRetryable("failed", new Error("bug"))).toBe(false)
    expect(
      ["success", "dropped", "refused", "ignored", "failed"].filter((o) =>
        Outcome.isEvidence(o as Outcome.Outcome)
      )
    ).toEqual(["success", "dropped"])
    expect(Errors.isRetryable(local)).toBe(false)
    expect(Errors.isRetryable(remote)).toBe(true)
  })

  it("circuitBreakerClassifier: dropped and failed are Effect breaker failures, refused and ignored never count", () => {
    const tag = (exit: Exit.Exit<unknown, unknown>) => Outcome.circuitBreakerClassifier(exit)._tag
    expect(tag(Exit.succeed(1))).toBe("Success")
    expect(tag(Exit.fail(remote))).toBe("Failure")
    expect(tag(Exit.fail(new Errors.DontRetry({ reason: "attempts", cause: remote })))).toBe("Failure")
    expect(tag(Exit.fail(new Cause.TimeoutError()))).toBe("Failure")
    expect(tag(Exit.fail(new Error("boom")))).toBe("Failure")
    expect(tag(Exit.die("bug"))).toBe("Failure")
    expect(tag(Exit.fail(local))).toBe("Ignored")
    expect(tag(Exit.fail(new Errors.DontRetry({ reason: "refused", cause: local })))).toBe("Ignored")
    expect(tag(Exit.fail(new Errors.Throttled({ key: "k" })))).toBe("Ignored")
    expect(
      tag(Exit.fail(new Errors.CircuitOpen({ name: "b", halfOpenAt: 0, retryAfter: Duration.seconds(1) })))
    ).toBe("Ignored")
    expect(tag(Exit.failCause(Cause.interrupt()))).toBe("Ignored")
    // isDrop turns an application error into a failure, as for ofExit
    const busy = new Error("busy")
    expect(Outcome.circuitBreakerClassifier(Exit.fail(busy), { isDrop: (e) => e === busy })._tag).toBe(
      "Failure"
    )
  })

  it("circuitBreakerClassifier: a backend's Retry-After is the failure's hint, also under a DontRetry", () => {
    const hinted = new Errors.Overloaded({ reason: "server", retryAfter: Duration.seconds(2) })
    const direct = Outcome.circuitBreakerClassifier(Exit.fail(hinted))
    const wrapped = Outcome.circuitBreakerClassifier(
      Exit.fail(new Errors.DontRetry({ reason: "attempts", cause: quota }))
    )
    expect(direct._tag === "Failure" && direct.retryAfter).toEqual(Duration.seconds(2))
    expect(wrapped._tag === "Failure" && wrapped.retryAfter).toEqual(Duration.millis(5))
    const plain = Outcome.circuitBreakerClassifier(Exit.fail(remote))
    expect(plain._tag === "Failure" && plain.retryAfter).toBeUndefined()
  })
})

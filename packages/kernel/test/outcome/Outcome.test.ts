import * as Outcome from "@sluice/kernel/outcome/Outcome"
import { describe, expect, it } from "vitest"

// Plain objects with the fields the rules read: what an error is, seen from any runtime.
const local = { _tag: "Overloaded", reason: "queue full", origin: "local" }
const remote = { _tag: "Overloaded", reason: "503", origin: "remote" }
const quota = { _tag: "QuotaExceeded", tier: "spike" }
const responseError = (status: number) => ({ _tag: "ResponseError", response: { status } })

describe("Outcome", () => {
  it("classifies every Sluice error by where it came from", () => {
    expect(Outcome.ofError(remote)).toBe("dropped")
    expect(Outcome.ofError({ _tag: "Overloaded" })).toBe("dropped")
    expect(Outcome.ofError(quota)).toBe("dropped")
    expect(Outcome.ofError({ ...quota, origin: "local" })).toBe("refused")
    expect(Outcome.ofError({ _tag: "TimeoutException" })).toBe("dropped")
    expect(Outcome.ofError({ _tag: "TimeoutError" })).toBe("dropped")
    expect(Outcome.ofError(local)).toBe("refused")
    expect(Outcome.ofError({ _tag: "Throttled", key: "k" })).toBe("refused")
    expect(Outcome.ofError({ _tag: "CircuitOpen", name: "b" })).toBe("refused")
    expect(Outcome.ofError(new Error("boom"))).toBe("failed")
    expect(Outcome.ofError(undefined)).toBe("failed")
    expect(Outcome.ofError("boom")).toBe("failed")
  })

  it("a DontRetry is what it gave up on", () => {
    expect(Outcome.ofError({ _tag: "DontRetry", reason: "attempts", cause: remote })).toBe("dropped")
    expect(Outcome.ofError({ _tag: "DontRetry", reason: "refused", cause: local })).toBe("refused")
    expect(Outcome.ofError({ _tag: "DontRetry", reason: "server" })).toBe("failed")
  })

  it("a 4xx response error other than 408/429 says nothing about load", () => {
    expect(Outcome.ofError(responseError(404))).toBe("ignored")
    expect(Outcome.ofError(responseError(408))).toBe("failed")
    expect(Outcome.ofError(responseError(429))).toBe("failed")
    expect(Outcome.ofError(responseError(500))).toBe("failed")
    expect(Outcome.ofError({ _tag: "ResponseError" })).toBe("failed")
    // Effect 4: one HttpClientError whose response (if any) is its reason's
    expect(Outcome.ofError({ _tag: "HttpClientError", response: { status: 404 } })).toBe("ignored")
    expect(Outcome.ofError({ _tag: "HttpClientError", response: { status: 503 } })).toBe("failed")
    expect(Outcome.ofError({ _tag: "HttpClientError", response: undefined })).toBe("failed")
    expect(Outcome.ofStatus(400)).toBe("ignored")
    expect(Outcome.ofStatus(499)).toBe("ignored")
    expect(Outcome.ofStatus(503)).toBe("failed")
    expect(Outcome.ofStatus(undefined)).toBe("failed")
  })

  it("isDrop names extra drops, for errors and defects; an interruption is ignored", () => {
    const busy = { isDrop: (e: unknown) => e instanceof Error && e.message === "busy" }
    expect(Outcome.ofError(new Error("busy"), busy)).toBe("dropped")
    expect(Outcome.ofError(new Error("other"), busy)).toBe("failed")
    expect(Outcome.ofError({ _tag: "DontRetry", cause: new Error("busy") }, busy)).toBe("dropped")
    expect(Outcome.ofDefect("bug")).toBe("failed")
    expect(Outcome.ofDefect(new Error("busy"), busy)).toBe("dropped")
    expect(Outcome.interrupted).toBe("ignored")
  })

  it("what is retried and what is evidence", () => {
    expect(Outcome.isRetryable("dropped", false)).toBe(true)
    expect(Outcome.isRetryable("refused", true)).toBe(false)
    expect(Outcome.isRetryable("ignored", true)).toBe(false)
    expect(Outcome.isRetryable("failed", true)).toBe(true)
    expect(Outcome.isRetryable("failed", false)).toBe(false)
    expect(
      (["success", "dropped", "refused", "ignored", "failed"] as const).filter((o) => Outcome.isEvidence(o))
    ).toEqual(["success", "dropped"])
  })
})

describe("Outcome.ofFirst and anyDrop", () => {
  it("the first failure or defect decides; nothing but interruptions is the caller giving up", () => {
    expect(Outcome.ofFirst({ _tag: "Fail", error: { _tag: "Overloaded" } })).toBe("dropped")
    expect(Outcome.ofFirst({ _tag: "Fail", error: { _tag: "Throttled" } })).toBe("refused")
    expect(Outcome.ofFirst({ _tag: "Die", defect: new Error("boom") })).toBe("failed")
    expect(Outcome.ofFirst(undefined)).toBe("ignored")
    const isDrop = (u: unknown) => u === "busy"
    expect(Outcome.ofFirst({ _tag: "Die", defect: "busy" }, { isDrop })).toBe("dropped")
    expect(Outcome.ofFirst({ _tag: "Fail", error: "busy" }, { isDrop })).toBe("dropped")
  })

  it("several policies' isDrop: a drop when any says so; no options when none has a say", () => {
    expect(Outcome.anyDrop([])).toBeUndefined()
    const busy = (u: unknown) => u === "busy"
    const full = (u: unknown) => u === "full"
    expect(Outcome.anyDrop([busy])).toEqual({ isDrop: busy })
    const both = Outcome.anyDrop([busy, full])!
    expect(["busy", "full", "fine"].map((e) => Outcome.ofError(e, both))).toEqual([
      "dropped",
      "dropped",
      "failed"
    ])
  })
})

describe("Outcome.isRetryableError", () => {
  it("Overloaded, QuotaExceeded and marked errors the layer above may retry, unless refused here", () => {
    expect(Outcome.isRetryableError({ _tag: "Overloaded", reason: "server" }, false)).toBe(true)
    expect(Outcome.isRetryableError({ _tag: "QuotaExceeded" }, false)).toBe(true)
    expect(Outcome.isRetryableError(local, false)).toBe(false)
    expect(Outcome.isRetryableError({ _tag: "QuotaExceeded", origin: "local" }, false)).toBe(false)
    expect(Outcome.isRetryableError(new Error("socket hang up"), true)).toBe(true)
    expect(Outcome.isRetryableError({ _tag: "Boom", origin: "local" }, true)).toBe(false)
    for (const other of [
      { _tag: "Throttled" },
      { _tag: "CircuitOpen" },
      new Error("x"),
      "x",
      null,
      undefined
    ]) {
      expect(Outcome.isRetryableError(other, false)).toBe(false)
    }
  })
})

import { Options } from "@sluice/core"
import { Retry, RetryHistogram } from "@sluice/retry"
import { describe, expect, it } from "@effect/vitest"
import { Cause, Config, ConfigProvider, Effect, Exit, Layer, Metric, Ref } from "effect"
import { TestClock } from "effect/testing"

describe("RetryHistogram", () => {
  it.effect("records attempt numbers in a sliding window and reports the share of retries", () =>
    Effect.gen(function* () {
      const histogram = yield* RetryHistogram.make({ window: "10 seconds", maxAttempt: 3 })
      for (const attempt of [0, 0, 0, 0, 0, 0, 1, 1, 2, 7]) yield* histogram.record(attempt)
      expect(yield* histogram.snapshot).toEqual({
        total: 10,
        retries: 4,
        shareOfRetries: 0.4,
        byAttempt: [6, 2, 1, 1],
        untrusted: { total: 0, retries: 0, byAttempt: [0, 0, 0, 0] }
      })
      yield* TestClock.adjust("5 seconds")
      for (let i = 0; i < 10; i++) yield* histogram.record(0)
      expect(yield* histogram.shareOfRetries).toBe(0.2)
      yield* TestClock.adjust("6 seconds") // the first ten have left the window
      expect(yield* histogram.snapshot).toEqual({
        total: 10,
        retries: 0,
        shareOfRetries: 0,
        byAttempt: [10, 0, 0, 0],
        untrusted: { total: 0, retries: 0, byAttempt: [0, 0, 0, 0] }
      })
      yield* TestClock.adjust("1 minute")
      expect(yield* histogram.snapshot).toEqual({
        total: 0,
        retries: 0,
        shareOfRetries: 0,
        byAttempt: [0, 0, 0, 0],
        untrusted: { total: 0, retries: 0, byAttempt: [0, 0, 0, 0] }
      })
    })
  )

  it.effect("shouldRejectRetries: above the threshold, with enough requests", () =>
    Effect.gen(function* () {
      const histogram = yield* RetryHistogram.RetryHistogram
      // Few requests: never rejects, whatever the share.
      for (let i = 0; i < 5; i++) yield* histogram.record(2)
      expect(yield* histogram.shouldRejectRetries).toBe(false)
      // 5 retries out of 25: share 0.2 > 0.15.
      for (let i = 0; i < 20; i++) yield* histogram.record(0)
      expect(yield* histogram.shareOfRetries).toBe(0.2)
      expect(yield* histogram.shouldRejectRetries).toBe(true)
      // 5 of 50: 0.1, below the threshold.
      for (let i = 0; i < 25; i++) yield* histogram.record(0)
      expect(yield* histogram.shouldRejectRetries).toBe(false)
      const share = yield* Metric.value(
        Metric.withAttributes(RetryHistogram.metrics.retryShare, { histogram: "h-test" })
      )
      expect(share.value).toBe(0.1)
      const decisions = yield* Metric.value(
        Metric.withAttributes(RetryHistogram.metrics.rejectDecisions, { histogram: "h-test" })
      )
      expect(decisions.count).toBe(1)
      const retries2 = yield* Metric.value(
        Metric.withAttributes(RetryHistogram.metrics.requests, { histogram: "h-test", attempt: "2" })
      )
      expect(retries2.count).toBe(5)
    }).pipe(
      Effect.provide(
        RetryHistogram.layer({ threshold: 0.15, minRequests: 20, maxAttempt: 3, name: "h-test" })
      )
    )
  )

  it.effect("sees the attempt numbers a client policy sends", () =>
    Effect.gen(function* () {
      const histogram = RetryHistogram.makeUnsafe({ minRequests: 1, threshold: 0.5 })
      const calls = yield* Ref.make(0)
      // A server that fails the first two tries of every request.
      const server = Effect.flatMap(Retry.attempt, (attempt) =>
        Effect.andThen(
          Effect.andThen(
            histogram.record(attempt),
            Ref.update(calls, (n) => n + 1)
          ),
          attempt < 2 ? Effect.fail(new Error("503")) : Effect.void
        )
      )
      const client = server.pipe(Retry.withRetry({ maxAttempts: 3, isRetryable: () => true }))
      for (let i = 0; i < 4; i++) {
        yield* Effect.forkChild(client)
      }
      yield* TestClock.adjust("1 second") // default backoff: at most 100 ms, then 200 ms
      expect(yield* Ref.get(calls)).toBe(12)
      expect((yield* histogram.snapshot).byAttempt).toEqual([4, 4, 4, 0])
      expect(yield* histogram.shouldRejectRetries).toBe(true)
    })
  )

  it.effect("layerConfig reads options from a Config", () =>
    Effect.gen(function* () {
      const histogram = yield* RetryHistogram.RetryHistogram
      expect(histogram.options).toMatchObject({ threshold: 0.3, minRequests: 20 })
    }).pipe(
      Effect.provide(RetryHistogram.layerConfig(Config.all({ threshold: Config.Number("THRESHOLD") }))),
      Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnvRecord({ THRESHOLD: "0.3" }))
    )
  )

  it("records a malformed attempt as a first try and caps large ones in the last bucket", () => {
    const histogram = RetryHistogram.makeUnsafe({ maxAttempt: 2 })
    histogram.recordUnsafe(0, Number.NaN)
    histogram.recordUnsafe(0, -4)
    histogram.recordUnsafe(0, 1_000_000)
    expect(histogram.snapshotUnsafe(0).byAttempt).toEqual([2, 0, 1])
  })

  it.effect("rejects bad options naming the field", () =>
    Effect.gen(function* () {
      for (const [bad, field] of [
        [{ threshold: 2 }, "threshold"],
        [{ window: 0 }, "window"],
        [{ maxAttempt: 0 }, "maxAttempt"],
        [{ minRequests: -1 }, "minRequests"]
      ] as const) {
        const exit = yield* Effect.exit(Layer.build(RetryHistogram.layer(bad)).pipe(Effect.scoped))
        expect(Exit.isFailure(exit)).toBe(true)
        const reasons = Exit.isFailure(exit) ? exit.cause.reasons : []
        const reason = reasons[0]
        if (reasons.length === 1 && reason !== undefined && Cause.isFailReason(reason)) {
          expect(reason.error).toBeInstanceOf(Options.InvalidOptions)
          expect(reason.error.message).toContain(field)
        }
        expect(() => RetryHistogram.makeUnsafe(bad)).toThrow(field)
      }
    })
  )

  it.effect("untrusted attempt numbers are counted apart and decide nothing", () =>
    Effect.gen(function* () {
      const histogram = yield* RetryHistogram.make({
        threshold: 0.1,
        minRequests: 10,
        maxAttempt: 3,
        name: "h-untrusted"
      })
      const now = 0
      // 300 untrusted "retries" and nothing else: no decision, neither way
      for (let i = 0; i < 300; i++) histogram.recordUntrustedUnsafe(now, 2)
      histogram.recordUntrustedUnsafe(now, Number.NaN)
      expect(histogram.shouldRejectRetriesUnsafe(now)).toBe(false)
      const snapshot = histogram.snapshotUnsafe(now)
      expect(snapshot.total).toBe(0)
      expect(snapshot.untrusted).toEqual({ total: 301, retries: 300, byAttempt: [1, 0, 300, 0] })
      // nor do untrusted first tries dilute trusted retries
      for (let i = 0; i < 10; i++) histogram.recordUnsafe(now, 1)
      for (let i = 0; i < 1000; i++) histogram.recordUntrustedUnsafe(now, 0)
      expect(histogram.shouldRejectRetriesUnsafe(now)).toBe(true)
      const untrusted = yield* Metric.value(
        Metric.withAttributes(RetryHistogram.metrics.requests, {
          histogram: "h-untrusted",
          attempt: "2",
          trusted: "false"
        })
      )
      expect(untrusted.count).toBe(300)
    })
  )

  it.effect("the threshold compares exact shares: 1 of 10 is not above 0.1, 2 of 19 is", () =>
    Effect.sync(() => {
      const histogram = RetryHistogram.makeUnsafe({ threshold: 0.1, minRequests: 1 })
      histogram.recordUnsafe(0, 1)
      for (let i = 0; i < 9; i++) histogram.recordUnsafe(0, 0)
      expect(histogram.shouldRejectRetriesUnsafe(0)).toBe(false)
      histogram.recordUnsafe(0, 2)
      for (let i = 0; i < 8; i++) histogram.recordUnsafe(0, 0)
      expect(histogram.shouldRejectRetriesUnsafe(0)).toBe(true)
    })
  )
})

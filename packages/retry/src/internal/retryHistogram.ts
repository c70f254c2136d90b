import { Options, Ratio, RollingCounter } from "@sluice/core"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import * as MetricLabel from "effect/MetricLabel"
import * as Schema from "effect/Schema"
import type * as RH from "../RetryHistogram.js"

/** @internal */
export const RetryHistogramOptions = Schema.Struct({
  window: Schema.optionalWith(Options.PositiveDuration, { default: () => Duration.seconds(10) }),
  buckets: Schema.optionalWith(Options.PositiveInt, { default: () => 10 }),
  maxAttempt: Schema.optionalWith(
    Options.PositiveInt.pipe(
      Schema.filter((n) => n <= 100, { message: () => "expected at most 100 attempt buckets" })
    ),
    { default: () => 3 }
  ),
  threshold: Schema.optionalWith(Options.Ratio, { default: () => 0.1 }),
  minRequests: Schema.optionalWith(Options.NonNegativeInt, { default: () => 20 }),
  name: Schema.optional(Schema.String)
})

/** @internal */
export const requestsCounter = Metric.counter("sluice_retry_histogram_requests", {
  description:
    "incoming requests by the attempt number they carry (the last bucket is 'n+'); trusted=false: from callers not trusted, not part of the decision",
  incremental: true
})

/** @internal */
export const retryShareGauge = Metric.gauge("sluice_retry_histogram_retry_share", {
  description: "share of incoming requests in the window that are retries, when last evaluated"
})

/** @internal */
export const rejectionsCounter = Metric.counter("sluice_retry_histogram_reject_decisions", {
  description: "shouldRejectRetries evaluations that answered true",
  incremental: true
})

const MAX_HEADER_LENGTH = 8

/** @internal */
export const parseAttempt = (value: string | number | null | undefined): number => {
  if (typeof value === "number") return Number.isInteger(value) && value > 0 ? value : 0
  if (typeof value !== "string" || value.length === 0 || value.length > MAX_HEADER_LENGTH) return 0
  const trimmed = value.trim()
  if (!/^\d+$/.test(trimmed)) return 0
  return Number.parseInt(trimmed, 10)
}

class HistogramImpl implements RH.Service {
  private readonly counters: ReadonlyArray<RollingCounter.RollingCounter>
  private readonly untrustedCounters: ReadonlyArray<RollingCounter.RollingCounter>
  private readonly untrustedTags: ReadonlyArray<ReadonlyArray<MetricLabel.MetricLabel>>
  private readonly threshold: Ratio.ExactRatio
  private readonly attemptTags: ReadonlyArray<ReadonlyArray<MetricLabel.MetricLabel>>
  private readonly tags: ReadonlyArray<MetricLabel.MetricLabel>
  constructor(readonly options: RH.ResolvedOptions) {
    const { buckets, maxAttempt, window } = options
    this.counters = Array.from({ length: maxAttempt + 1 }, () =>
      RollingCounter.unsafeMake({ window, buckets })
    )
    this.untrustedCounters = Array.from({ length: maxAttempt + 1 }, () =>
      RollingCounter.unsafeMake({ window, buckets })
    )
    this.threshold = Ratio.make(options.threshold)
    this.tags = options.name === undefined ? [] : [MetricLabel.make("histogram", options.name)]
    this.attemptTags = Array.from({ length: maxAttempt + 1 }, (_, i) => [
      ...this.tags,
      MetricLabel.make("attempt", i === maxAttempt ? `${i}+` : String(i))
    ])
    this.untrustedTags = Array.from({ length: maxAttempt + 1 }, (_, i) => [
      ...this.tags,
      MetricLabel.make("attempt", i === maxAttempt ? `${i}+` : String(i)),
      MetricLabel.make("trusted", "false")
    ])
  }
  readonly unsafeRecord = (nowMillis: number, attempt: number): void => {
    const index = Math.min(this.options.maxAttempt, parseAttempt(attempt))
    this.counters[index]!.unsafeAdd(nowMillis, 1)
    requestsCounter.unsafeUpdate(1, this.attemptTags[index]!)
  }
  readonly unsafeRecordUntrusted = (nowMillis: number, attempt: number): void => {
    const index = Math.min(this.options.maxAttempt, parseAttempt(attempt))
    this.untrustedCounters[index]!.unsafeAdd(nowMillis, 1)
    requestsCounter.unsafeUpdate(1, this.untrustedTags[index]!)
  }
  readonly unsafeSnapshot = (nowMillis: number): RH.Snapshot => {
    const byAttempt = this.counters.map((counter) => counter.unsafeTotal(nowMillis))
    const total = byAttempt.reduce((a, b) => a + b, 0)
    const retries = total - byAttempt[0]!
    const shareOfRetries = total === 0 ? 0 : retries / total
    const untrustedByAttempt = this.untrustedCounters.map((counter) => counter.unsafeTotal(nowMillis))
    const untrustedTotal = untrustedByAttempt.reduce((a, b) => a + b, 0)
    return {
      total,
      retries,
      shareOfRetries,
      byAttempt,
      untrusted: {
        total: untrustedTotal,
        retries: untrustedTotal - untrustedByAttempt[0]!,
        byAttempt: untrustedByAttempt
      }
    }
  }
  readonly unsafeShouldRejectRetries = (nowMillis: number): boolean => {
    const { retries, shareOfRetries, total } = this.unsafeSnapshot(nowMillis)
    retryShareGauge.unsafeUpdate(shareOfRetries, this.tags)
    // Exact share: `retries / total > threshold` without a floating-point miss.
    const reject = total >= this.options.minRequests && this.threshold.above(retries, total)
    if (reject) rejectionsCounter.unsafeUpdate(1, this.tags)
    return reject
  }
  readonly record = (attempt: number): Effect.Effect<void> => {
    return Effect.clockWith((clock) =>
      Effect.sync(() => this.unsafeRecord(clock.unsafeCurrentTimeMillis(), attempt))
    )
  }
  get snapshot(): Effect.Effect<RH.Snapshot> {
    return Effect.map(Clock.currentTimeMillis, (now) => this.unsafeSnapshot(now))
  }
  get shareOfRetries(): Effect.Effect<number> {
    return Effect.map(this.snapshot, (s) => s.shareOfRetries)
  }
  get shouldRejectRetries(): Effect.Effect<boolean> {
    return Effect.map(Clock.currentTimeMillis, (now) => this.unsafeShouldRejectRetries(now))
  }
}

const decode = Options.decode("RetryHistogram", RetryHistogramOptions)
const decodeSync = Options.decodeSync("RetryHistogram", RetryHistogramOptions)

/** @internal */
export const make = (
  options: RH.RetryHistogramOptions = {}
): Effect.Effect<RH.Service, Options.InvalidOptions> =>
  Effect.map(decode(options), (resolved) => new HistogramImpl(resolved))

/** @internal */
export const unsafeMake = (options: RH.RetryHistogramOptions = {}): RH.Service =>
  new HistogramImpl(decodeSync(options))

import { Options } from "@sluice/core"
import * as Kernel from "@sluice/kernel/retry/RetryHistogram"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import * as MetricLabel from "effect/MetricLabel"
import * as Schema from "effect/Schema"
import type * as RH from "../RetryHistogram.js"
import { atNow } from "./retryBudget.js"

/** @internal */
export const RetryHistogramOptions = Schema.Struct({
  ...Options.fields(Kernel.options),
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

/** @internal */
export const parseAttempt: (value: string | number | null | undefined) => number = Kernel.parseAttempt

class HistogramImpl implements RH.Service {
  private readonly histogram: Kernel.Histogram
  private readonly untrustedTags: ReadonlyArray<ReadonlyArray<MetricLabel.MetricLabel>>
  private readonly attemptTags: ReadonlyArray<ReadonlyArray<MetricLabel.MetricLabel>>
  private readonly tags: ReadonlyArray<MetricLabel.MetricLabel>
  constructor(readonly options: RH.ResolvedOptions) {
    const { maxAttempt } = options
    this.histogram = new Kernel.Histogram({ ...options, windowMillis: Duration.toMillis(options.window) })
    this.tags = options.name === undefined ? [] : [MetricLabel.make("histogram", options.name)]
    const tagsOf = (...extra: ReadonlyArray<MetricLabel.MetricLabel>) =>
      Array.from({ length: maxAttempt + 1 }, (_, i) => [
        ...this.tags,
        MetricLabel.make("attempt", Kernel.bucketLabel(i, maxAttempt)),
        ...extra
      ])
    this.attemptTags = tagsOf()
    this.untrustedTags = tagsOf(MetricLabel.make("trusted", "false"))
  }
  readonly unsafeRecord = (nowMillis: number, attempt: number): void => {
    requestsCounter.unsafeUpdate(1, this.attemptTags[this.histogram.record(nowMillis, attempt)]!)
  }
  readonly unsafeRecordUntrusted = (nowMillis: number, attempt: number): void => {
    requestsCounter.unsafeUpdate(1, this.untrustedTags[this.histogram.recordUntrusted(nowMillis, attempt)]!)
  }
  readonly unsafeSnapshot = (nowMillis: number): RH.Snapshot => this.histogram.snapshot(nowMillis)
  readonly unsafeShouldRejectRetries = (nowMillis: number): boolean => {
    const { reject, shareOfRetries } = this.histogram.decide(nowMillis)
    retryShareGauge.unsafeUpdate(shareOfRetries, this.tags)
    if (reject) rejectionsCounter.unsafeUpdate(1, this.tags)
    return reject
  }
  readonly record = (attempt: number): Effect.Effect<void> => atNow((now) => this.unsafeRecord(now, attempt))
  get snapshot(): Effect.Effect<RH.Snapshot> {
    return atNow(this.unsafeSnapshot)
  }
  get shareOfRetries(): Effect.Effect<number> {
    return Effect.map(this.snapshot, (s) => s.shareOfRetries)
  }
  get shouldRejectRetries(): Effect.Effect<boolean> {
    return atNow(this.unsafeShouldRejectRetries)
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

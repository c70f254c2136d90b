import { Options } from "@sluice/core"
import * as Meters from "@sluice/core/shared/Meters"
import * as Kernel from "@sluice/kernel/retry/RetryHistogram"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import * as Schema from "effect/Schema"
import type * as RH from "../RetryHistogram.js"
import { atNow } from "./retryBudget.js"

/** @internal */
export const RetryHistogramOptions = Schema.Struct({
  ...Options.fields(Kernel.options),
  name: Schema.optional(Schema.String)
})

/** @internal */
export const requests = Meters.counter(
  "sluice_retry_histogram_requests",
  "incoming requests by the attempt number they carry (the last bucket is 'n+'); trusted=false: from callers not trusted, not part of the decision"
)

/** @internal */
export const retryShare = Meters.gauge(
  "sluice_retry_histogram_retry_share",
  "share of incoming requests in the window that are retries, when last evaluated"
)

/** @internal */
export const rejections = Meters.counter(
  "sluice_retry_histogram_reject_decisions",
  "shouldRejectRetries evaluations that answered true"
)

/** @internal */
export const parseAttempt: (value: string | number | null | undefined) => number = Kernel.parseAttempt

/** Runs `f` with the time and the context of the running fiber (whose registry holds the series). */
const inFiber = <A>(f: (now: number, context: Context.Context<never>) => A): Effect.Effect<A> =>
  Effect.withFiber((fiber) =>
    Effect.succeed(f(fiber.getRef(Clock.Clock).currentTimeMillisUnsafe(), fiber.context))
  )

/** The `unsafe*` methods run outside any fiber: their metrics go to the default `MetricRegistry`. */
const noFiber: Context.Context<never> = Context.empty()

class HistogramImpl implements RH.Service {
  private readonly histogram: Kernel.Histogram
  /** One counter per attempt bucket and trust, built once (`Meters.Family.of`). */
  private readonly requests: ReadonlyArray<Metric.Counter<number>>
  private readonly untrustedRequests: ReadonlyArray<Metric.Counter<number>>
  private readonly retryShare: Metric.Gauge<number>
  private readonly rejections: Metric.Counter<number>
  /** The same series bound to the default registry, for the `unsafe*` methods a server calls per request. */
  private readonly noFiber: {
    readonly requests: ReadonlyArray<Meters.Bound<number>>
    readonly untrustedRequests: ReadonlyArray<Meters.Bound<number>>
    readonly retryShare: Meters.Bound<number>
    readonly rejections: Meters.Bound<number>
  }
  constructor(readonly options: RH.ResolvedOptions) {
    const { maxAttempt } = options
    this.histogram = new Kernel.Histogram({ ...options, windowMillis: Duration.toMillis(options.window) })
    const named = options.name === undefined ? undefined : { histogram: options.name }
    const requestsOf = (extra: Metric.Metric.AttributeSet) =>
      Array.from({ length: maxAttempt + 1 }, (_, i) =>
        requests.of({ ...named, attempt: Kernel.bucketLabel(i, maxAttempt), ...extra })
      )
    this.requests = requestsOf({})
    this.untrustedRequests = requestsOf({ trusted: "false" })
    this.retryShare = retryShare.of(named)
    this.rejections = rejections.of(named)
    const bound = <I>(metric: Metric.Metric<I, unknown>) => Meters.bind(metric, noFiber)
    this.noFiber = {
      requests: this.requests.map(bound),
      untrustedRequests: this.untrustedRequests.map(bound),
      retryShare: bound(this.retryShare),
      rejections: bound(this.rejections)
    }
  }
  private readonly recordIn = (nowMillis: number, attempt: number, context: Context.Context<never>): void => {
    this.requests[this.histogram.record(nowMillis, attempt)]!.updateUnsafe(1, context)
  }
  /** The decision at `nowMillis`, its share and (when it rejects) one rejection counted where given. */
  private decide(
    nowMillis: number,
    share: (value: number) => void,
    rejected: (count: number) => void
  ): boolean {
    const { reject, shareOfRetries } = this.histogram.decide(nowMillis)
    share(shareOfRetries)
    if (reject) rejected(1)
    return reject
  }
  private readonly decideIn = (nowMillis: number, context: Context.Context<never>): boolean =>
    this.decide(
      nowMillis,
      (value) => this.retryShare.updateUnsafe(value, context),
      (count) => this.rejections.updateUnsafe(count, context)
    )
  readonly recordUnsafe = (nowMillis: number, attempt: number): void => {
    this.noFiber.requests[this.histogram.record(nowMillis, attempt)]!.update(1)
  }
  readonly recordUntrustedUnsafe = (nowMillis: number, attempt: number): void => {
    this.noFiber.untrustedRequests[this.histogram.recordUntrusted(nowMillis, attempt)]!.update(1)
  }
  readonly snapshotUnsafe = (nowMillis: number): RH.Snapshot => this.histogram.snapshot(nowMillis)
  readonly shouldRejectRetriesUnsafe = (nowMillis: number): boolean =>
    this.decide(nowMillis, this.noFiber.retryShare.update, this.noFiber.rejections.update)
  readonly record = (attempt: number): Effect.Effect<void> =>
    inFiber((now, context) => this.recordIn(now, attempt, context))
  get snapshot(): Effect.Effect<RH.Snapshot> {
    return atNow(this.snapshotUnsafe)
  }
  get shareOfRetries(): Effect.Effect<number> {
    return Effect.map(this.snapshot, (s) => s.shareOfRetries)
  }
  get shouldRejectRetries(): Effect.Effect<boolean> {
    return inFiber(this.decideIn)
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
export const makeUnsafe = (options: RH.RetryHistogramOptions = {}): RH.Service =>
  new HistogramImpl(decodeSync(options))

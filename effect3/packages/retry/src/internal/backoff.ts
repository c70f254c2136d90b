import { Options } from "@sluice/core"
import * as Backoff from "@sluice/kernel/retry/Backoff"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import { dual } from "effect/Function"
import * as Option from "effect/Option"
import * as Random from "effect/Random"
import * as Schedule from "effect/Schedule"
import * as ScheduleDecision from "effect/ScheduleDecision"
import * as Interval from "effect/ScheduleInterval"
import * as Intervals from "effect/ScheduleIntervals"
import * as Schema from "effect/Schema"
import type * as B from "../Backoff.js"

const capIssue = (o: { readonly base: Duration.Duration; readonly max: Duration.Duration }) =>
  Backoff.capIssue(Duration.toMillis(o.base), Duration.toMillis(o.max))

const decodeExponential = Options.decodeSync(
  "Backoff.exponential",
  Schema.Struct(Options.fields(Backoff.exponentialOptions)).pipe(Schema.filter(capIssue))
)
const decodeDecorrelated = Options.decodeSync(
  "Backoff.decorrelated",
  Schema.Struct(Options.fields(Backoff.decorrelatedOptions)).pipe(Schema.filter(capIssue))
)
const decodeHonor = Options.decodeSync(
  "Backoff.honorRetryAfter",
  Schema.Struct(Options.fields(Backoff.honorOptions))
)

const InvalidOptionsKey: unique symbol = Symbol.for("@sluice/retry/Backoff/InvalidOptions")

/**
 * A schedule built from invalid options: it carries the `InvalidOptions` (which
 * `Retry.withRetry` / `Retry.make` report as a typed failure) and dies with it if stepped.
 */
const invalidSchedule = (error: Options.InvalidOptions): Schedule.Schedule<any, unknown> =>
  Object.assign(
    Schedule.makeWithState(undefined, () => Effect.die(error)),
    { [InvalidOptionsKey]: error }
  )

/** @internal the `InvalidOptions` a Backoff schedule was built with, if its options were invalid */
export const invalidOptionsOf = (schedule: unknown): Options.InvalidOptions | undefined =>
  typeof schedule === "object" && schedule !== null && InvalidOptionsKey in schedule
    ? (schedule as any)[InvalidOptionsKey]
    : undefined

const guarded =
  <A extends ReadonlyArray<any>, S>(build: (...args: A) => S) =>
  (...args: A): S => {
    try {
      return build(...args)
    } catch (error) {
      if (error instanceof Options.InvalidOptions) return invalidSchedule(error) as S
      throw error
    }
  }

const continueAfter = (now: number, delayMillis: number) =>
  ScheduleDecision.continueWith(Interval.after(now + delayMillis))

/** @internal */
export const exponential = guarded(
  (options: Parameters<typeof B.exponential>[0]): Schedule.Schedule<Duration.Duration> => {
    const { base, factor, max } = decodeExponential(options)
    const baseMillis = Duration.toMillis(base)
    const maxMillis = Duration.toMillis(max)
    return Schedule.makeWithState(0, (now, _input: unknown, n: number) => {
      const millis = Backoff.exponential(baseMillis, factor, maxMillis, n)
      return Effect.succeed([n + 1, Duration.millis(millis), continueAfter(now, millis)] as const)
    })
  }
)

/** @internal */
export const jitter = dual<
  (mode: B.JitterMode) => <Out, In, R>(self: Schedule.Schedule<Out, In, R>) => Schedule.Schedule<Out, In, R>,
  <Out, In, R>(self: Schedule.Schedule<Out, In, R>, mode: B.JitterMode) => Schedule.Schedule<Out, In, R>
>(2, (self, mode) =>
  // a schedule built from invalid options stays itself, so `Retry` still reports them
  invalidOptionsOf(self) !== undefined
    ? self
    : Schedule.modifyDelayEffect(self, (_, delay) =>
        Effect.map(Random.next, (r) => Duration.millis(Backoff.jitter(mode, Duration.toMillis(delay), r)))
      )
)

/** @internal */
export const decorrelated = guarded(
  (options: Parameters<typeof B.decorrelated>[0]): Schedule.Schedule<Duration.Duration> => {
    const decoded = decodeDecorrelated(options)
    const base = Duration.toMillis(decoded.base)
    const max = Duration.toMillis(decoded.max)
    return Schedule.makeWithState(base, (now, _input: unknown, previous: number) =>
      Effect.map(Random.next, (r) => {
        const millis = Backoff.decorrelated(base, max, previous, r)
        return [millis, Duration.millis(millis), continueAfter(now, millis)] as const
      })
    )
  }
)

/** @internal */
export const clampRetryAfter = (
  hint: Duration.Duration | number,
  maxWait: Duration.DurationInput
): Duration.Duration => {
  const max = Duration.decode(maxWait)
  const millis = typeof hint === "number" ? hint : Duration.toMillis(hint)
  return Backoff.isUsableRetryAfter(millis, Duration.toMillis(max)) ? Duration.millis(millis) : max
}

/** @internal a `retryAfter` hint in milliseconds; `undefined` when it is neither a Duration nor a number */
export const millisOf = (hint: unknown): number | undefined =>
  typeof hint === "number" ? hint : Duration.isDuration(hint) ? Duration.toMillis(hint) : undefined

/** @internal */
export const retryAfterOf = (error: unknown): Option.Option<Duration.Duration | number> => {
  const hint = Backoff.retryAfterOf(error)
  return Duration.isDuration(hint) || typeof hint === "number" ? Option.some(hint) : Option.none()
}

/** @internal */
export const hintMillis = (error: unknown, maxWaitMillis: number): number => {
  const millis = millisOf(Backoff.retryAfterOf(error))
  // through a Duration, as every delay is slept: whole nanoseconds
  return millis === undefined
    ? 0
    : Duration.toMillis(Duration.millis(Backoff.clampRetryAfter(millis, maxWaitMillis)))
}

const honoring = guarded(
  <Out, In, R>(
    self: Schedule.Schedule<Out, In, R>,
    options?: { readonly maxWait?: Duration.DurationInput | undefined }
  ): Schedule.Schedule<Out, In, R> => {
    const maxWaitMillis = Duration.toMillis(decodeHonor(options ?? {}).maxWait)
    return Schedule.makeWithState(self.initial, (now, input: In, state) =>
      Effect.map(self.step(now, input, state), ([state, out, decision]) => {
        if (ScheduleDecision.isDone(decision)) return [state, out, decision] as const
        const computed = Intervals.start(decision.intervals) - now
        const delay = Backoff.honorRetryAfter(computed, hintMillis(input, maxWaitMillis))
        return [state, out, delay === computed ? decision : continueAfter(now, delay)] as const
      })
    )
  }
)

/** @internal (typed by the public module) */
export const honorRetryAfter = dual(
  (args) => Schedule.isSchedule(args[0]),
  (self: Schedule.Schedule<unknown, unknown>, options?: Parameters<typeof honoring>[1]) =>
    // a schedule built from invalid options stays itself, so `Retry` still reports them
    invalidOptionsOf(self) !== undefined ? self : honoring(self, options)
)

/** @internal */
export const defaultSchedule: Schedule.Schedule<Duration.Duration> = jitter(
  exponential(Backoff.defaultExponential),
  Backoff.defaultJitter
)

import { Options } from "@sluice/core"
import * as Backoff from "@sluice/kernel/retry/Backoff"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import { dual } from "effect/Function"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import * as Random from "effect/Random"
import * as Schedule from "effect/Schedule"
import * as ScheduleDecision from "effect/ScheduleDecision"
import * as Interval from "effect/ScheduleInterval"
import * as Intervals from "effect/ScheduleIntervals"
import * as Schema from "effect/Schema"

/** @internal */
export const ExponentialOptions = Schema.Struct({
  base: Options.PositiveDuration,
  factor: Schema.optionalWith(
    Schema.Number.pipe(
      Schema.filter((n) => Number.isFinite(n) && n >= 1, {
        message: (issue) => `expected a finite factor >= 1, got ${String(issue.actual)}`
      })
    ),
    { default: () => 2 }
  ),
  max: Schema.optionalWith(Options.NonNegativeDuration, { default: () => Duration.seconds(30) })
}).pipe(
  Schema.filter((o) =>
    Duration.lessThan(o.max, o.base)
      ? { path: ["max"], message: "the maximum delay must not be below the base delay" }
      : undefined
  )
)

/** @internal */
export const DecorrelatedOptions = Schema.Struct({
  base: Options.PositiveDuration,
  max: Schema.optionalWith(Options.NonNegativeDuration, { default: () => Duration.seconds(30) })
}).pipe(
  Schema.filter((o) =>
    Duration.lessThan(o.max, o.base)
      ? { path: ["max"], message: "the maximum delay must not be below the base delay" }
      : undefined
  )
)

/** @internal */
export const HonorOptions = Schema.Struct({
  maxWait: Schema.optionalWith(Options.NonNegativeDuration, { default: () => Duration.seconds(30) })
})

const decodeExponential = Options.decodeSync("Backoff.exponential", ExponentialOptions)
const decodeDecorrelated = Options.decodeSync("Backoff.decorrelated", DecorrelatedOptions)
const decodeHonor = Options.decodeSync("Backoff.honorRetryAfter", HonorOptions)

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
  <O, S>(build: (options: O) => S) =>
  (options: O): S => {
    try {
      return build(options)
    } catch (error) {
      if (error instanceof Options.InvalidOptions) return invalidSchedule(error) as S
      throw error
    }
  }

const continueAfter = (now: number, delayMillis: number) =>
  ScheduleDecision.continueWith(Interval.after(now + delayMillis))

/** @internal */
export const exponential = guarded(
  (options: {
    readonly base: Duration.DurationInput
    readonly factor?: number | undefined
    readonly max?: Duration.DurationInput | undefined
  }): Schedule.Schedule<Duration.Duration> => {
    const { base, factor, max } = decodeExponential(options as any)
    const baseMillis = Duration.toMillis(base)
    const maxMillis = Duration.toMillis(max)
    return Schedule.makeWithState(0, (now, _input: unknown, n: number) => {
      const millis = Backoff.exponential(baseMillis, factor, maxMillis, n)
      return Effect.succeed([n + 1, Duration.millis(millis), continueAfter(now, millis)] as const)
    })
  }
)

/** @internal */
export type JitterMode = "full" | "equal"

/** @internal */
export const jitter = dual<
  (mode: JitterMode) => <Out, In, R>(self: Schedule.Schedule<Out, In, R>) => Schedule.Schedule<Out, In, R>,
  <Out, In, R>(self: Schedule.Schedule<Out, In, R>, mode: JitterMode) => Schedule.Schedule<Out, In, R>
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
  (options: {
    readonly base: Duration.DurationInput
    readonly max?: Duration.DurationInput | undefined
  }): Schedule.Schedule<Duration.Duration> => {
    const decoded = decodeDecorrelated(options as any)
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

/** @internal */
export const retryAfterOf = (error: unknown): Option.Option<Duration.Duration | number> => {
  // A lower layer that gave up keeps its cause, and with it the last hint.
  if (Predicate.isTagged(error, "DontRetry") && Predicate.hasProperty(error, "cause")) {
    return retryAfterOf((error as { readonly cause: unknown }).cause)
  }
  if (!Predicate.hasProperty(error, "retryAfter")) return Option.none()
  const hint = (error as { readonly retryAfter: unknown }).retryAfter
  if (Duration.isDuration(hint) || typeof hint === "number") return Option.some(hint)
  return Option.none()
}

/** @internal */
export const hintMillis = (error: unknown, maxWaitMillis: number): number => {
  const hint = retryAfterOf(error)
  if (Option.isNone(hint)) return 0
  const millis = typeof hint.value === "number" ? hint.value : Duration.toMillis(hint.value)
  // through a Duration, as every delay is slept: whole nanoseconds
  return Duration.toMillis(Duration.millis(Backoff.clampRetryAfter(millis, maxWaitMillis)))
}

/** @internal */
export const honorRetryAfter = dual<
  (options?: {
    readonly maxWait?: Duration.DurationInput | undefined
  }) => <Out, In, R>(self: Schedule.Schedule<Out, In, R>) => Schedule.Schedule<Out, In, R>,
  <Out, In, R>(
    self: Schedule.Schedule<Out, In, R>,
    options?: { readonly maxWait?: Duration.DurationInput | undefined }
  ) => Schedule.Schedule<Out, In, R>
>(
  (args) => Schedule.isSchedule(args[0]),
  <Out, In, R>(
    self: Schedule.Schedule<Out, In, R>,
    options?: { readonly maxWait?: Duration.DurationInput | undefined }
  ): Schedule.Schedule<Out, In, R> => {
    if (invalidOptionsOf(self) !== undefined) return self
    let maxWaitMillis: number
    try {
      maxWaitMillis = Duration.toMillis(decodeHonor((options ?? {}) as any).maxWait)
    } catch (error) {
      if (error instanceof Options.InvalidOptions) return invalidSchedule(error)
      throw error
    }
    return Schedule.makeWithState(self.initial, (now, input: In, state) =>
      Effect.map(self.step(now, input, state), ([state, out, decision]) => {
        if (ScheduleDecision.isDone(decision)) return [state, out, decision] as const
        const computed = Intervals.start(decision.intervals) - now
        const delay = Backoff.honorRetryAfter(computed, hintMillis(input, maxWaitMillis))
        if (delay === computed) return [state, out, decision] as const
        return [state, out, continueAfter(now, delay)] as const
      })
    )
  }
)

/** @internal */
export const defaultSchedule: Schedule.Schedule<Duration.Duration> = jitter(
  exponential({ base: Duration.millis(100), factor: 2, max: Duration.seconds(5) }),
  "full"
)

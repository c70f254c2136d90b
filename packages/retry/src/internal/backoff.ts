import { Options } from "@sluice/core"
import * as Backoff from "@sluice/kernel/retry/Backoff"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import { dual } from "effect/Function"
import * as Option from "effect/Option"
import * as Random from "effect/Random"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import type * as B from "../Backoff.js"

/** The kernel's cap rule as a filter of the decoded options, failing at the `max` field. */
const capCheck = Schema.makeFilter<{ readonly base: Duration.Duration; readonly max: Duration.Duration }>(
  (o) => {
    const issue = Backoff.capIssue(Duration.toMillis(o.base), Duration.toMillis(o.max))
    return issue === undefined ? undefined : { path: issue.path, issue: issue.message }
  }
)

const decodeExponential = Options.decodeSync(
  "Backoff.exponential",
  Schema.Struct(Options.fields(Backoff.exponentialOptions)).check(capCheck)
)
const decodeDecorrelated = Options.decodeSync(
  "Backoff.decorrelated",
  Schema.Struct(Options.fields(Backoff.decorrelatedOptions)).check(capCheck)
)
const decodeHonor = Options.decodeSync(
  "Backoff.honorRetryAfter",
  Schema.Struct(Options.fields(Backoff.honorOptions))
)

const InvalidOptionsKey: unique symbol = Symbol.for("@sluice/retry/Backoff/InvalidOptions")

/**
 * A schedule built from invalid options: it carries the `InvalidOptions` (which
 * `Retry.withRetry` / `Retry.make` report as a typed failure) and dies with it if stepped
 * (`Schedule.toStep` turns the failed construction into a step that fails with its cause).
 */
const invalidSchedule = (error: Options.InvalidOptions): Schedule.Schedule<never> =>
  Object.assign(Schedule.fromStep<unknown, never, never, never, never, never>(Effect.die(error)), {
    [InvalidOptionsKey]: error
  })

/** @internal the `InvalidOptions` a Backoff schedule was built with, if its options were invalid */
export const invalidOptionsOf = (schedule: unknown): Options.InvalidOptions | undefined =>
  typeof schedule === "object" && schedule !== null && InvalidOptionsKey in schedule
    ? (schedule as { readonly [InvalidOptionsKey]: Options.InvalidOptions })[InvalidOptionsKey]
    : undefined

const guarded =
  <A extends ReadonlyArray<unknown>, S>(build: (...args: A) => S) =>
  (...args: A): S => {
    try {
      return build(...args)
    } catch (error) {
      // `S` is a schedule type; the invalid schedule never outputs, so it fits any of them.
      if (error instanceof Options.InvalidOptions) return invalidSchedule(error) as S
      throw error
    }
  }

/** One recurrence: the delay is also the output, as Effect's own `Schedule.exponential` does. */
const recurAfter = (millis: number): Effect.Effect<[Duration.Duration, Duration.Duration]> => {
  const delay = Duration.millis(millis)
  return Effect.succeed([delay, delay])
}

/** @internal */
export const exponential = guarded(
  (options: Parameters<typeof B.exponential>[0]): Schedule.Schedule<Duration.Duration> => {
    const { base, factor, max } = decodeExponential(options)
    const baseMillis = Duration.toMillis(base)
    const maxMillis = Duration.toMillis(max)
    // The count lives in the closure `toStep` makes, so every run of the schedule starts at 0.
    return Schedule.fromStep(
      Effect.sync(() => {
        let n = 0
        return (_now: number, _input: unknown) =>
          recurAfter(Backoff.exponential(baseMillis, factor, maxMillis, n++))
      })
    )
  }
)

/** @internal */
export const jitter = dual<
  (
    mode: B.JitterMode
  ) => <Out, In, E, R>(self: Schedule.Schedule<Out, In, E, R>) => Schedule.Schedule<Out, In, E, R>,
  <Out, In, E, R>(
    self: Schedule.Schedule<Out, In, E, R>,
    mode: B.JitterMode
  ) => Schedule.Schedule<Out, In, E, R>
>(2, (self, mode) =>
  // a schedule built from invalid options stays itself, so `Retry` still reports them
  invalidOptionsOf(self) !== undefined
    ? self
    : Schedule.modifyDelay(self, ({ duration }) =>
        Effect.map(Random.next, (r) => Duration.millis(Backoff.jitter(mode, Duration.toMillis(duration), r)))
      )
)

/** @internal */
export const decorrelated = guarded(
  (options: Parameters<typeof B.decorrelated>[0]): Schedule.Schedule<Duration.Duration> => {
    const decoded = decodeDecorrelated(options)
    const base = Duration.toMillis(decoded.base)
    const max = Duration.toMillis(decoded.max)
    return Schedule.fromStep(
      Effect.sync(() => {
        let previous = base
        return (_now: number, _input: unknown) =>
          Effect.flatMap(Random.next, (r) =>
            recurAfter((previous = Backoff.decorrelated(base, max, previous, r)))
          )
      })
    )
  }
)

/** @internal */
export const clampRetryAfter = (
  hint: Duration.Duration | number,
  maxWait: Duration.Input
): Duration.Duration => {
  const max = Duration.fromInputUnsafe(maxWait)
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

type HonorOptions = { readonly maxWait?: Duration.Input | undefined }

const honoring = guarded(
  <Out, In, E, R>(
    self: Schedule.Schedule<Out, In, E, R>,
    options?: HonorOptions
  ): Schedule.Schedule<Out, In, E, R> => {
    const maxWaitMillis = Duration.toMillis(decodeHonor(options ?? {}).maxWait)
    // Only the delay of a recurrence changes: a schedule that is done stays done.
    return Schedule.modifyDelay(self, ({ duration, input }) => {
      const computed = Duration.toMillis(duration)
      const delay = Backoff.honorRetryAfter(computed, hintMillis(input, maxWaitMillis))
      return Effect.succeed(delay === computed ? duration : Duration.millis(delay))
    })
  }
)

/** @internal */
export const honorRetryAfter = dual<
  (
    options?: HonorOptions
  ) => <Out, In, E, R>(self: Schedule.Schedule<Out, In, E, R>) => Schedule.Schedule<Out, In, E, R>,
  <Out, In, E, R>(
    self: Schedule.Schedule<Out, In, E, R>,
    options?: HonorOptions
  ) => Schedule.Schedule<Out, In, E, R>
>(
  (args) => Schedule.isSchedule(args[0]),
  (self, options) =>
    // a schedule built from invalid options stays itself, so `Retry` still reports them
    invalidOptionsOf(self) !== undefined ? self : honoring(self, options)
)

/** @internal */
export const defaultSchedule: Schedule.Schedule<Duration.Duration> = jitter(
  exponential(Backoff.defaultExponential),
  Backoff.defaultJitter
)

/**
 * Answers a call from a fallback when it fails because a backend is overloaded, in the manner of
 * Polly's Fallback strategy: a degraded answer (a cached copy, a default, a cheaper source)
 * instead of an error, for the failures where one helps.
 *
 * **Details**
 *
 * - Only an overload signal is answered: `Overloaded`, `QuotaExceeded`, `Throttled`,
 *   `CircuitOpen`, or a `DontRetry` that gave up on one of these (a retry policy's give-up, a
 *   server's "don't retry" of a shed). A bad request, a bug or a defect passes through: a
 *   fallback there would hide it (the rule is the kernel's `fallback/Fallback`).
 * - {@link withFallback} runs any effect as the fallback. {@link makeCache} remembers the last
 *   good answer per key (bounded in keys and in age) and serves it when the call fails so; its
 *   answers say which they are: `Fresh`, or `Stale` with their age and the signal that made
 *   them stale, so the type tells a caller that the value may be old.
 * - Every fallback served is counted: `sluice_fallback_total{policy, signal, result}`, `result`
 *   `"served"` or, for a cache with nothing young enough, `"missed"` (the error passes on).
 *
 * **Gotchas**
 *
 * - Put the fallback outside the retry policy: inside, it would answer the first shed and no
 *   retry would ever run.
 * - A cache is state: make it once (in a Layer or at start-up) and share it, not per call.
 *
 * @example
 * ```ts
 * // snippet: compile-only — declares the call it wraps
 * import { Errors } from "@sluice/core"
 * import { Fallback } from "@sluice/retry"
 * import { Effect } from "effect"
 *
 * declare const fetchPrices: (sku: string) => Effect.Effect<ReadonlyArray<number>, Errors.Overloaded>
 *
 * const program = Effect.gen(function* () {
 *   const cache = yield* Fallback.makeCache<string, ReadonlyArray<number>>({ maxStale: "5 minutes" })
 *   const answer = yield* fetchPrices("sku-42").pipe(cache.withCache("sku-42"))
 *   return answer._tag === "Stale" ? `prices from ${answer.age} ago` : "fresh prices"
 * })
 * ```
 *
 * @since 1.0.0
 */
import { Errors, Options } from "@sluice/core"
import * as Meters from "@sluice/core/shared/Meters"
import * as Kernel from "@sluice/kernel/fallback/Fallback"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import { dual } from "effect/Function"
import type * as Metric from "effect/Metric"
import * as Schema from "effect/Schema"

/**
 * The overload signal a fallback answered, by the tag of the error (under any `DontRetry`).
 *
 * @since 1.0.0
 * @category models
 */
export type Signal = Kernel.Signal

/**
 * The overload signal `error` is (looking through `DontRetry`), `undefined` for anything else.
 *
 * @example
 * ```ts
 * import { Errors } from "@sluice/core"
 * import { Fallback } from "@sluice/retry"
 *
 * console.log(Fallback.signalOf(new Errors.DontRetry({ reason: "attempts", cause: new Errors.Overloaded({ reason: "shed" }) }))) // prints: Overloaded
 * console.log(Fallback.signalOf(new Error("bug"))) // prints: undefined
 * ```
 * @since 1.0.0
 * @category predicates
 */
export const signalOf: (error: unknown) => Signal | undefined = Kernel.signalOf

/**
 * A fresh answer: the call succeeded.
 *
 * @since 1.0.0
 * @category models
 */
export interface Fresh<A> {
  readonly _tag: "Fresh"
  readonly value: A
}

/**
 * A remembered answer served because the call failed with an overload `signal`; `age` is how
 * old it was.
 *
 * @since 1.0.0
 * @category models
 */
export interface Stale<A> {
  readonly _tag: "Stale"
  readonly value: A
  readonly age: Duration.Duration
  readonly signal: Signal
}

/**
 * What a call under a {@link Cache} answers.
 *
 * @since 1.0.0
 * @category models
 */
export type Answer<A> = Fresh<A> | Stale<A>

const fallbacksTotal = Meters.counter(
  "sluice_fallback",
  "calls answered by a fallback (result served), or that found no fallback young enough (result missed), by signal"
)

/** One series per (policy, signal, result), built on first use. */
const seriesOf = (
  policy: string
): ((signal: Signal, result: "served" | "missed") => Metric.Counter<number>) => {
  const series = new Map<string, Metric.Counter<number>>()
  return (signal, result) => {
    const key = `${signal}/${result}`
    let counter = series.get(key)
    if (counter === undefined) {
      counter = fallbacksTotal.of({ policy, signal, result })
      series.set(key, counter)
    }
    return counter
  }
}

const count = (counter: Metric.Counter<number>): void =>
  counter.updateUnsafe(1, Fiber.getCurrent()?.context ?? Context.empty())

/**
 * Options of {@link withFallback}: `orElse`, the fallback, given the error and its signal, and
 * the `name` its metrics carry (default `"fallback"`).
 *
 * @since 1.0.0
 * @category models
 */
export interface FallbackOptions<E, B, E2, R2> {
  readonly orElse: (error: E, signal: Signal) => Effect.Effect<B, E2, R2>
  readonly name?: string | undefined
}

/**
 * Runs `self`; when it fails with an overload signal, answers with `orElse` instead. Any other
 * failure, and every defect, passes through unchanged.
 *
 * @example
 * ```ts
 * // snippet: compile-only — declares the call it wraps
 * import { Errors } from "@sluice/core"
 * import { Fallback } from "@sluice/retry"
 * import { Effect } from "effect"
 *
 * declare const search: (q: string) => Effect.Effect<ReadonlyArray<string>, Errors.Overloaded | Errors.DontRetry>
 * declare const searchFirstShard: (q: string) => Effect.Effect<ReadonlyArray<string>>
 *
 * const results = search("effect").pipe(Fallback.withFallback({ orElse: () => searchFirstShard("effect") }))
 * ```
 * @since 1.0.0
 * @category combinators
 */
export const withFallback: {
  <E, B, E2, R2>(
    options: FallbackOptions<E, B, E2, R2>
  ): <A, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A | B, E | E2, R | R2>
  <A, E, R, B, E2, R2>(
    self: Effect.Effect<A, E, R>,
    options: FallbackOptions<E, B, E2, R2>
  ): Effect.Effect<A | B, E | E2, R | R2>
} = dual(
  2,
  <A, E, R, B, E2, R2>(
    self: Effect.Effect<A, E, R>,
    options: FallbackOptions<E, B, E2, R2>
  ): Effect.Effect<A | B, E | E2, R | R2> => {
    const meter = seriesOf(options.name ?? "fallback")
    return Effect.catch(self, (error): Effect.Effect<B, E | E2, R2> => {
      const signal = Kernel.signalOf(error)
      if (signal === undefined) return Effect.fail(error)
      count(meter(signal, "served"))
      return options
        .orElse(error, signal)
        .pipe(Effect.withSpan("sluice.fallback", { attributes: { signal } }, { captureStackTrace: false }))
    })
  }
)

/**
 * Options of {@link makeCache}: `maxStale`, the oldest answer served (required); `capacity`,
 * the most keys remembered, least recently used forgotten first (default 1,000); `name`, for
 * metrics (default `"fallback-cache"`).
 *
 * @since 1.0.0
 * @category models
 */
export interface CacheOptions {
  readonly maxStale: Duration.Input
  readonly capacity?: number | undefined
  readonly name?: string | undefined
}

/**
 * The last good answer per key, served when a call fails with an overload signal.
 *
 * @since 1.0.0
 * @category models
 */
export interface Cache<K, A> {
  /** Runs the call under the cache: remembers its answer, or serves the last one on overload. */
  readonly withCache: (key: K) => <E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<Answer<A>, E, R>
  /** How many keys are remembered. */
  readonly size: number
}

const CacheOptionsSchema = Schema.Struct({
  ...Options.fields(Kernel.cacheOptions),
  name: Schema.String.pipe(Schema.withDecodingDefaultType(Effect.succeed("fallback-cache")))
})

const decodeCacheOptions = Options.decode("Fallback.makeCache", CacheOptionsSchema)

/**
 * Makes a {@link Cache}.
 *
 * @example
 * ```ts
 * import { Fallback } from "@sluice/retry"
 * import { Effect } from "effect"
 *
 * const cache = Fallback.makeCache<string, string>({ maxStale: "1 minute", capacity: 10_000 })
 * const answer = Effect.flatMap(cache, (c) => Effect.succeed("fresh").pipe(c.withCache("key")))
 * Effect.runPromise(answer).then(console.log) // prints: { _tag: 'Fresh', value: 'fresh' }
 * ```
 * @since 1.0.0
 * @category constructors
 */
export const makeCache = <K, A>(options: CacheOptions): Effect.Effect<Cache<K, A>, Options.InvalidOptions> =>
  Effect.map(decodeCacheOptions(options), (resolved) => {
    const cache = new Kernel.StaleCache<K, A>({
      capacity: resolved.capacity,
      maxStaleMillis: Duration.toMillis(resolved.maxStale)
    })
    const meter = seriesOf(resolved.name)
    const withCache =
      (key: K) =>
      <E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<Answer<A>, E, R> =>
        Effect.matchEffect(self, {
          onSuccess: (value) =>
            Effect.clockWith((clock) => {
              cache.remember(key, value, clock.currentTimeMillisUnsafe())
              return Effect.succeed<Answer<A>>({ _tag: "Fresh", value })
            }),
          onFailure: (error) => {
            const signal = Kernel.signalOf(error)
            if (signal === undefined) return Effect.fail(error)
            return Effect.flatMap(Clock.currentTimeMillis, (now) => {
              const recalled = cache.recall(key, now)
              count(meter(signal, recalled === undefined ? "missed" : "served"))
              if (recalled === undefined) return Effect.fail(error)
              return Effect.succeed<Answer<A>>({
                _tag: "Stale",
                value: recalled.value,
                age: Duration.millis(recalled.ageMillis),
                signal
              }).pipe(
                Effect.withSpan("sluice.fallback", { attributes: { signal } }, { captureStackTrace: false })
              )
            })
          }
        })
    return {
      withCache,
      get size() {
        return cache.size
      }
    }
  })

/**
 * Whether `error` is an overload signal a fallback answers.
 *
 * @since 1.0.0
 * @category predicates
 */
export const isOverloadSignal = (error: unknown): error is Errors.SluiceError =>
  Kernel.signalOf(error) !== undefined

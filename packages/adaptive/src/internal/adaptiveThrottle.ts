import { Admission, BoundedMap, Criticality, Errors, Options, Outcome, RollingCounter } from "@sluice/core"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import * as MetricLabel from "effect/MetricLabel"
import * as Random from "effect/Random"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import { makeHub } from "./events.js"
import type * as AT from "../AdaptiveThrottle.js"

type Level = Criticality.Criticality

const KValue = Schema.Number.pipe(
  Schema.filter((n) => Number.isFinite(n) && n >= 1, {
    message: (issue) => `expected a finite number >= 1, got ${String(issue.actual)}`
  })
)

// Least critical first: the order in which K must not decrease.
const ascending: ReadonlyArray<Level> = ["SHEDDABLE", "SHEDDABLE_PLUS", "CRITICAL", "CRITICAL_PLUS"]

/** @internal */
export const KByCriticality = Schema.Struct({
  SHEDDABLE: KValue,
  SHEDDABLE_PLUS: KValue,
  CRITICAL: KValue,
  CRITICAL_PLUS: KValue
}).pipe(
  Schema.filter((k) => {
    for (let i = 1; i < ascending.length; i++) {
      const lower = ascending[i - 1]!
      const level = ascending[i]!
      if (k[level] < k[lower]) {
        return {
          path: [level],
          message: `kByCriticality.${level} (${k[level]}) must not be below kByCriticality.${lower} (${k[lower]}): a more critical level may not be throttled earlier`
        }
      }
    }
    return undefined
  })
)

const MaxProbability = Schema.Number.pipe(
  Schema.filter((n) => Number.isFinite(n) && n >= 0 && n < 1, {
    message: (issue) =>
      `expected a probability in [0, 1) (the backend must always be probed), got ${String(issue.actual)}`
  })
)

const RejectionPredicate = Schema.declare(
  (u: unknown): u is (error: unknown) => boolean => typeof u === "function",
  { identifier: "RejectionPredicate", description: "a function (error: unknown) => boolean" }
)

/** @internal */
export const AdaptiveThrottleOptions = Schema.Struct({
  window: Schema.optionalWith(Options.PositiveDuration, { default: () => Duration.minutes(2) }),
  buckets: Schema.optionalWith(Options.PositiveInt, { default: () => 24 }),
  k: Schema.optionalWith(KValue, { default: () => 2 }),
  kByCriticality: Schema.optional(KByCriticality),
  maxProbability: Schema.optionalWith(MaxProbability, { default: () => 0.9 }),
  minRequestRate: Schema.optionalWith(Options.NonNegativeNumber, { default: () => 1 }),
  maxKeys: Schema.optionalWith(Options.PositiveInt, { default: () => 1024 }),
  isRejection: Schema.optional(RejectionPredicate)
})

/** @internal */
export const criticalityWeights: Readonly<Record<Level, number>> = {
  SHEDDABLE: 0.5,
  SHEDDABLE_PLUS: 0.75,
  CRITICAL: 1,
  CRITICAL_PLUS: 2
}

/** @internal */
export const defaultKByCriticality = (k: number): Record<Level, number> => ({
  SHEDDABLE: 1 + (k - 1) * criticalityWeights.SHEDDABLE,
  SHEDDABLE_PLUS: 1 + (k - 1) * criticalityWeights.SHEDDABLE_PLUS,
  CRITICAL: 1 + (k - 1) * criticalityWeights.CRITICAL,
  CRITICAL_PLUS: 1 + (k - 1) * criticalityWeights.CRITICAL_PLUS
})

/** @internal */
export const defaultIsRejection = (error: unknown): boolean => Outcome.ofError(error) === "dropped"

const requestsMetric = Metric.counter("sluice_adaptive_throttle_requests", {
  description: "Requests offered to the adaptive throttle, including those it failed locally",
  incremental: true
})
const acceptsMetric = Metric.counter("sluice_adaptive_throttle_accepts", {
  description: "Requests the backend accepted (answered without a rejection)",
  incremental: true
})
const throttledMetric = Metric.counter("sluice_adaptive_throttle_throttled", {
  description: "Requests failed locally with Throttled",
  incremental: true
})
const probabilityMetric = Metric.gauge("sluice_adaptive_throttle_probability", {
  description: "Current local rejection probability"
})

/** @internal */
export const metrics = {
  requests: requestsMetric,
  accepts: acceptsMetric,
  throttled: throttledMetric,
  probability: probabilityMetric
}

/** The label used for keys beyond the first `maxKeys` distinct ones, so metric cardinality stays bounded. */
const OTHER_KEY = "_other"

class KeyState {
  /** Clock reading of the latest request to this key. */
  lastUsed: number
  readonly requests: RollingCounter.RollingCounter
  readonly accepts: RollingCounter.RollingCounter
  readonly keyTags: ReadonlyArray<MetricLabel.MetricLabel>
  readonly levelTags: Record<Level, ReadonlyArray<MetricLabel.MetricLabel>>
  readonly lastProbability: Record<Level, number> = {
    CRITICAL_PLUS: -1,
    CRITICAL: -1,
    SHEDDABLE_PLUS: -1,
    SHEDDABLE: -1
  }
  /** Levels whose probability gauge has not been pushed as 0 yet. */
  unreportedZeros = Criticality.levels.length
  constructor(
    readonly key: string,
    label: string,
    window: Duration.Duration,
    buckets: number,
    now: number
  ) {
    this.lastUsed = now
    this.requests = RollingCounter.unsafeMake({ window, buckets })
    this.accepts = RollingCounter.unsafeMake({ window, buckets })
    const keyLabel = MetricLabel.make("key", label)
    this.keyTags = [keyLabel]
    const levelTags = {} as Record<Level, ReadonlyArray<MetricLabel.MetricLabel>>
    for (const level of Criticality.levels) {
      levelTags[level] = [keyLabel, MetricLabel.make("criticality", level)]
    }
    this.levelTags = levelTags
  }
}

/** @internal */
export const make = (
  options: AT.AdaptiveThrottleOptions = {}
): Effect.Effect<AT.Service, Options.InvalidOptions> =>
  Effect.flatMap(Options.decode("AdaptiveThrottle", AdaptiveThrottleOptions)(options), (decoded) =>
    Effect.map(Effect.clock, (clock) => unsafeMakeFrom(decoded, clock))
  )

const unsafeMakeFrom = (decoded: typeof AdaptiveThrottleOptions.Type, peekClock: Clock.Clock): AT.Service => {
  const { buckets, maxKeys, maxProbability, window } = decoded
  const kOf: Readonly<Record<Level, number>> = decoded.kByCriticality ?? defaultKByCriticality(decoded.k)
  const minRequests = decoded.minRequestRate * Duration.toSeconds(window)
  // Per-key state, gates and guards: bounded, least recently used key evicted (CLOCK).
  const states = BoundedMap.make<string, KeyState>({ capacity: maxKeys })
  const labelled = new Set<string>()

  const stateFor = (key: string, now: number): KeyState => {
    let state = states.get(key)
    if (state !== undefined) {
      state.lastUsed = now
      return state
    }
    let label = key
    if (!labelled.has(key)) {
      if (labelled.size < maxKeys) labelled.add(key)
      else label = OTHER_KEY
    }
    state = new KeyState(key, label, window, buckets, now)
    states.set(key, state)
    return state
  }

  const hub = makeHub<AT.Event>()

  const kMin = Math.min(...Criticality.levels.map((level) => kOf[level]))

  const probabilityOf = (state: KeyState, level: Level, now: number): number => {
    const requests = state.requests.unsafeTotal(now)
    if (requests === 0 || requests < minRequests) return 0
    const p = (requests - kOf[level] * state.accepts.unsafeTotal(now)) / (requests + 1)
    return p <= 0 ? 0 : p > maxProbability ? maxProbability : p
  }

  /** True when no level can be throttled now: the success path then never reads the criticality. */
  const allClear = (state: KeyState, now: number): boolean => {
    const requests = state.requests.unsafeTotal(now)
    return requests === 0 || requests < minRequests || requests <= kMin * state.accepts.unsafeTotal(now)
  }

  // Recorded at the latest request time of the key, so a call reads the Clock once;
  // a rolling counter files an earlier time into its current bucket.
  const count = (state: KeyState, accepted: boolean) => {
    state.requests.unsafeAdd(state.lastUsed)
    if (accepted) state.accepts.unsafeAdd(state.lastUsed)
    requestsMetric.unsafeUpdate(1, state.keyTags)
    if (accepted) acceptsMetric.unsafeUpdate(1, state.keyTags)
  }

  const report = (state: KeyState, level: Level, p: number) => {
    const last = state.lastProbability[level]
    if (last !== p) {
      if (p === 0) state.unreportedZeros--
      else if (last === 0) state.unreportedZeros++
      state.lastProbability[level] = p
      probabilityMetric.unsafeUpdate(p, state.levelTags[level])
    }
  }

  const reject = (state: KeyState, level: Level, p: number): Effect.Effect<never, Errors.Throttled> => {
    // The throttle's own refusals are requests the application tried (the SRE formula
    // counts them): that is what keeps `p` from running away.
    count(state, false)
    throttledMetric.unsafeUpdate(1, state.levelTags[level])
    hub.unsafeOffer({ _tag: "Throttled", key: state.key, criticality: level, probability: p })
    return Effect.fail(new Errors.Throttled({ key: state.key, probability: p })).pipe(
      Effect.withSpan("sluice.adaptive_throttle.throttled", {
        captureStackTrace: false,
        attributes: { key: state.key, criticality: level, probability: p }
      })
    )
  }

  // What the backend said decides: an accept for an answer, a request without an accept
  // for a drop, nothing at all for work refused on this side or abandoned by its caller.
  const settle = (state: KeyState, outcome: Outcome.Outcome) => {
    if (outcome === "success" || outcome === "failed") count(state, true)
    else if (outcome === "dropped") count(state, false)
  }

  const makeGate = (key: string): Admission.Gate<AT.Ticket, Errors.Throttled> => ({
    tryEnter: (entry) => {
      const state = stateFor(key, entry.now)
      if (allClear(state, entry.now)) {
        // Every level's probability is 0: push the gauges that do not say so yet, once.
        if (state.unreportedZeros > 0) for (const level of Criticality.levels) report(state, level, 0)
        return state
      }
      const p = probabilityOf(state, entry.criticality, entry.now)
      report(state, entry.criticality, p)
      return p <= 0 ? state : Admission.Wait
    },
    enter: (entry) =>
      Effect.flatMap(Context.get(entry.services, Random.Random).next, (draw) => {
        const state = stateFor(key, entry.now)
        const p = probabilityOf(state, entry.criticality, entry.now)
        return draw < p ? reject(state, entry.criticality, p) : Effect.succeed(state)
      }),
    settle: (ticket, outcome) => settle(ticket as KeyState, outcome),
    isDrop: decoded.isRejection
  })

  const gates = BoundedMap.make<string, Admission.Gate<AT.Ticket, Errors.Throttled>>({ capacity: maxKeys })
  const gate = (key: string): Admission.Gate<AT.Ticket, Errors.Throttled> => gates.getOrCreate(key, makeGate)

  const guards = BoundedMap.make<
    string,
    <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E | Errors.Throttled, R>
  >({ capacity: maxKeys })
  const makeGuard = (key: string) => Admission.guard([gate(key)])
  const run = <A, E, R>(
    key: string,
    effect: Effect.Effect<A, E, R>
  ): Effect.Effect<A, E | Errors.Throttled, R> => guards.getOrCreate(key, makeGuard)(effect)

  const unsafeProbability = (
    key: string,
    criticality: Level = Criticality.defaultLevel,
    nowMillis?: number
  ) => {
    const state = states.peek(key)
    if (state === undefined) return 0
    return probabilityOf(state, criticality, nowMillis ?? peekClock.unsafeCurrentTimeMillis())
  }

  const unsafeStats = (key: string, nowMillis?: number) => {
    const state = states.peek(key)
    if (state === undefined) return { requests: 0, accepts: 0 }
    const now = nowMillis ?? peekClock.unsafeCurrentTimeMillis()
    return { requests: state.requests.unsafeTotal(now), accepts: state.accepts.unsafeTotal(now) }
  }

  return {
    withThrottle: (self, key) => run(key, self),
    probability: (key, criticality) =>
      Effect.map(Clock.currentTimeMillis, (now) => unsafeProbability(key, criticality, now)),
    unsafeProbability,
    gate,
    unsafeStats,
    unsafeKeys: () => Array.from(states.keys()),
    k: (criticality) => kOf[criticality],
    maxProbability,
    minRequestRate: decoded.minRequestRate,
    window,
    events: Stream.fromPubSub(hub)
  }
}

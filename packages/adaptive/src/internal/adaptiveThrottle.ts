import { Admission, BoundedMap, Criticality, Errors, Options, Outcome } from "@sluice/core"
import * as Kernel from "@sluice/kernel/throttle/AdaptiveThrottle"
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

/** @internal */
export const KByCriticality = Schema.Struct({
  SHEDDABLE: KValue,
  SHEDDABLE_PLUS: KValue,
  CRITICAL: KValue,
  CRITICAL_PLUS: KValue
}).pipe(
  Schema.filter((k) => {
    const wrong = Kernel.misordered(k)
    if (wrong === undefined) return undefined
    const { level, lower } = wrong
    return {
      path: [level],
      message: `kByCriticality.${level} (${k[level]}) must not be below kByCriticality.${lower} (${k[lower]}): a more critical level may not be throttled earlier`
    }
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
  window: Schema.optionalWith(Options.PositiveDuration, {
    default: () => Duration.millis(Kernel.defaults.window)
  }),
  buckets: Schema.optionalWith(Options.PositiveInt, { default: () => Kernel.defaults.buckets }),
  k: Schema.optionalWith(KValue, { default: () => Kernel.defaults.k }),
  kByCriticality: Schema.optional(KByCriticality),
  maxProbability: Schema.optionalWith(MaxProbability, { default: () => Kernel.defaults.maxProbability }),
  minRequestRate: Schema.optionalWith(Options.NonNegativeNumber, {
    default: () => Kernel.defaults.minRequestRate
  }),
  maxKeys: Schema.optionalWith(Options.PositiveInt, { default: () => 1024 }),
  isRejection: Schema.optional(RejectionPredicate)
})

/** @internal */
export const criticalityWeights: Readonly<Record<Level, number>> = Kernel.criticalityWeights

/** @internal */
export const defaultKByCriticality: (k: number) => Record<Level, number> = Kernel.defaultKByCriticality

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

class KeyState extends Kernel.Backend {
  /** Clock reading of the latest request to this key. */
  lastUsed: number
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
    rule: Kernel.AdaptiveThrottle,
    now: number
  ) {
    super(rule)
    this.lastUsed = now
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
  const { buckets, maxKeys, window } = decoded
  const rule = Kernel.make({
    window: Duration.toMillis(window),
    buckets,
    k: decoded.k,
    kByCriticality: decoded.kByCriticality,
    maxProbability: decoded.maxProbability,
    minRequestRate: decoded.minRequestRate
  })
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
    state = new KeyState(key, label, rule, now)
    states.set(key, state)
    return state
  }

  const hub = makeHub<AT.Event>()

  // Recorded at the latest request time of the key, so a call reads the Clock once;
  // a rolling counter files an earlier time into its current bucket.
  const count = (state: KeyState, accepted: boolean) => {
    state.record(state.lastUsed, accepted)
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
    const lesson = Kernel.learn(outcome)
    if (lesson !== undefined) count(state, lesson === "accept")
  }

  const makeGate = (key: string): Admission.Gate<AT.Ticket, Errors.Throttled> => ({
    tryEnter: (entry) => {
      const state = stateFor(key, entry.now)
      if (state.allClear(entry.now)) {
        // Every level's probability is 0: push the gauges that do not say so yet, once.
        if (state.unreportedZeros > 0) for (const level of Criticality.levels) report(state, level, 0)
        return state
      }
      const p = state.probability(entry.criticality, entry.now)
      report(state, entry.criticality, p)
      return p <= 0 ? state : Admission.Wait
    },
    enter: (entry) =>
      Effect.flatMap(Context.get(entry.services, Random.Random).next, (draw) => {
        const state = stateFor(key, entry.now)
        const p = state.probability(entry.criticality, entry.now)
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
    return state.probability(criticality, nowMillis ?? peekClock.unsafeCurrentTimeMillis())
  }

  const unsafeStats = (key: string, nowMillis?: number) => {
    const state = states.peek(key)
    if (state === undefined) return { requests: 0, accepts: 0 }
    const now = nowMillis ?? peekClock.unsafeCurrentTimeMillis()
    return state.totals(now)
  }

  return {
    withThrottle: (self, key) => run(key, self),
    probability: (key, criticality) =>
      Effect.map(Clock.currentTimeMillis, (now) => unsafeProbability(key, criticality, now)),
    unsafeProbability,
    gate,
    unsafeStats,
    unsafeKeys: () => Array.from(states.keys()),
    k: (criticality) => rule.kByCriticality[criticality],
    maxProbability: rule.maxProbability,
    minRequestRate: rule.minRequestRate,
    window,
    events: Stream.fromPubSub(hub)
  }
}

import { Admission, BoundedMap, Criticality, type Options, Outcome, Errors } from "@sluice/core"
import * as Kernel from "@sluice/kernel/throttle/AdaptiveThrottle"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as MetricLabel from "effect/MetricLabel"
import * as Random from "effect/Random"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import { makeHub, publish } from "./events.js"
import { counter, gauge, levelTags, Millis, options, peekAt, tags } from "./service.js"
import type * as AT from "../AdaptiveThrottle.js"

type Level = Criticality.Criticality
type Gate = Admission.Gate<AT.Ticket, Errors.Throttled>

const RejectionPredicate = Schema.declare(
  (u: unknown): u is (error: unknown) => boolean => typeof u === "function",
  { identifier: "RejectionPredicate", description: "a function (error: unknown) => boolean" }
)

const AdaptiveThrottleOptions = Schema.Struct({
  window: Schema.optional(Millis),
  buckets: Schema.optional(Schema.Number),
  k: Schema.optional(Schema.Number),
  kByCriticality: Schema.optional(Schema.Record({ key: Criticality.Criticality, value: Schema.Number })),
  maxProbability: Schema.optional(Schema.Number),
  minRequestRate: Schema.optional(Schema.Number),
  maxKeys: Schema.optional(Schema.Number),
  isRejection: Schema.optional(RejectionPredicate)
})
const { decode } = options("AdaptiveThrottle", AdaptiveThrottleOptions, Kernel.issues)

/** @internal */
export const defaultIsRejection = (error: unknown): boolean => Outcome.ofError(error) === "dropped"

/** @internal */
export const metrics = {
  requests: counter(
    "sluice_adaptive_throttle_requests",
    "Requests offered to the adaptive throttle, including those it failed locally"
  ),
  accepts: counter(
    "sluice_adaptive_throttle_accepts",
    "Requests the backend accepted (answered without a rejection)"
  ),
  throttled: counter("sluice_adaptive_throttle_throttled", "Requests failed locally with Throttled"),
  probability: gauge("sluice_adaptive_throttle_probability", "Current local rejection probability")
}

class KeyState extends Kernel.Backend {
  readonly keyTags: ReadonlyArray<MetricLabel.MetricLabel>
  readonly levelTags: Record<Level, ReadonlyArray<MetricLabel.MetricLabel>>
  constructor(
    readonly key: string,
    label: string,
    rule: Kernel.AdaptiveThrottle
  ) {
    super(rule)
    this.keyTags = tags(["key", label])
    this.levelTags = levelTags(this.keyTags)
  }
  /** Pushes a level's changed probability to its gauge. */
  readonly report = (level: Level, p: number) => metrics.probability.unsafeUpdate(p, this.levelTags[level])
  /** Counts a request (and an accept) in the window, and in the metrics. */
  override count(accepted: boolean) {
    super.count(accepted)
    metrics.requests.unsafeUpdate(1, this.keyTags)
    if (accepted) metrics.accepts.unsafeUpdate(1, this.keyTags)
  }
}

/** @internal */
export const make = (
  options: AT.AdaptiveThrottleOptions = {}
): Effect.Effect<AT.Service, Options.InvalidOptions> =>
  Effect.flatMap(decode(options), (decoded) =>
    Effect.map(Effect.clock, (clock) => unsafeMakeFrom(decoded, clock))
  )

const unsafeMakeFrom = (decoded: typeof AdaptiveThrottleOptions.Type, peekClock: Clock.Clock): AT.Service => {
  const rule = Kernel.make(decoded)
  const { maxKeys } = rule
  // Per-key state, gates and guards: bounded, least recently used key evicted (CLOCK).
  const states = new Kernel.Backends(maxKeys, (key, label) => new KeyState(key, label, rule))
  const at = peekAt(peekClock)
  const hub = makeHub<AT.Event>()

  const reject = (state: KeyState, level: Level, p: number): Effect.Effect<never, Errors.Throttled> => {
    // The throttle's own refusals are requests the application tried (the SRE formula
    // counts them): that is what keeps `p` from running away.
    state.count(false)
    metrics.throttled.unsafeUpdate(1, state.levelTags[level])
    publish(hub, { _tag: "Throttled", key: state.key, criticality: level, probability: p })
    return Effect.fail(new Errors.Throttled({ key: state.key, probability: p })).pipe(
      Effect.withSpan("sluice.adaptive_throttle.throttled", {
        captureStackTrace: false,
        attributes: { key: state.key, criticality: level, probability: p }
      })
    )
  }

  const makeGate = (key: string): Gate => ({
    tryEnter: (entry) => {
      const state = states.get(key, entry.now)
      return state.judge(entry.criticality, entry.now, state.report) <= 0 ? state : Admission.Wait
    },
    enter: (entry) =>
      Effect.flatMap(Context.get(entry.services, Random.Random).next, (draw) => {
        const state = states.get(key, entry.now)
        const p = state.probability(entry.criticality, entry.now)
        return draw < p ? reject(state, entry.criticality, p) : Effect.succeed(state)
      }),
    // What the backend said decides: an accept for an answer, a request without an accept
    // for a drop, nothing at all for work refused on this side or abandoned by its caller.
    settle: (ticket, outcome) => void (ticket as KeyState).settle(outcome),
    isDrop: decoded.isRejection
  })

  const gates = BoundedMap.make<string, Gate>({ capacity: maxKeys })
  const gate = (key: string): Gate => gates.getOrCreate(key, makeGate)
  const makeGuard = (key: string) => Admission.guard([gate(key)])
  const guards = BoundedMap.make<string, ReturnType<typeof makeGuard>>({ capacity: maxKeys })

  const unsafeProbability = (
    key: string,
    criticality: Level = Criticality.defaultLevel,
    nowMillis?: number
  ) => states.peek(key)?.probability(criticality, at(nowMillis)) ?? 0

  return {
    withThrottle: (self, key) => guards.getOrCreate(key, makeGuard)(self),
    probability: (key, criticality) =>
      Effect.map(Clock.currentTimeMillis, (now) => unsafeProbability(key, criticality, now)),
    unsafeProbability,
    gate,
    unsafeStats: (key, nowMillis) => {
      // The 3.x line's stats are requests and accepts (the kernel's totals also count calls in flight).
      const totals = states.peek(key)?.totals(at(nowMillis))
      return totals === undefined
        ? { requests: 0, accepts: 0 }
        : { requests: totals.requests, accepts: totals.accepts }
    },
    unsafeKeys: () => Array.from(states.keys()),
    k: (criticality) => rule.kByCriticality[criticality],
    maxProbability: rule.maxProbability,
    minRequestRate: rule.minRequestRate,
    window: Duration.millis(rule.window),
    events: Stream.fromPubSub(hub)
  }
}

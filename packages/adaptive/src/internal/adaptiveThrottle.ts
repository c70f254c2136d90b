import { Admission, Criticality, Errors, type Options, Outcome } from "@sluice/core"
import * as BoundedMap from "@sluice/core/shared/BoundedMap"
import * as Meters from "@sluice/core/shared/Meters"
import * as Kernel from "@sluice/kernel/throttle/AdaptiveThrottle"
import * as Clock from "effect/Clock"
import type * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Metric from "effect/Metric"
import * as Random from "effect/Random"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as EventHub from "@sluice/core/shared/EventHub"
import { byLevel, Millis, options, peekAt } from "./service.js"
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
  kByCriticality: Schema.optional(Schema.Record(Criticality.Criticality, Schema.Number)),
  maxProbability: Schema.optional(Schema.Number),
  minRequestRate: Schema.optional(Schema.Number),
  maxKeys: Schema.optional(Schema.Number),
  isRejection: Schema.optional(RejectionPredicate)
})
const { decode } = options("AdaptiveThrottle", AdaptiveThrottleOptions, Kernel.issues)

/** @internal */
export const defaultIsRejection = (error: unknown): boolean => Outcome.ofError(error) === "dropped"

const families = {
  requests: Meters.counter(
    "sluice_adaptive_throttle_requests",
    "Requests offered to the adaptive throttle, including those it failed locally"
  ),
  accepts: Meters.counter(
    "sluice_adaptive_throttle_accepts",
    "Requests the backend accepted (answered without a rejection)"
  ),
  throttled: Meters.counter("sluice_adaptive_throttle_throttled", "Requests failed locally with Throttled"),
  probability: Meters.gauge("sluice_adaptive_throttle_probability", "Current local rejection probability")
}

/** @internal */
export const metrics = {
  requests: families.requests.metric,
  accepts: families.accepts.metric,
  throttled: families.throttled.metric,
  probability: families.probability.metric
}

class KeyState extends Kernel.Backend {
  readonly requestsMetric: Meters.Bound<number>
  readonly acceptsMetric: Meters.Bound<number>
  readonly throttledMetrics: Record<Level, Metric.Counter<number>>
  readonly probabilityMetrics: Record<Level, Metric.Gauge<number>>
  constructor(
    readonly key: string,
    label: string,
    rule: Kernel.AdaptiveThrottle,
    readonly context: Context.Context<never>
  ) {
    super(rule)
    const attributes = { key: label }
    // Counted on every call: bound to the throttle's context once.
    this.requestsMetric = Meters.bind(families.requests.of(attributes), context)
    this.acceptsMetric = Meters.bind(families.accepts.of(attributes), context)
    this.throttledMetrics = byLevel(families.throttled, attributes)
    this.probabilityMetrics = byLevel(families.probability, attributes)
  }
  /** Pushes a level's changed probability to its gauge. */
  readonly report = (level: Level, p: number) => this.probabilityMetrics[level].updateUnsafe(p, this.context)
  /** Counts a request (and an accept) in the window, and in the metrics. */
  override count(accepted: boolean) {
    super.count(accepted)
    this.requestsMetric.update(1)
    if (accepted) this.acceptsMetric.update(1)
  }
  /** Counts an admitted request before its call, in the window and in the metrics. */
  override admit(now: number) {
    super.admit(now)
    this.requestsMetric.update(1)
  }
}

/** A request the throttle admitted: its backend, when it was counted, and the clock to settle it by. */
class Admitted implements AT.Ticket {
  constructor(
    readonly state: KeyState,
    readonly at: number,
    readonly clock: Clock.Clock
  ) {}
  get key(): string {
    return this.state.key
  }
}

/** Files what the call taught in the bucket of its request (`Backend.settleAdmitted`). */
const settleAdmitted = (ticket: Admitted, outcome: Outcome.Outcome): void => {
  const { state, at } = ticket
  const lesson = state.settleAdmitted(at, outcome, ticket.clock.currentTimeMillisUnsafe())
  if (lesson === "accept") state.acceptsMetric.update(1)
}

/** @internal */
export const make = (
  options: AT.AdaptiveThrottleOptions = {}
): Effect.Effect<AT.Service, Options.InvalidOptions> =>
  Effect.flatMap(decode(options), (decoded) =>
    Effect.withFiber((fiber) => Effect.succeed(makeFrom(decoded, fiber.getRef(Clock.Clock), fiber.context)))
  )

const makeFrom = (
  decoded: typeof AdaptiveThrottleOptions.Type,
  peekClock: Clock.Clock,
  madeIn: Context.Context<never>
): AT.Service => {
  // The metrics are updated in the context the throttle was made in.
  const context = Meters.metricContext(madeIn)
  const rule = Kernel.make(decoded)
  const { maxKeys } = rule
  // Per-key state, gates and guards: bounded, least recently used key evicted (CLOCK).
  const states = new Kernel.Backends(maxKeys, (key, label) => new KeyState(key, label, rule, context))
  const at = peekAt(peekClock)
  const hub = EventHub.makeUnsafe<AT.Event>()

  const reject = (state: KeyState, level: Level, p: number): Effect.Effect<never, Errors.Throttled> => {
    // The throttle's own refusals are requests the application tried (the SRE formula
    // counts them): that is what keeps `p` from running away.
    state.count(false)
    state.throttledMetrics[level].updateUnsafe(1, context)
    EventHub.publish(hub, { _tag: "Throttled", key: state.key, criticality: level, probability: p })
    return Effect.withSpan(
      Effect.fail(new Errors.Throttled({ key: state.key, probability: p })),
      "sluice.adaptive_throttle.throttled",
      { captureStackTrace: false, attributes: { key: state.key, criticality: level, probability: p } }
    )
  }

  // The request is counted as it is admitted, before the call (`Backend.admit`); the ticket
  // remembers when, and the clock to settle it by.
  const admit = (state: KeyState, entry: Admission.Entry): Admitted => {
    state.admit(entry.now)
    return new Admitted(state, entry.now, entry.clock)
  }
  const makeGate = (key: string): Gate => ({
    tryEnter: (entry) => {
      const state = states.get(key, entry.now)
      if (state.judge(entry.criticality, entry.now, state.report) > 0) return Admission.Wait
      return admit(state, entry)
    },
    enter: (entry) =>
      Effect.suspend(() => {
        const draw = entry.getRef(Random.Random).nextDoubleUnsafe()
        const state = states.get(key, entry.now)
        const p = state.probability(entry.criticality, entry.now)
        if (draw < p) return reject(state, entry.criticality, p)
        return Effect.succeed(admit(state, entry))
      }),
    // What the backend said decides: an accept for an answer, a request without an accept
    // for a drop, and the request taken back for work refused on this side or abandoned by
    // its caller.
    settle: (ticket, outcome) => settleAdmitted(ticket as Admitted, outcome),
    isDrop: decoded.isRejection
  })

  const gates = BoundedMap.make<string, Gate>({ capacity: maxKeys })
  const gate = (key: string): Gate => gates.getOrCreate(key, makeGate)
  const makeGuard = (key: string) => Admission.guard([gate(key)])
  const guards = BoundedMap.make<string, ReturnType<typeof makeGuard>>({ capacity: maxKeys })

  const probabilityUnsafe = (
    key: string,
    criticality: Level = Criticality.defaultLevel,
    nowMillis?: number
  ) => states.peek(key)?.probability(criticality, at(nowMillis)) ?? 0

  return {
    withThrottle: (self, key) => guards.getOrCreate(key, makeGuard)(self),
    probability: (key, criticality) =>
      Effect.map(Clock.currentTimeMillis, (now) => probabilityUnsafe(key, criticality, now)),
    probabilityUnsafe,
    gate,
    statsUnsafe: (key, nowMillis) =>
      states.peek(key)?.totals(at(nowMillis)) ?? { requests: 0, accepts: 0, inFlight: 0 },
    keysUnsafe: () => Array.from(states.keys()),
    k: (criticality) => rule.kByCriticality[criticality],
    maxProbability: rule.maxProbability,
    minRequestRate: rule.minRequestRate,
    window: Duration.millis(rule.window),
    events: Stream.fromPubSub(hub)
  }
}

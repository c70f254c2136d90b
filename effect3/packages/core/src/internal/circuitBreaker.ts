import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import type * as DefaultServices from "effect/DefaultServices"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import { dual } from "effect/Function"
import * as Metric from "effect/Metric"
import * as MetricLabel from "effect/MetricLabel"
import * as Option from "effect/Option"
import { pipeArguments } from "effect/Pipeable"
import * as PubSub from "effect/PubSub"
import * as Runtime from "effect/Runtime"
import * as Schedule from "effect/Schedule"
import * as ScheduleDecision from "effect/ScheduleDecision"
import * as Intervals from "effect/ScheduleIntervals"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import type * as Admission from "../Admission.js"
import type * as CB from "../CircuitBreaker.js"
import { CircuitOpen } from "../Errors.js"
import * as admission from "./admission.js"
import * as Options from "./options.js"
import * as Breaker from "@sluice/kernel/breaker/CircuitBreaker"
import type { InvalidOptions } from "./options.js"

/** @internal */
export const TypeId: typeof CB.TypeId = Symbol.for("@sluice/core/CircuitBreaker") as any

const gaugeValue: Record<CB.State, number> = { closed: 0, "half-open": 1, open: 2 }

const ScheduleSchema = Schema.declare(
  (u: unknown): u is Schedule.Schedule<unknown, unknown, never> => Schedule.isSchedule(u),
  { identifier: "Schedule", description: "a Schedule" }
)

const functionSchema = <F>(identifier: string, description: string) =>
  Schema.declare((u: unknown): u is F => typeof u === "function", { identifier, description })

const fields = Options.fields(Breaker.options)
const OptionsSchema = Schema.Struct({
  name: Schema.String.pipe(Schema.minLength(1, { message: () => "expected a non-empty name" })),
  consecutiveFailures: fields.consecutiveFailures,
  failureRatio: Schema.optional(Schema.Struct(Options.fields(Breaker.failureRatioOptions))),
  openFor: Schema.optionalWith(Schema.Union(Options.PositiveDuration, ScheduleSchema), {
    default: () => Duration.millis(Breaker.options.openFor.fallback.value)
  }),
  halfOpenProbes: fields.halfOpenProbes,
  isFailure: Schema.optional(
    functionSchema<(error: unknown) => boolean>("Predicate", "a function (error: unknown) => boolean")
  ),
  onStateChange: Schema.optional(
    functionSchema<(change: CB.StateChange) => void>("Callback", "a function (change: StateChange) => void")
  )
})

type Config = typeof OptionsSchema.Type

const decodeEffect = Options.decode(
  "CircuitBreaker",
  OptionsSchema as Schema.Schema<Config, CB.CircuitBreakerOptions>
)

const stateGauge = Metric.gauge("sluice_circuit_breaker_state", {
  description: "circuit breaker state: 0 closed, 1 half-open, 2 open"
})
const transitionsCounter = Metric.counter("sluice_circuit_breaker_transitions", {
  description: "circuit breaker state transitions, tagged from and to",
  incremental: true
})
const rejectedCounter = Metric.counter("sluice_circuit_breaker_rejected", {
  description: "calls refused by an open or saturated half-open circuit breaker",
  incremental: true
})

/** The typed error an outcome was computed from (`undefined` for a defect, or without a cause). */
const typedError = (cause: Cause.Cause<unknown> | undefined): { readonly error: unknown } | undefined => {
  const failure = cause === undefined ? Option.none() : Cause.failureOption(cause)
  return Option.isSome(failure) ? { error: failure.value } : undefined
}

/**
 * A call the breaker admitted. One ticket serves every call admitted under the same
 * generation (state) from the same fiber services, so the closed path allocates nothing.
 */
class Ticket implements CB.Ticket {
  constructor(
    readonly generation: number,
    readonly probe: boolean,
    readonly services: Context.Context<DefaultServices.DefaultServices>,
    /** The clock of the admitting fiber: settling reads it only when the outcome needs a time. */
    readonly clock: Clock.Clock
  ) {}
  readonly now = (): number => this.clock.unsafeCurrentTimeMillis()
}

class CircuitBreakerImpl implements CB.Service {
  readonly [TypeId]: CB.TypeId = TypeId
  readonly name: string
  private readonly breaker: Breaker.Breaker
  private ticket: Ticket | undefined = undefined
  private readonly onStateChange: ((change: CB.StateChange) => void) | undefined
  private readonly schedule: Schedule.Schedule<unknown, unknown, never> | undefined
  private scheduleState: unknown
  private readonly gauge: Metric.Metric.Gauge<number>
  private readonly transitions: Metric.Metric.Counter<number>
  private readonly rejected: Metric.Metric.Counter<number>
  private readonly runSync: <A>(effect: Effect.Effect<A>) => A

  constructor(
    config: Config,
    runtime: Runtime.Runtime<never>,
    private readonly pubsub: PubSub.PubSub<CB.StateChange>
  ) {
    this.name = config.name
    this.onStateChange = config.onStateChange
    this.schedule = Schedule.isSchedule(config.openFor)
      ? (config.openFor as Schedule.Schedule<unknown, unknown, never>)
      : undefined
    this.scheduleState = this.schedule?.initial
    const ratio = config.failureRatio
    this.breaker = new Breaker.Breaker({
      consecutiveFailures: config.consecutiveFailures,
      failureRatio: ratio && { ...ratio, windowMillis: Duration.toMillis(ratio.window) },
      openFor:
        this.schedule === undefined
          ? Duration.toMillis(config.openFor as Duration.Duration)
          : (now, trips) => this.nextOpenMillis(now, trips),
      halfOpenProbes: config.halfOpenProbes,
      isFailure: config.isFailure,
      onTransition: (from, to, now) => this.transitioned(from, to, now)
    })
    this.runSync = Runtime.runSync(runtime)
    const nameTag = MetricLabel.make("name", this.name)
    this.gauge = Metric.taggedWithLabels(stateGauge, [nameTag])
    this.transitions = Metric.taggedWithLabels(transitionsCounter, [nameTag])
    this.rejected = Metric.taggedWithLabels(rejectedCounter, [nameTag])
    this.gauge.unsafeUpdate(0, [])
    this.gate = {
      tryEnter: (entry) =>
        this.breaker.admissible(entry.now) ? this.take(entry) : admission.refuse(this.reject(entry.now)),
      // `tryEnter` never waits; this path only serves callers that use the gate by hand. The
      // ticket is taken in one synchronous step that hands it straight to the caller's
      // continuation, so no interruption can fall between taking a probe slot and returning it.
      enter: (entry) =>
        Effect.suspend(() =>
          this.breaker.admissible(entry.now)
            ? Effect.sync(() => this.take(entry))
            : Effect.fail(this.reject(entry.now))
        ),
      // The outcome is core's (`Outcome`); the breaker decides what it counts as.
      settle: (ticket, outcome, cause) => {
        const { generation, now } = ticket as Ticket
        this.breaker.settle(generation, outcome, now, typedError, cause)
      }
    }
    this.guarded = admission.guard([this.gate as Admission.Gate<unknown, unknown>]) as any
  }

  readonly gate: Admission.Gate<CB.Ticket, CircuitOpen>
  private readonly guarded: <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E | CircuitOpen, R>

  readonly pipe = (...args: ReadonlyArray<unknown>): unknown => {
    return pipeArguments(this, args as unknown as IArguments)
  }

  // ---- transitions: metrics, events, the open-duration Schedule ----

  private transitioned(from: Breaker.State, to: Breaker.State, now: number): void {
    if (to === "closed" && this.schedule !== undefined) this.scheduleState = this.schedule.initial
    const fromName = Breaker.reported(from)
    const toName = Breaker.reported(to)
    if (fromName === toName) return
    this.gauge.unsafeUpdate(gaugeValue[toName], [])
    this.transitions.unsafeUpdate(1, [MetricLabel.make("from", fromName), MetricLabel.make("to", toName)])
    const change: CB.StateChange = { name: this.name, from: fromName, to: toName, at: now }
    // a subscriber 256 behind: the sliding strategy drops its oldest change (run only then),
    // as `unsafeOffer` alone would drop the new one
    if (!this.pubsub.unsafeOffer(change)) Effect.runSyncExit(PubSub.publish(this.pubsub, change))
    if (this.onStateChange !== undefined) {
      try {
        this.onStateChange(change)
      } catch {
        // A throwing listener must not break the breaker.
      }
    }
  }

  // The open duration of a trip from the Schedule's next delay (input: the trips since the
  // breaker last closed); a Schedule that is done, or cannot step synchronously, keeps the
  // previous one (the kernel's rule for `undefined`).
  private nextOpenMillis(now: number, trips: number): number | undefined {
    try {
      const [state, , decision] = this.runSync(this.schedule!.step(now, trips, this.scheduleState))
      if (ScheduleDecision.isDone(decision)) return undefined
      this.scheduleState = state
      return Intervals.start(decision.intervals) - now
    } catch {
      return undefined
    }
  }

  // ---- the admission protocol ----

  /** A ticket under the current state (taking a probe slot when half-open). */
  private take(entry: Admission.Entry): Ticket {
    const generation = this.breaker.take()
    const ticket = this.ticket
    if (ticket !== undefined && ticket.generation === generation && ticket.services === entry.services)
      return ticket
    return (this.ticket = new Ticket(
      generation,
      this.breaker.isProbe(generation),
      entry.services,
      Context.get(entry.services, Clock.Clock)
    ))
  }

  private reject(now: number): CircuitOpen {
    this.rejected.unsafeUpdate(1, [])
    const retryAfter = Duration.millis(this.breaker.retryAfterMillis(now))
    return new CircuitOpen({ name: this.name, halfOpenAt: this.breaker.halfOpenAt, retryAfter }, true)
  }

  readonly withBreaker = <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E | CircuitOpen, R> =>
    this.guarded(self)

  readonly unsafeState = (nowMillis: number): CB.State => Breaker.reported(this.breaker.state(nowMillis))

  readonly unsafeIsolate = (nowMillis: number): void => this.breaker.isolate(nowMillis)

  readonly unsafeReset = (nowMillis: number): void => this.breaker.reset(nowMillis)

  get state(): Effect.Effect<CB.State> {
    return Options.atNow(this.unsafeState)
  }

  private traced(span: string, f: (now: number) => void): Effect.Effect<void> {
    return Effect.withSpan(Options.atNow(f), span, {
      captureStackTrace: false,
      attributes: { name: this.name }
    })
  }

  get isolate(): Effect.Effect<void> {
    return this.traced("sluice.circuit_breaker.isolate", this.unsafeIsolate)
  }

  get reset(): Effect.Effect<void> {
    return this.traced("sluice.circuit_breaker.reset", this.unsafeReset)
  }

  get stateChanges(): Stream.Stream<CB.StateChange> {
    return Stream.fromPubSub(this.pubsub)
  }
}

/** @internal */
export const make = (options: CB.CircuitBreakerOptions): Effect.Effect<CB.Service, InvalidOptions> =>
  Effect.map(
    Effect.all([decodeEffect(options), Effect.runtime<never>(), PubSub.sliding<CB.StateChange>(256)]),
    ([config, runtime, pubsub]) => new CircuitBreakerImpl(config, runtime, pubsub)
  )

/** @internal */
export const isCircuitBreaker = (u: unknown): u is CB.Service =>
  typeof u === "object" && u !== null && TypeId in u

/** @internal (typed by the public module) */
export const withBreaker = dual(2, (self: Effect.Effect<unknown, unknown, unknown>, breaker: CB.Service) =>
  breaker.withBreaker(self)
)

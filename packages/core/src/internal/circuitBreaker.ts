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
import type * as Outcome from "./outcome.js"
import * as Ratio from "@sluice/kernel/stats/Ratio"
import type * as R from "../Ratio.js"
import type { InvalidOptions } from "./options.js"
import type * as RC from "../RollingCounter.js"
import * as RollingCounter from "./rollingCounter.js"

/** @internal */
export const TypeId: typeof CB.TypeId = Symbol.for("@sluice/core/CircuitBreaker") as any

// Internal states. ISOLATED is reported as "open" but never half-opens by itself.
const CLOSED = 0
const HALF_OPEN = 1
const OPEN = 2
const ISOLATED = 3
type InternalState = typeof CLOSED | typeof HALF_OPEN | typeof OPEN | typeof ISOLATED

const publicState: ReadonlyArray<CB.State> = ["closed", "half-open", "open", "open"]
// Gauge values: 0 closed, 1 half-open, 2 open (isolated included).
const gaugeValue: ReadonlyArray<number> = [0, 1, 2, 2]

const PositiveRatio = Options.Ratio.pipe(
  Schema.filter((n) => n > 0, { message: () => "expected a ratio in (0, 1]" })
)

const FailureRatio = Schema.Struct({
  ratio: PositiveRatio,
  window: Options.PositiveDuration,
  minimumCalls: Options.PositiveInt,
  buckets: Schema.optionalWith(Options.PositiveInt, { default: () => 10 })
})

const ScheduleSchema = Schema.declare(
  (u: unknown): u is Schedule.Schedule<unknown, unknown, never> => Schedule.isSchedule(u),
  { identifier: "Schedule", description: "a Schedule" }
)

const PredicateSchema = Schema.declare(
  (u: unknown): u is (error: unknown) => boolean => typeof u === "function",
  { identifier: "Predicate", description: "a function (error: unknown) => boolean" }
)

const OptionsSchema = Schema.Struct({
  name: Schema.String.pipe(Schema.minLength(1, { message: () => "expected a non-empty name" })),
  consecutiveFailures: Schema.optional(Options.PositiveInt),
  failureRatio: Schema.optional(FailureRatio),
  openFor: Schema.optionalWith(Schema.Union(Options.PositiveDuration, ScheduleSchema), {
    default: () => Duration.seconds(5)
  }),
  halfOpenProbes: Schema.optionalWith(Options.PositiveInt, { default: () => 1 }),
  isFailure: Schema.optional(PredicateSchema),
  onStateChange: Schema.optional(
    Schema.declare((u: unknown): u is (change: CB.StateChange) => void => typeof u === "function", {
      identifier: "Callback",
      description: "a function (change: StateChange) => void"
    })
  )
})

type Config = typeof OptionsSchema.Type

/** @internal */
export const CircuitBreakerOptions: Schema.Schema<Config, CB.CircuitBreakerOptions> = OptionsSchema as any

const decodeEffect = Options.decode("CircuitBreaker", CircuitBreakerOptions)

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

const DEFAULT_CONSECUTIVE = 5

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
}

class CircuitBreakerImpl implements CB.Service {
  readonly [TypeId]: CB.TypeId = TypeId
  readonly name: string
  private st: InternalState = CLOSED
  // Bumped on every transition; an outcome of a call admitted under another
  // generation belongs to a state that is gone and is ignored.
  private gen = 0
  private ticket: Ticket | undefined = undefined
  private consecutive = 0
  private readonly threshold: number
  private readonly ratio: R.ExactRatio | undefined
  private readonly minimumCalls: number
  private readonly calls: RC.RollingCounter | undefined
  private readonly failures: RC.RollingCounter | undefined
  private readonly probes: number
  private readonly isFailure: ((error: unknown) => boolean) | undefined
  private readonly onStateChange: ((change: CB.StateChange) => void) | undefined
  private readonly fixedOpenMillis: number
  private readonly schedule: Schedule.Schedule<unknown, unknown, never> | undefined
  private scheduleState: unknown
  private lastOpenMillis: number
  private trips = 0
  private halfOpenAt = 0
  private probesStarted = 0
  private probesSucceeded = 0
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
    this.threshold =
      config.consecutiveFailures ?? (config.failureRatio === undefined ? DEFAULT_CONSECUTIVE : Infinity)
    if (config.failureRatio !== undefined) {
      const { buckets, minimumCalls, ratio, window } = config.failureRatio
      this.ratio = Ratio.make(ratio)
      this.minimumCalls = minimumCalls
      this.calls = RollingCounter.unsafeMake({ window, buckets })
      this.failures = RollingCounter.unsafeMake({ window, buckets })
    } else {
      this.ratio = undefined
      this.minimumCalls = Infinity
      this.calls = undefined
      this.failures = undefined
    }
    this.probes = config.halfOpenProbes
    this.isFailure = config.isFailure
    this.onStateChange = config.onStateChange
    if (Schedule.isSchedule(config.openFor)) {
      this.schedule = config.openFor as Schedule.Schedule<unknown, unknown, never>
      this.scheduleState = this.schedule.initial
      this.fixedOpenMillis = -1
      this.lastOpenMillis = 5_000
    } else {
      this.schedule = undefined
      this.fixedOpenMillis = Duration.toMillis(config.openFor as Duration.Duration)
      this.lastOpenMillis = this.fixedOpenMillis
    }
    this.runSync = Runtime.runSync(runtime)
    const nameTag = MetricLabel.make("name", this.name)
    this.gauge = Metric.taggedWithLabels(stateGauge, [nameTag])
    this.transitions = Metric.taggedWithLabels(transitionsCounter, [nameTag])
    this.rejected = Metric.taggedWithLabels(rejectedCounter, [nameTag])
    this.gauge.unsafeUpdate(0, [])
    this.gate = {
      tryEnter: (entry) => {
        const admitted = this.admit(entry)
        return admitted instanceof Ticket ? admitted : admission.refuse(admitted)
      },
      // `tryEnter` never waits; this path only serves callers that use the gate by hand. The
      // ticket is taken in one synchronous step that hands it straight to the caller's
      // continuation, so no interruption can fall between taking a probe slot and returning it.
      enter: (entry) =>
        Effect.suspend(() =>
          this.admissible(entry.now)
            ? Effect.sync(() => this.take(entry))
            : Effect.fail(this.reject(entry.now))
        ),
      settle: (ticket, outcome, cause) => this.settle(ticket as Ticket, outcome, cause)
    }
    this.guarded = admission.guard([this.gate as Admission.Gate<unknown, unknown>]) as any
  }

  readonly gate: Admission.Gate<CB.Ticket, CircuitOpen>
  private readonly guarded: <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E | CircuitOpen, R>

  readonly pipe = (...args: ReadonlyArray<unknown>): unknown => {
    return pipeArguments(this, args as unknown as IArguments)
  }

  // ---- transitions (synchronous) ----

  private enter(to: InternalState, now: number): void {
    const from = this.st
    this.st = to
    this.gen++
    this.ticket = undefined
    this.consecutive = 0
    this.probesStarted = 0
    this.probesSucceeded = 0
    if (to === CLOSED) {
      this.calls?.unsafeReset()
      this.failures?.unsafeReset()
      this.trips = 0
      if (this.schedule !== undefined) this.scheduleState = this.schedule.initial
    }
    const fromName = publicState[from]!
    const toName = publicState[to]!
    if (fromName === toName) return
    this.gauge.unsafeUpdate(gaugeValue[to]!, [])
    this.transitions.unsafeUpdate(1, [MetricLabel.make("from", fromName), MetricLabel.make("to", toName)])
    const change: CB.StateChange = { name: this.name, from: fromName, to: toName, at: now }
    this.pubsub.unsafeOffer(change)
    if (this.onStateChange !== undefined) {
      try {
        this.onStateChange(change)
      } catch {
        // A throwing listener must not break the breaker.
      }
    }
  }

  private nextOpenMillis(now: number): number {
    if (this.schedule === undefined) return this.fixedOpenMillis
    try {
      const [state, , decision] = this.runSync(this.schedule.step(now, this.trips, this.scheduleState))
      if (ScheduleDecision.isDone(decision)) return this.lastOpenMillis
      this.scheduleState = state
      const start = Intervals.start(decision.intervals)
      this.lastOpenMillis = Number.isFinite(start) ? Math.max(0, start - now) : this.lastOpenMillis
    } catch {
      // A schedule that cannot step synchronously keeps the previous open duration.
    }
    return this.lastOpenMillis
  }

  private trip(now: number): void {
    const openMillis = this.nextOpenMillis(now)
    const trips = this.trips + 1
    this.enter(OPEN, now)
    this.trips = trips
    this.halfOpenAt = now + openMillis
  }

  private poll(now: number): void {
    if (this.st === OPEN && now >= this.halfOpenAt) this.enter(HALF_OPEN, now)
  }

  private closedFailure(now: number): void {
    this.consecutive++
    let tripped = this.consecutive >= this.threshold
    if (this.calls !== undefined) {
      this.calls.unsafeAdd(now)
      this.failures!.unsafeAdd(now)
      const calls = this.calls.unsafeTotal(now)
      // Exact: `failures >= ratio * calls` in floating point misses 55 of 100 at 0.55.
      if (calls >= this.minimumCalls && this.ratio!.atLeast(this.failures!.unsafeTotal(now), calls))
        tripped = true
    }
    if (tripped) this.trip(now)
  }

  /**
   * Whether a `dropped` or `failed` call counts against the dependency: `isFailure` judges
   * the typed error the outcome was computed from (a rejected one counts as an answer);
   * defects, and outcomes settled without a cause, always count.
   */
  private counts(cause: Cause.Cause<unknown> | undefined): boolean {
    if (this.isFailure === undefined || cause === undefined) return true
    const failure = Cause.failureOption(cause)
    if (Option.isNone(failure)) return true
    try {
      return this.isFailure(failure.value)
    } catch {
      return true
    }
  }

  // ---- the admission protocol ----

  private admissible(now: number): boolean {
    if (this.st === CLOSED) return true
    this.poll(now)
    return this.st === HALF_OPEN && this.probesStarted < this.probes
  }

  private admit(entry: Admission.Entry): Ticket | CircuitOpen {
    return this.st === CLOSED || this.admissible(entry.now) ? this.take(entry) : this.reject(entry.now)
  }

  /** A ticket under the current state (taking a probe slot when half-open). */
  private take(entry: Admission.Entry): Ticket {
    if (this.st === HALF_OPEN) this.probesStarted++
    const ticket = this.ticket
    if (ticket !== undefined && ticket.services === entry.services) return ticket
    return (this.ticket = new Ticket(
      this.gen,
      this.st === HALF_OPEN,
      entry.services,
      Context.get(entry.services, Clock.Clock)
    ))
  }

  // The outcome is core's (`Outcome`); the breaker only decides what it counts as:
  // `success` a success, `dropped` and `failed` a failure (as `isFailure` says), and
  // `refused` (the breaker or a gate inside it said no) or `ignored` (the caller gave up,
  // a 4xx) nothing at all. Tickets of a generation that is gone are ignored.
  private settle(ticket: Ticket, outcome: Outcome.Outcome, cause: Cause.Cause<unknown> | undefined): void {
    if (ticket.generation !== this.gen) return
    if (outcome === "refused" || outcome === "ignored") {
      // A probe that never reached the dependency gives its slot back.
      if (ticket.probe) this.probesStarted--
      return
    }
    const failed = outcome !== "success" && this.counts(cause)
    if (ticket.probe) {
      const now = ticket.clock.unsafeCurrentTimeMillis()
      if (failed) this.trip(now)
      else if (++this.probesSucceeded >= this.probes) this.enter(CLOSED, now)
    } else if (failed) {
      this.closedFailure(ticket.clock.unsafeCurrentTimeMillis())
    } else {
      this.consecutive = 0
      // A Clock read only when a failure ratio is configured.
      this.calls?.unsafeAdd(ticket.clock.unsafeCurrentTimeMillis())
    }
  }

  private reject(now: number): CircuitOpen {
    this.rejected.unsafeUpdate(1, [])
    const halfOpenAt = this.st === ISOLATED ? Infinity : this.halfOpenAt
    const retryAfter =
      halfOpenAt === Infinity ? Duration.infinity : Duration.millis(Math.max(0, halfOpenAt - now))
    return new CircuitOpen({ name: this.name, halfOpenAt, retryAfter }, true)
  }

  readonly withBreaker = <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E | CircuitOpen, R> => {
    return this.guarded(self)
  }

  readonly unsafeState = (nowMillis: number): CB.State => {
    this.poll(nowMillis)
    return publicState[this.st]!
  }

  readonly unsafeIsolate = (nowMillis: number): void => {
    this.enter(ISOLATED, nowMillis)
  }

  readonly unsafeReset = (nowMillis: number): void => {
    this.enter(CLOSED, nowMillis)
  }

  get state(): Effect.Effect<CB.State> {
    return Effect.clockWith((clock) => Effect.succeed(this.unsafeState(clock.unsafeCurrentTimeMillis())))
  }

  get isolate(): Effect.Effect<void> {
    return Effect.clockWith((clock) =>
      Effect.sync(() => this.unsafeIsolate(clock.unsafeCurrentTimeMillis()))
    ).pipe(
      Effect.withSpan("sluice.circuit_breaker.isolate", {
        captureStackTrace: false,
        attributes: { name: this.name }
      })
    )
  }

  get reset(): Effect.Effect<void> {
    return Effect.clockWith((clock) =>
      Effect.sync(() => this.unsafeReset(clock.unsafeCurrentTimeMillis()))
    ).pipe(
      Effect.withSpan("sluice.circuit_breaker.reset", {
        captureStackTrace: false,
        attributes: { name: this.name }
      })
    )
  }

  get stateChanges(): Stream.Stream<CB.StateChange> {
    return Stream.fromPubSub(this.pubsub)
  }
}

/** @internal */
export const make = (options: CB.CircuitBreakerOptions): Effect.Effect<CB.Service, InvalidOptions> =>
  Effect.flatMap(decodeEffect(options), (config) =>
    Effect.flatMap(Effect.runtime<never>(), (runtime) =>
      Effect.map(
        PubSub.sliding<CB.StateChange>(256),
        (pubsub) => new CircuitBreakerImpl(config, runtime, pubsub) as CB.Service
      )
    )
  )

/** @internal */
export const isCircuitBreaker = (u: unknown): u is CB.Service =>
  typeof u === "object" && u !== null && TypeId in u

/** @internal */
export const withBreaker = dual(
  2,
  <A, E, R>(self: Effect.Effect<A, E, R>, breaker: CB.Service): Effect.Effect<A, E | CircuitOpen, R> =>
    breaker.withBreaker(self)
)

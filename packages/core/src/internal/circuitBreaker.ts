import * as Cause from "effect/Cause"
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
import type * as CB from "../CircuitBreaker.js"
import { CircuitOpen } from "../Errors.js"
import * as Options from "./options.js"
import * as Ratio from "./ratio.js"
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

// How an outcome counts.
const COUNT_SUCCESS = 0
const COUNT_FAILURE = 1
const COUNT_NOTHING = 2

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

interface Handlers<A = any, E = any> {
  readonly onSuccess: (a: A) => Effect.Effect<A>
  readonly onFailure: (cause: Cause.Cause<E>) => Effect.Effect<never, E>
}

class CircuitBreakerImpl implements CB.CircuitBreaker {
  readonly [TypeId]: CB.TypeId = TypeId
  readonly name: string
  private st: InternalState = CLOSED
  // Bumped on every transition; an outcome of a call admitted under another
  // generation belongs to a state that is gone and is ignored.
  private gen = 0
  private handlers: Handlers
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
    this.handlers = this.makeClosedHandlers(this.gen)
  }

  pipe() {
    // eslint-disable-next-line prefer-rest-params
    return pipeArguments(this, arguments)
  }

  // ---- transitions (synchronous) ----

  private enter(to: InternalState, now: number): void {
    const from = this.st
    this.st = to
    this.gen++
    this.handlers = to === HALF_OPEN ? this.makeProbeHandlers(this.gen) : this.makeClosedHandlers(this.gen)
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

  private classify(cause: Cause.Cause<unknown>): number {
    const failure = Cause.failureOption(cause)
    if (Option.isSome(failure)) {
      if (this.isFailure === undefined) return COUNT_FAILURE
      try {
        return this.isFailure(failure.value) ? COUNT_FAILURE : COUNT_SUCCESS
      } catch {
        return COUNT_FAILURE
      }
    }
    return Cause.isDie(cause) ? COUNT_FAILURE : COUNT_NOTHING
  }

  private closedSuccess(gen: number, now: number): void {
    if (gen !== this.gen) return
    this.consecutive = 0
    this.calls?.unsafeAdd(now)
  }

  private closedFailure(gen: number, now: number): void {
    if (gen !== this.gen) return
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

  private probeSuccess(gen: number, now: number): void {
    if (gen !== this.gen) return
    this.probesSucceeded++
    if (this.probesSucceeded >= this.probes) this.enter(CLOSED, now)
  }

  // ---- calls ----

  // Outcome handlers are made once per generation (on each transition), so an
  // admitted call allocates no closures of its own; the generation they capture
  // is the one the call was admitted under.
  private makeClosedHandlers(gen: number): Handlers {
    const onFailure = (cause: Cause.Cause<unknown>) =>
      Effect.clockWith((clock) => {
        const now = clock.unsafeCurrentTimeMillis()
        const verdict = this.classify(cause)
        if (verdict === COUNT_FAILURE) this.closedFailure(gen, now)
        else if (verdict === COUNT_SUCCESS) this.closedSuccess(gen, now)
        return Effect.failCause(cause)
      })
    if (this.calls === undefined) {
      return {
        onSuccess: (a) => {
          if (gen === this.gen) this.consecutive = 0
          return Effect.succeed(a)
        },
        onFailure
      }
    }
    return {
      onSuccess: (a) =>
        Effect.clockWith((clock) => {
          this.closedSuccess(gen, clock.unsafeCurrentTimeMillis())
          return Effect.succeed(a)
        }),
      onFailure
    }
  }

  private makeProbeHandlers(gen: number): Handlers {
    return {
      onSuccess: (a) =>
        Effect.clockWith((clock) => {
          this.probeSuccess(gen, clock.unsafeCurrentTimeMillis())
          return Effect.succeed(a)
        }),
      onFailure: (cause) =>
        Effect.clockWith((clock) => {
          const now = clock.unsafeCurrentTimeMillis()
          const verdict = this.classify(cause)
          if (verdict === COUNT_SUCCESS) this.probeSuccess(gen, now)
          else if (gen === this.gen) {
            // An interrupted probe frees its slot; a failed probe re-opens.
            if (verdict === COUNT_NOTHING) this.probesStarted--
            else this.trip(now)
          }
          return Effect.failCause(cause)
        })
    }
  }

  private guard<A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> {
    return Effect.matchCauseEffect(self, this.handlers as Handlers<A, E>)
  }

  private reject(now: number): Effect.Effect<never, CircuitOpen> {
    this.rejected.unsafeUpdate(1, [])
    const halfOpenAt = this.st === ISOLATED ? Infinity : this.halfOpenAt
    const retryAfter =
      halfOpenAt === Infinity ? Duration.infinity : Duration.millis(Math.max(0, halfOpenAt - now))
    return Effect.fail(new CircuitOpen({ name: this.name, halfOpenAt, retryAfter }, true))
  }

  withBreaker<A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E | CircuitOpen, R> {
    return Effect.suspend(() => (this.st === CLOSED ? this.guard(self) : this.slow(self)))
  }

  private slow<A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E | CircuitOpen, R> {
    // Admission and the outcome handler are installed without an interruption
    // point between them, so an admitted probe always gives its slot back.
    return Effect.uninterruptibleMask((restore) =>
      Effect.clockWith((clock): Effect.Effect<A, E | CircuitOpen, R> => {
        const now = clock.unsafeCurrentTimeMillis()
        this.poll(now)
        if (this.st === CLOSED) return this.guard(restore(self))
        if (this.st === HALF_OPEN && this.probesStarted < this.probes) {
          this.probesStarted++
          return this.guard(restore(self))
        }
        return this.reject(now)
      })
    )
  }

  unsafeState(nowMillis: number): CB.State {
    this.poll(nowMillis)
    return publicState[this.st]!
  }

  unsafeIsolate(nowMillis: number): void {
    this.enter(ISOLATED, nowMillis)
  }

  unsafeReset(nowMillis: number): void {
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
export const make = (options: CB.CircuitBreakerOptions): Effect.Effect<CB.CircuitBreaker, InvalidOptions> =>
  Effect.flatMap(decodeEffect(options), (config) =>
    Effect.flatMap(Effect.runtime<never>(), (runtime) =>
      Effect.map(
        PubSub.sliding<CB.StateChange>(256),
        (pubsub) => new CircuitBreakerImpl(config, runtime, pubsub) as CB.CircuitBreaker
      )
    )
  )

/** @internal */
export const isCircuitBreaker = (u: unknown): u is CB.CircuitBreaker =>
  typeof u === "object" && u !== null && TypeId in u

/** @internal */
export const withBreaker = dual(
  2,
  <A, E, R>(self: Effect.Effect<A, E, R>, breaker: CB.CircuitBreaker): Effect.Effect<A, E | CircuitOpen, R> =>
    breaker.withBreaker(self)
)

import * as Cause from "effect/Cause"
import type * as Clock from "effect/Clock"
import type * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import { dual } from "effect/Function"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import { pipeArguments } from "effect/Pipeable"
import type * as PubSub from "effect/PubSub"
import * as EventHub from "../shared/EventHub.js"
import * as Pull from "effect/Pull"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as Admission from "../Admission.js"
import type * as CB from "../CircuitBreaker.js"
import { CircuitOpen } from "../Errors.js"
import * as admission from "./admission.js"
import * as Meters from "../shared/Meters.js"
import * as Options from "./options.js"
import * as Breaker from "@sluice/kernel/breaker/CircuitBreaker"
import type { InvalidOptions } from "./options.js"

/** @internal */
export const TypeId: typeof CB.TypeId = Symbol.for("@sluice/core/CircuitBreaker") as any

const gaugeValue: Record<CB.State, number> = { closed: 0, "half-open": 1, open: 2 }

type OpenFor = Schedule.Schedule<unknown, unknown>

const ScheduleSchema = Schema.declare((u: unknown): u is OpenFor => Schedule.isSchedule(u), {
  expected: "a Schedule"
})

const functionSchema = <F>(expected: string) =>
  Schema.declare((u: unknown): u is F => typeof u === "function", { expected })

const fields = Options.fields(Breaker.options)
const OptionsSchema = Schema.Struct({
  name: Schema.String.check(Schema.isMinLength(1, { message: "expected a non-empty name" })),
  consecutiveFailures: fields.consecutiveFailures,
  failureRatio: Schema.optional(Schema.Struct(Options.fields(Breaker.failureRatioOptions))),
  openFor: Schema.Union([Options.PositiveDuration, ScheduleSchema]).pipe(
    Schema.withDecodingDefaultType(
      Effect.succeed<Duration.Duration | OpenFor>(Duration.millis(Breaker.options.openFor.fallback.value))
    )
  ),
  halfOpenProbes: fields.halfOpenProbes,
  isFailure: Schema.optional(
    functionSchema<(error: unknown) => boolean>("a function (error: unknown) => boolean")
  ),
  onStateChange: Schema.optional(
    functionSchema<(change: CB.StateChange) => void>("a function (change: StateChange) => void")
  )
})

type Config = typeof OptionsSchema.Type

const decodeEffect = Options.decode<Config, CB.CircuitBreakerOptions>("CircuitBreaker", OptionsSchema)

const stateGauge = Meters.gauge(
  "sluice_circuit_breaker_state",
  "circuit breaker state: 0 closed, 1 half-open, 2 open"
)
const transitionsCounter = Meters.counter(
  "sluice_circuit_breaker_transitions",
  "circuit breaker state transitions, tagged from and to"
)
const rejectedCounter = Meters.counter(
  "sluice_circuit_breaker_rejected",
  "calls refused by an open or saturated half-open circuit breaker"
)

/** The typed error an outcome was computed from (`undefined` for a defect, or without a cause). */
const typedError = (cause: Cause.Cause<unknown> | undefined): { readonly error: unknown } | undefined => {
  const failure = cause === undefined ? Option.none() : Cause.findErrorOption(cause)
  return Option.isSome(failure) ? { error: failure.value } : undefined
}

/**
 * A call the breaker admitted. One ticket serves every call admitted under the same
 * generation (state) on the same clock, so the closed path allocates nothing.
 */
class Ticket implements CB.Ticket {
  constructor(
    readonly generation: number,
    readonly probe: boolean,
    /** The clock of the admitting fiber: settling reads it only when the outcome needs a time. */
    readonly clock: Clock.Clock
  ) {}
  readonly now = (): number => this.clock.currentTimeMillisUnsafe()
}

type Step = (now: number, input: unknown) => Pull.Pull<[unknown, Duration.Duration], unknown, unknown>

class CircuitBreakerImpl implements CB.Service {
  readonly [TypeId]: CB.TypeId = TypeId
  readonly name: string
  private readonly breaker: Breaker.Breaker
  private ticket: Ticket | undefined = undefined
  private readonly onStateChange: ((change: CB.StateChange) => void) | undefined
  private readonly schedule: OpenFor | undefined
  /**
   * The open-duration Schedule's step since the breaker last closed (made at the first trip),
   * or `"done"` once the Schedule has ended.
   */
  private step: Step | "done" | undefined = undefined
  private readonly gauge: Metric.Gauge<number>
  private readonly transitions: Map<string, Metric.Counter<number>> = new Map()
  private readonly rejected: Metric.Counter<number>

  constructor(
    config: Config,
    /** The context the breaker was made in: its metric registry, and the Schedule's services. */
    private readonly context: Context.Context<never>,
    private readonly pubsub: PubSub.PubSub<CB.StateChange>
  ) {
    this.name = config.name
    this.onStateChange = config.onStateChange
    this.schedule = Schedule.isSchedule(config.openFor) ? config.openFor : undefined
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
    this.gauge = stateGauge.of({ name: this.name })
    this.rejected = rejectedCounter.of({ name: this.name })
    this.gauge.updateUnsafe(0, context)
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
    this.withBreaker = Admission.guard([this.gate])
  }

  readonly gate: Admission.Gate<CB.Ticket, CircuitOpen>
  readonly withBreaker: <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E | CircuitOpen, R>

  readonly pipe = (...args: ReadonlyArray<unknown>): unknown => {
    return pipeArguments(this, args as unknown as IArguments)
  }

  // ---- transitions: metrics, events, the open-duration Schedule ----

  /** The transitions counter of one `from`/`to` pair, made at its first use (at most six). */
  private transitionsOf(from: CB.State, to: CB.State): Metric.Counter<number> {
    const key = `${from}>${to}`
    let counter = this.transitions.get(key)
    if (counter === undefined) {
      counter = transitionsCounter.of({ name: this.name, from, to })
      this.transitions.set(key, counter)
    }
    return counter
  }

  private transitioned(from: Breaker.State, to: Breaker.State, now: number): void {
    // Closing starts the open-duration Schedule over: the next trip makes a fresh step.
    if (to === "closed") this.step = undefined
    const fromName = Breaker.reported(from)
    const toName = Breaker.reported(to)
    if (fromName === toName) return
    this.gauge.updateUnsafe(gaugeValue[toName], this.context)
    this.transitionsOf(fromName, toName).updateUnsafe(1, this.context)
    const change: CB.StateChange = { name: this.name, from: fromName, to: toName, at: now }
    EventHub.publish(this.pubsub, change)
    if (this.onStateChange !== undefined) {
      try {
        this.onStateChange(change)
      } catch {
        // A throwing listener must not break the breaker.
      }
    }
  }

  // The open duration of a trip from the Schedule's next delay (input: the trips since the
  // breaker last closed). The breaker decides outside any fiber, so the step runs synchronously
  // in the context the breaker was made in; a Schedule that is done, fails, or cannot step
  // synchronously keeps the previous duration (the kernel's rule for `undefined`).
  private nextOpenMillis(now: number, trips: number): number | undefined {
    if (this.step === "done") return undefined
    if (this.step === undefined) {
      const made = Effect.runSyncExitWith(this.context)(Schedule.toStep(this.schedule!))
      if (Exit.isFailure(made)) return undefined
      this.step = made.value
    }
    const exit = Effect.runSyncExitWith(this.context)(this.step(now, trips))
    if (Exit.isFailure(exit)) {
      // Done: later trips reuse the last duration until the breaker closes and starts over.
      if (Pull.isDoneCause(exit.cause)) this.step = "done"
      return undefined
    }
    return Duration.toMillis(exit.value[1])
  }

  // ---- the admission protocol ----

  /** A ticket under the current state (taking a probe slot when half-open). */
  private take(entry: Admission.Entry): Ticket {
    const generation = this.breaker.take()
    const ticket = this.ticket
    const clock = entry.clock
    if (ticket !== undefined && ticket.generation === generation && ticket.clock === clock) return ticket
    return (this.ticket = new Ticket(generation, this.breaker.isProbe(generation), clock))
  }

  private reject(now: number): CircuitOpen {
    this.rejected.updateUnsafe(1, this.context)
    const retryAfter = Duration.millis(this.breaker.retryAfterMillis(now))
    return new CircuitOpen(
      { name: this.name, halfOpenAt: this.breaker.halfOpenAt, retryAfter },
      { disableChecks: true }
    )
  }

  readonly stateUnsafe = (nowMillis: number): CB.State => Breaker.reported(this.breaker.state(nowMillis))

  readonly isolateUnsafe = (nowMillis: number): void => this.breaker.isolate(nowMillis)

  readonly resetUnsafe = (nowMillis: number): void => this.breaker.reset(nowMillis)

  get state(): Effect.Effect<CB.State> {
    return Options.atNow(this.stateUnsafe)
  }

  private traced(span: string, f: (now: number) => void): Effect.Effect<void> {
    return Effect.withSpan(Options.atNow(f), span, {
      captureStackTrace: false,
      attributes: { name: this.name }
    })
  }

  get isolate(): Effect.Effect<void> {
    return this.traced("sluice.circuit_breaker.isolate", this.isolateUnsafe)
  }

  get reset(): Effect.Effect<void> {
    return this.traced("sluice.circuit_breaker.reset", this.resetUnsafe)
  }

  get stateChanges(): Stream.Stream<CB.StateChange> {
    return Stream.fromPubSub(this.pubsub)
  }
}

/** @internal */
export const make = (options: CB.CircuitBreakerOptions): Effect.Effect<CB.Service, InvalidOptions> =>
  Effect.map(
    Effect.all([decodeEffect(options), Effect.context<never>(), EventHub.make<CB.StateChange>()]),
    ([config, context, pubsub]) => new CircuitBreakerImpl(config, context, pubsub)
  )

/** @internal */
export const isCircuitBreaker = (u: unknown): u is CB.Service =>
  typeof u === "object" && u !== null && TypeId in u

/** @internal (typed by the public module) */
export const withBreaker = dual(2, (self: Effect.Effect<unknown, unknown, unknown>, breaker: CB.Service) =>
  breaker.withBreaker(self)
)

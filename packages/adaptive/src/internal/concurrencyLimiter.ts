import { Admission, BoundedMap, Criticality, Errors, Options, Outcome, Ratio } from "@sluice/core"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import type * as DefaultServices from "effect/DefaultServices"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Exit from "effect/Exit"
import { dual } from "effect/Function"
import * as Layer from "effect/Layer"
import * as Metric from "effect/Metric"
import * as MetricLabel from "effect/MetricLabel"
import { pipeArguments } from "effect/Pipeable"
import * as Schema from "effect/Schema"
import type * as CL from "../ConcurrencyLimiter.js"
import type * as LA from "../LimitAlgorithm.js"
import * as congestionWindow from "./congestionWindow.js"
import { bindMethods } from "./bind.js"
import type * as PubSub from "effect/PubSub"
import * as Stream from "effect/Stream"
import { makeHub } from "./events.js"
import * as Kernel from "@sluice/kernel/limiter/Limiter"

/** @internal */
export const TypeId: typeof CL.TypeId = Symbol.for("@sluice/adaptive/ConcurrencyLimiter") as any

const isFunction = (u: unknown): u is (...args: Array<any>) => any => typeof u === "function"

const FactorySchema = Schema.declare((u: unknown): u is LA.Factory => isFunction(u), {
  identifier: "LimitAlgorithm.Factory",
  message: () => "expected a function (key) => LimitAlgorithm, e.g. CongestionWindow.factory()"
})

const PredicateSchema = Schema.declare((u: unknown): u is (error: unknown) => boolean => isFunction(u), {
  identifier: "Predicate",
  message: () => "expected a function (error) => boolean"
})

const Partitions = Schema.Struct({
  CRITICAL_PLUS: Schema.optional(Options.Ratio),
  CRITICAL: Schema.optional(Options.Ratio),
  SHEDDABLE_PLUS: Schema.optional(Options.Ratio),
  SHEDDABLE: Schema.optional(Options.Ratio)
}).pipe(
  Schema.filter((p) => {
    const shares = [p.CRITICAL_PLUS ?? 0, p.CRITICAL ?? 0, p.SHEDDABLE_PLUS ?? 0, p.SHEDDABLE ?? 0]
    // Exact: 0.33 + 0.56 + 0.11 is 1 as written (1.0000000000000002 in floating point).
    return (
      Ratio.sumAtMost(shares, 1) || `guaranteed shares must add up to at most 1, got ${shares.join(" + ")}`
    )
  })
)

const limiterFields = {
  algorithm: Schema.optional(FactorySchema),
  maxQueue: Schema.optionalWith(Options.NonNegativeInt, { default: () => 1000 }),
  maxWait: Schema.optional(Options.PositiveDuration),
  order: Schema.optionalWith(Schema.Literal("fifo", "lifo"), { default: () => "fifo" as const }),
  partitions: Schema.optional(Partitions),
  isDrop: Schema.optional(PredicateSchema)
}

/** @internal */
export const LimiterOptions = Schema.Struct({
  key: Schema.optionalWith(Schema.String, { default: () => "default" }),
  ...limiterFields
})

/** @internal */
export const ServiceOptions = Schema.Struct({
  maxKeys: Schema.optionalWith(Options.PositiveInt, { default: () => 1024 }),
  ...limiterFields
})

type Config = Omit<typeof LimiterOptions.Type, "key">

// ---------------------------------------------------------------------------
// metrics

const limitGauge = Metric.gauge("sluice_concurrency_limiter_limit", {
  description: "current concurrency limit of a limiter key"
})
const inFlightGauge = Metric.gauge("sluice_concurrency_limiter_in_flight", {
  description: "requests holding a permit"
})
const queuedGauge = Metric.gauge("sluice_concurrency_limiter_queued", {
  description: "requests waiting for a permit"
})
const rejectedCounter = Metric.counter("sluice_concurrency_limiter_rejected", {
  description: "requests refused without running, by reason",
  incremental: true
})

/** @internal */
export type RejectReason = "limit" | "queue-full" | "queue-timeout" | "displaced"

// ---------------------------------------------------------------------------
// outcome classification: core's one classifier; algorithms hear success, dropped, ignored

const toSample = (outcome: Outcome.Outcome): LA.Outcome =>
  outcome === "success" || outcome === "dropped" ? outcome : "ignored"

/** @internal */
export const classify = (
  exit: Exit.Exit<unknown, unknown>,
  isDrop?: (error: unknown) => boolean
): LA.Outcome => toSample(Outcome.ofExit(exit, isDrop === undefined ? undefined : { isDrop }))

// ---------------------------------------------------------------------------
// the limiter

const levelIndex = Kernel.levelIndex

type Source = Clock.Clock | Context.Context<DefaultServices.DefaultServices>
/** What a permit is made with: the fiber's services, or (for a drained waiter) the permit just returned, whose clock it takes. */
type Origin = Source | Permit

class Permit extends Kernel.Permit implements CL.Permit {
  constructor(
    readonly limiter: LimiterImpl,
    id: number,
    start: number,
    level: number,
    /** The clock, or the fiber's services to read it from when first needed. */
    private source: Source,
    queued: boolean
  ) {
    super(id, start, level, queued)
  }
  /** Looked up only when a round-trip time or a drain needs it (not on the uncontended path of a time-blind algorithm). */
  get clock(): Clock.Clock {
    const source = this.source
    if (Context.isContext(source)) {
      const clock = Context.get(source, Clock.Clock)
      this.source = clock
      return clock
    }
    return source
  }
}

class Waiter extends Kernel.Waiter<Permit> {
  rejection: Errors.Overloaded | undefined = undefined
  resume: ((effect: Effect.Effect<Permit, Errors.Overloaded>) => void) | undefined = undefined
}

class LimiterImpl extends Kernel.Limiter<Permit, Waiter, Origin> implements CL.Limiter {
  protected readonly bound = bindMethods(this, ["inFlightOf", "queuedOf", "pipe"])
  readonly [TypeId]: CL.TypeId = TypeId
  private readonly maxWait: Duration.Duration | undefined
  private readonly tags: ReadonlyArray<MetricLabel.MetricLabel>
  private readonly rejectTags: Record<RejectReason, ReadonlyArray<MetricLabel.MetricLabel>>
  private reportedLimit: number
  readonly gate: Admission.Gate<CL.Permit, Errors.Overloaded>
  readonly events: Stream.Stream<CL.Event>
  readonly withLimiter: <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E | Errors.Overloaded, R>
  private readonly guarded: <A, E, R>(
    self: Effect.Effect<A, E, R>
  ) => Effect.Effect<A, E | Errors.Overloaded, R>

  constructor(
    readonly key: string,
    algorithm: LA.LimitAlgorithm,
    config: Config,
    private readonly hub: PubSub.PubSub<CL.Event> = makeHub<CL.Event>()
  ) {
    super(algorithm, config)
    this.events = Stream.fromPubSub(hub)
    this.maxWait = config.maxWait
    const keyLabel = MetricLabel.make("key", key)
    this.tags = [keyLabel]
    const reasonTags = (reason: RejectReason) => [keyLabel, MetricLabel.make("reason", reason)]
    this.rejectTags = {
      limit: reasonTags("limit"),
      "queue-full": reasonTags("queue-full"),
      "queue-timeout": reasonTags("queue-timeout"),
      displaced: reasonTags("displaced")
    }
    this.reportedLimit = algorithm.limit
    limitGauge.unsafeUpdate(this.reportedLimit, this.tags)
    inFlightGauge.unsafeUpdate(0, this.tags)
    queuedGauge.unsafeUpdate(0, this.tags)
    this.gate = {
      tryEnter: (entry) => {
        const answer = this.tryAcquire(levelIndex[entry.criticality], entry.now, entry.services)
        if (answer === "wait") return Admission.Wait
        if (answer === "limit") return Admission.refuse(this.rejection("limit"))
        return answer
      },
      enter: (entry) => this.waitFor(levelIndex[entry.criticality]),
      settle: (permit, outcome) => this.sample(permit as Permit, toSample(outcome)),
      isDrop: config.isDrop
    }
    this.guarded = Admission.guard([this.gate])
    // A closure, not a method: safe unbound, and no wrapper on the per-call path.
    this.withLimiter = this.guarded
  }

  get limit(): number {
    return this.algorithm.limit
  }

  inFlightOf(level: Criticality.Criticality): number {
    return this.inFlightAt(levelIndex[level])
  }

  queuedOf(level: Criticality.Criticality): number {
    return this.queuedAt(levelIndex[level])
  }

  pipe() {
    // eslint-disable-next-line prefer-rest-params
    return pipeArguments(this, arguments)
  }

  protected override newPermit(
    id: number,
    start: number,
    level: number,
    queued: boolean,
    origin: Origin
  ): Permit {
    return new Permit(this, id, start, level, origin instanceof Permit ? origin.clock : origin, queued)
  }

  protected override onGranted(waiter: Waiter): void {
    // The uncontended path pushes no gauge: the in-flight gauge follows queueing,
    // failures and limit changes (read `inFlight` for the exact count).
    this.reportInFlight()
    if (waiter.resume !== undefined) waiter.resume(Effect.succeed(waiter.permit!))
  }

  protected override onDisplaced(victim: Waiter): void {
    victim.rejection = this.rejection("displaced")
    if (victim.resume !== undefined) victim.resume(Effect.fail(victim.rejection))
  }

  private sample(permit: Permit, outcome: LA.Outcome): void {
    const now = this.needsClock ? permit.clock.unsafeCurrentTimeMillis() : permit.start
    const granted = this.release(permit, outcome, now, permit)
    this.afterChange(granted, permit.queued || outcome !== "success")
  }

  private reportedInFlight = 0
  private reportInFlight(): void {
    this.reportedInFlight = this.inFlight
    inFlightGauge.unsafeUpdate(this.inFlight, this.tags)
  }

  private afterChange(granted: number, report: boolean): void {
    const limit = this.algorithm.limit
    if (limit !== this.reportedLimit) {
      this.reportedLimit = limit
      limitGauge.unsafeUpdate(limit, this.tags)
      report = true
    }
    if (granted > 0) queuedGauge.unsafeUpdate(this.queued, this.tags)
    // At rest the gauge reads 0 again, pushed once, not on every uncontended call.
    if (report || (this.inFlight === 0 && this.reportedInFlight !== 0)) this.reportInFlight()
  }

  private rejection(reason: RejectReason): Errors.Overloaded {
    rejectedCounter.unsafeUpdate(1, this.rejectTags[reason])
    this.hub.unsafeOffer({ _tag: "Rejected", key: this.key, reason })
    return new Errors.Overloaded({ reason: `concurrency limit: ${reason}`, origin: "local" })
  }

  /** Leaves the queue, or gives back a permit that arrived too late to be used. Idempotent. */
  private abandon(waiter: Waiter): void {
    if (waiter.state === Kernel.QUEUED) {
      this.leave(waiter)
      queuedGauge.unsafeUpdate(this.queued, this.tags)
    } else if (waiter.state === Kernel.GRANTED) {
      waiter.state = Kernel.DONE
      const permit = waiter.permit!
      const granted = this.releaseUnused(permit, permit.clock.unsafeCurrentTimeMillis(), permit)
      this.afterChange(granted, true)
    }
  }

  /** The waiting path: a permit once one is free, or a local refusal. */
  private waitFor(level: number): Effect.Effect<Permit, Errors.Overloaded> {
    // A full queue displaces the least critical waiter for more critical work.
    if (!this.makeRoom(level)) return Effect.fail(this.rejection("queue-full"))
    const waiter = new Waiter(level)
    this.enqueue(waiter)
    queuedGauge.unsafeUpdate(this.queued, this.tags)
    this.reportInFlight()
    const wait = Effect.async<Permit, Errors.Overloaded>((resume) => {
      // The fiber may have yielded between enqueueing and registering.
      if (waiter.state === Kernel.GRANTED) return resume(Effect.succeed(waiter.permit!))
      if (waiter.state === Kernel.REJECTED) return resume(Effect.fail(waiter.rejection!))
      waiter.resume = resume
      return Effect.sync(() => this.abandon(waiter))
    })
    const timed =
      this.maxWait === undefined
        ? wait
        : Effect.timeoutFail(wait, {
            duration: this.maxWait,
            onTimeout: () => this.rejection("queue-timeout")
          })
    return timed.pipe(
      Effect.withSpan("sluice.concurrency_limiter.wait", {
        captureStackTrace: false,
        attributes: { key: this.key, criticality: Criticality.levels[level] }
      }),
      Effect.onExit((exit) => {
        // Granted: the guard owns the permit from here on. Otherwise leave the queue, or
        // give back a permit that was granted as the wait was being interrupted.
        if (exit._tag === "Success") waiter.state = Kernel.DONE
        else this.abandon(waiter)
        return Effect.void
      })
    )
  }
}

const decodeLimiter = Options.decode("ConcurrencyLimiter", LimiterOptions)
const decodeLimiterSync = Options.decodeSync("ConcurrencyLimiter", LimiterOptions)
const decodeService = Options.decode("ConcurrencyLimiter", ServiceOptions)

const defaultFactory: LA.Factory = () => congestionWindow.unsafeMake()

const makeLimiter = (config: typeof LimiterOptions.Type, hub?: PubSub.PubSub<CL.Event>): LimiterImpl =>
  new LimiterImpl(config.key, (config.algorithm ?? defaultFactory)(config.key), config, hub)

/** @internal */
export const unsafeMake = (options: CL.LimiterOptions = {}): CL.Limiter =>
  makeLimiter(decodeLimiterSync(options))

/**
 * Runs a construction step that may throw `InvalidOptions` (a user factory such as
 * `() => CongestionWindow.unsafeMake(...)`): that error goes to the failure channel,
 * anything else is a defect.
 */
const tryConstruct = <A>(f: () => A): Effect.Effect<A, Options.InvalidOptions> =>
  Effect.suspend(() => {
    try {
      return Effect.succeed(f())
    } catch (error) {
      return error instanceof Options.InvalidOptions ? Effect.fail(error) : Effect.die(error)
    }
  })

/** @internal */
export const make = (options: CL.LimiterOptions = {}): Effect.Effect<CL.Limiter, Options.InvalidOptions> =>
  Effect.flatMap(decodeLimiter(options), (config) => tryConstruct(() => makeLimiter(config)))

class ServiceImpl implements CL.Service {
  protected readonly bound = bindMethods(this, ["keys", "gate", "unsafeGet", "get", "withLimiter"])
  // Per key: the limiter (least recently used evicted, idle ones first: work still running
  // keeps its own limiter), its gate and its guard.
  private readonly limiters: BoundedMap.BoundedMap<string, LimiterImpl>
  private readonly gates: BoundedMap.BoundedMap<string, Admission.Gate<CL.Permit, Errors.Overloaded>>
  private readonly guards: BoundedMap.BoundedMap<
    string,
    <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E | Errors.Overloaded, R>
  >
  private readonly hub = makeHub<CL.Event>()
  readonly events: Stream.Stream<CL.Event> = Stream.fromPubSub(this.hub)
  constructor(private readonly config: typeof ServiceOptions.Type) {
    const capacity = config.maxKeys
    this.limiters = BoundedMap.make({
      capacity,
      canEvict: (_, limiter) => limiter.inFlight === 0 && limiter.queued === 0
    })
    this.gates = BoundedMap.make({ capacity })
    this.guards = BoundedMap.make({ capacity })
  }
  get size(): number {
    return this.limiters.size
  }
  keys(): ReadonlyArray<string> {
    return Array.from(this.limiters.keys())
  }
  gate(key: string): Admission.Gate<CL.Permit, Errors.Overloaded> {
    let found = this.gates.get(key)
    if (found === undefined) {
      found = {
        // Straight to the map (not through the bound `unsafeGet`): this is the per-call path.
        tryEnter: (entry) => this.limiters.getOrCreate(key, this.newLimiter).gate.tryEnter(entry),
        enter: (entry) => this.limiters.getOrCreate(key, this.newLimiter).gate.enter(entry),
        settle: (permit, outcome) => {
          const owner = (permit as Permit).limiter
          owner.gate.settle(permit as Permit, outcome)
        },
        isDrop: this.config.isDrop
      }
      this.gates.set(key, found)
    }
    return found
  }
  private readonly newLimiter = (key: string): LimiterImpl => makeLimiter({ ...this.config, key }, this.hub)
  unsafeGet(key: string): CL.Limiter {
    return this.limiters.getOrCreate(key, this.newLimiter)
  }
  get(key: string): Effect.Effect<CL.Limiter> {
    return Effect.sync(() => this.unsafeGet(key))
  }
  withLimiter<A, E, R>(
    self: Effect.Effect<A, E, R>,
    key = "default"
  ): Effect.Effect<A, E | Errors.Overloaded, R> {
    let guarded = this.guards.get(key)
    if (guarded === undefined) {
      // The key's gate finds its limiter per call, so eviction of the limiter is safe.
      guarded = Admission.guard([this.gate(key)])
      this.guards.set(key, guarded)
    }
    return guarded(self) as Effect.Effect<A, E | Errors.Overloaded, R>
  }
}

/** @internal */
export const ConcurrencyLimiter = Context.GenericTag<CL.ConcurrencyLimiter, CL.Service>(
  "@sluice/adaptive/ConcurrencyLimiter"
)

/** @internal */
export const makeService = (
  options: CL.ServiceOptions = {}
): Effect.Effect<CL.Service, Options.InvalidOptions> =>
  Effect.flatMap(decodeService(options), (config) =>
    tryConstruct(() => {
      // Limiters are made on demand: try the factory once now, so bad algorithm
      // options fail at construction rather than on the first call.
      if (config.algorithm !== undefined) config.algorithm("")
      return new ServiceImpl(config) as CL.Service
    })
  )

/** @internal */
export const layer = (
  options: CL.ServiceOptions = {}
): Layer.Layer<CL.ConcurrencyLimiter, Options.InvalidOptions> =>
  Layer.effect(ConcurrencyLimiter, makeService(options))

/** @internal */
export const withLimiter = dual(
  (args) => Effect.isEffect(args[0]),
  <A, E, R>(
    self: Effect.Effect<A, E, R>,
    keyOrLimiter: string | CL.Limiter = "default"
  ): Effect.Effect<A, E | Errors.Overloaded, R | CL.ConcurrencyLimiter> =>
    typeof keyOrLimiter === "string"
      ? Effect.flatMap(ConcurrencyLimiter, (service) => service.unsafeGet(keyOrLimiter).withLimiter(self))
      : keyOrLimiter.withLimiter(self)
)

import { Admission, BoundedMap, Criticality, Errors, type Options, Outcome } from "@sluice/core"
import * as Limit from "@sluice/kernel/limit/Limit"
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
import type * as CL from "../ConcurrencyLimiter.js"
import type * as LA from "../limit/LimitAlgorithm.js"
import * as congestionWindow from "./limit/congestionWindow.js"
import { bindMethods } from "./bind.js"
import type * as PubSub from "effect/PubSub"
import * as Stream from "effect/Stream"
import { makeHub, publish } from "./events.js"
import { tryConstruct, validator } from "./options.js"
import * as Kernel from "@sluice/kernel/limiter/Limiter"

/** @internal */
export const TypeId: typeof CL.TypeId = Symbol.for("@sluice/adaptive/ConcurrencyLimiter") as any

type Config = Kernel.Config & { readonly key: string; readonly maxWait?: Duration.Duration | undefined }
type ServiceConfig = Omit<Config, "key"> & { readonly maxKeys: number }

const module = "ConcurrencyLimiter"
const checkLimiter = validator<CL.LimiterOptions, Config>(module, Kernel.configure, ["maxWait"])
const checkService = validator<CL.ServiceOptions, ServiceConfig>(module, Kernel.configureService, ["maxWait"])

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

const reasons: ReadonlyArray<CL.RejectReason> = ["limit", "queue-full", "queue-timeout", "displaced"]

// ---------------------------------------------------------------------------
// outcome classification: core's one classifier; algorithms hear success, dropped, ignored

/** @internal */
export const classify = (
  exit: Exit.Exit<unknown, unknown>,
  isDrop?: (error: unknown) => boolean
): LA.Outcome => Limit.sampleOutcome(Outcome.ofExit(exit, isDrop === undefined ? undefined : { isDrop }))

// ---------------------------------------------------------------------------
// the limiter

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
  private readonly rejectTags: Record<string, ReadonlyArray<MetricLabel.MetricLabel>>
  private reportedLimit: number
  readonly gate: Admission.Gate<CL.Permit, Errors.Overloaded>
  readonly events: Stream.Stream<CL.Event>
  readonly withLimiter: <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E | Errors.Overloaded, R>

  constructor(
    readonly key: string,
    algorithm: LA.LimitAlgorithm,
    config: Omit<Config, "key">,
    private readonly hub: PubSub.PubSub<CL.Event> = makeHub<CL.Event>()
  ) {
    super(algorithm, config)
    this.events = Stream.fromPubSub(hub)
    this.maxWait = config.maxWait
    const keyLabel = MetricLabel.make("key", key)
    this.tags = [keyLabel]
    this.rejectTags = Object.fromEntries(
      reasons.map((reason) => [reason, [keyLabel, MetricLabel.make("reason", reason)]])
    )
    this.reportedLimit = algorithm.limit
    limitGauge.unsafeUpdate(this.reportedLimit, this.tags)
    inFlightGauge.unsafeUpdate(0, this.tags)
    queuedGauge.unsafeUpdate(0, this.tags)
    this.gate = {
      tryEnter: (entry) => {
        const answer = this.tryAcquire(Kernel.levelIndex[entry.criticality], entry.now, entry.services)
        if (answer === "wait") return Admission.Wait
        if (answer === "limit") return Admission.refuse(this.rejection("limit"))
        return answer
      },
      enter: (entry) => this.waitFor(Kernel.levelIndex[entry.criticality]),
      settle: (permit, outcome) => this.sample(permit as Permit, Limit.sampleOutcome(outcome)),
      isDrop: config.isDrop
    }
    // A closure, not a method: safe unbound, and no wrapper on the per-call path.
    this.withLimiter = Admission.guard([this.gate])
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

  private rejection(reason: CL.RejectReason): Errors.Overloaded {
    rejectedCounter.unsafeUpdate(1, this.rejectTags[reason]!)
    publish(this.hub, { _tag: "Rejected", key: this.key, reason })
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

const defaultFactory: LA.Factory = () => congestionWindow.unsafeMake()

const makeLimiter = (config: Config, hub?: PubSub.PubSub<CL.Event>): LimiterImpl =>
  new LimiterImpl(config.key, (config.algorithm ?? defaultFactory)(config.key), config, hub)

/** @internal */
export const unsafeMake = (options: CL.LimiterOptions = {}): CL.Limiter => makeLimiter(checkLimiter(options))

/** @internal */
export const make = (options: CL.LimiterOptions = {}): Effect.Effect<CL.Limiter, Options.InvalidOptions> =>
  tryConstruct(() => makeLimiter(checkLimiter(options)))

type Guard = <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E | Errors.Overloaded, R>

class ServiceImpl implements CL.Service {
  protected readonly bound = bindMethods(this, ["keys", "gate", "unsafeGet", "get", "withLimiter"])
  // Per key: the limiter (least recently used evicted, idle ones first: work still running
  // keeps its own limiter), and its gate and guard.
  private readonly limiters: BoundedMap.BoundedMap<string, LimiterImpl>
  private readonly gates: BoundedMap.BoundedMap<
    string,
    { readonly gate: Admission.Gate<CL.Permit, Errors.Overloaded>; readonly guard: Guard }
  >
  private readonly hub = makeHub<CL.Event>()
  readonly events: Stream.Stream<CL.Event> = Stream.fromPubSub(this.hub)
  constructor(private readonly config: ServiceConfig) {
    this.limiters = BoundedMap.make({ capacity: config.maxKeys, canEvict: (_, limiter) => limiter.idle })
    this.gates = BoundedMap.make({ capacity: config.maxKeys })
  }
  get size(): number {
    return this.limiters.size
  }
  keys(): ReadonlyArray<string> {
    return Array.from(this.limiters.keys())
  }
  private readonly newLimiter = (key: string): LimiterImpl => makeLimiter({ ...this.config, key }, this.hub)
  private readonly newGate = (key: string) => {
    const gate: Admission.Gate<CL.Permit, Errors.Overloaded> = {
      // Straight to the map (not through the bound `unsafeGet`): this is the per-call path.
      tryEnter: (entry) => this.limiters.getOrCreate(key, this.newLimiter).gate.tryEnter(entry),
      enter: (entry) => this.limiters.getOrCreate(key, this.newLimiter).gate.enter(entry),
      settle: (permit, outcome) => (permit as Permit).limiter.gate.settle(permit as Permit, outcome),
      isDrop: this.config.isDrop
    }
    // The gate finds its limiter per call, so eviction of the limiter is safe.
    return { gate, guard: Admission.guard([gate]) as Guard }
  }
  gate(key: string): Admission.Gate<CL.Permit, Errors.Overloaded> {
    return this.gates.getOrCreate(key, this.newGate).gate
  }
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
    return this.gates.getOrCreate(key, this.newGate).guard(self)
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
  tryConstruct(() => {
    const config = checkService(options)
    // Limiters are made on demand: try the factory once now, so bad algorithm
    // options fail at construction rather than on the first call.
    if (config.algorithm !== undefined) config.algorithm("")
    return new ServiceImpl(config) as CL.Service
  })

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

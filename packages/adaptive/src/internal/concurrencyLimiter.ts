import { Admission, Criticality, Errors, type Options, Outcome } from "@sluice/core"
import * as BoundedMap from "@sluice/core/shared/BoundedMap"
import * as Meters from "@sluice/core/shared/Meters"
import * as Limit from "@sluice/kernel/limit/Limit"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Exit from "effect/Exit"
import { dual } from "effect/Function"
import * as Layer from "effect/Layer"
import type * as Metric from "effect/Metric"
import { pipeArguments } from "effect/Pipeable"
import type * as PubSub from "effect/PubSub"
import type * as CL from "../ConcurrencyLimiter.js"
import type * as LA from "../limit/LimitAlgorithm.js"
import * as congestionWindow from "./limit/congestionWindow.js"
import { bindMethods } from "./bind.js"
import * as Stream from "effect/Stream"
import * as EventHub from "@sluice/core/shared/EventHub"
import { tryConstruct, validator } from "./options.js"
import { noContext } from "./service.js"
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

const limitGauge = Meters.gauge(
  "sluice_concurrency_limiter_limit",
  "current concurrency limit of a limiter key"
)
const inFlightGauge = Meters.gauge("sluice_concurrency_limiter_in_flight", "requests holding a permit")
const queuedGauge = Meters.gauge("sluice_concurrency_limiter_queued", "requests waiting for a permit")
const rejectedCounter = Meters.counter(
  "sluice_concurrency_limiter_rejected",
  "requests refused without running, by reason"
)

const reasons: ReadonlyArray<CL.RejectReason> = [
  "limit",
  "queue-full",
  "queue-timeout",
  "displaced",
  "deadline",
  "deadline-unmeetable"
]

// ---------------------------------------------------------------------------
// outcome classification: core's one classifier; algorithms hear success, dropped, ignored

/** @internal */
export const classify = (
  exit: Exit.Exit<unknown, unknown>,
  isDrop?: (error: unknown) => boolean
): LA.Outcome => Limit.sampleOutcome(Outcome.ofExit(exit, isDrop === undefined ? undefined : { isDrop }))

// ---------------------------------------------------------------------------
// the limiter

/**
 * What a permit is made with: the work's gate entry (its clock is read from the fiber only
 * when first needed), or, for a drained waiter, the permit just returned, whose clock it takes.
 */
type Origin = Admission.Entry | Permit

class Permit extends Kernel.Permit implements CL.Permit {
  private entry: Admission.Entry | undefined
  private fiberClock: Clock.Clock | undefined
  constructor(
    readonly limiter: LimiterImpl,
    id: number,
    start: number,
    level: number,
    origin: Origin,
    queued: boolean
  ) {
    super(id, start, level, queued)
    // Granted from the queue, it was made with the permit just returned (see `Origin`).
    if (queued) this.fiberClock = (origin as Permit).clock
    else this.entry = origin as Admission.Entry
  }
  /** Read only when a round-trip time or a drain needs it (not on the uncontended path of a time-blind algorithm). */
  get clock(): Clock.Clock {
    if (this.fiberClock === undefined) {
      this.fiberClock = this.entry!.clock
      this.entry = undefined
    }
    return this.fiberClock
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
  // This key's series, built once: an update is then a registry lookup, not a re-keying.
  private readonly limitMetric: Metric.Gauge<number>
  private readonly inFlightMetric: Metric.Gauge<number>
  private readonly queuedMetric: Metric.Gauge<number>
  /** Bound to the limiter's context (`Meters.bind`): a flood's refusals update them without a context lookup. */
  private readonly rejectedMetrics: Record<CL.RejectReason, Meters.Bound<number>>
  private reportedLimit: number
  readonly gate: Admission.Gate<CL.Permit, Errors.Overloaded>
  readonly events: Stream.Stream<CL.Event>
  readonly withLimiter: <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E | Errors.Overloaded, R>
  readonly enterBy: (entry: Admission.Entry, deadline: number) => Effect.Effect<CL.Permit, Errors.Overloaded>
  readonly refuseUnsafe: CL.Limiter["refuseUnsafe"]

  constructor(
    readonly key: string,
    algorithm: LA.LimitAlgorithm,
    config: Omit<Config, "key">,
    /** Where the limiter's metrics are updated: the context it was made in. */
    private readonly context: Context.Context<never>,
    private readonly hub: PubSub.PubSub<CL.Event> = EventHub.makeUnsafe<CL.Event>()
  ) {
    super(algorithm, config)
    this.events = Stream.fromPubSub(hub)
    this.maxWait = config.maxWait
    this.limitMetric = limitGauge.of({ key })
    this.inFlightMetric = inFlightGauge.of({ key })
    this.queuedMetric = queuedGauge.of({ key })
    this.rejectedMetrics = Object.fromEntries(
      reasons.map((reason) => [reason, Meters.bind(rejectedCounter.of({ key, reason }), context)])
    ) as Record<CL.RejectReason, Meters.Bound<number>>
    this.reportedLimit = algorithm.limit
    this.limitMetric.updateUnsafe(this.reportedLimit, this.context)
    this.inFlightMetric.updateUnsafe(0, this.context)
    this.queuedMetric.updateUnsafe(0, this.context)
    this.gate = {
      tryEnter: (entry) => {
        const level = Kernel.levelIndex[entry.criticality]
        const overQuota = entry.getRef(Criticality.currentOverQuota) !== undefined
        const answer = this.tryAcquire(level, entry.now, entry, overQuota)
        // A full queue of work at least as critical: refused here, with no wait set up. Work
        // over its customer's quota never waits (`"limit"`).
        if (answer === "wait")
          return this.hasRoom(level, overQuota) ? Admission.Wait : this.refuse("queue-full")
        if (answer === "limit") return this.refuse("limit")
        return answer
      },
      // Work over its customer's quota waits behind its level's other work.
      enter: (entry) =>
        this.waitFor(
          Kernel.levelIndex[entry.criticality],
          Infinity,
          entry.clock,
          entry.getRef(Criticality.currentOverQuota) !== undefined
        ),
      settle: (permit, outcome) => this.sample(permit as Permit, Limit.sampleOutcome(outcome)),
      isDrop: config.isDrop
    }
    // A closure, not a method: safe unbound, and no wrapper on the per-call path.
    this.withLimiter = Admission.guard([this.gate])
    this.refuseUnsafe = (criticality, overQuota = false) => {
      const reason = this.refusal(Kernel.levelIndex[criticality], overQuota)
      return reason === undefined ? undefined : this.rejection(reason)
    }
    this.enterBy = (entry, deadline) =>
      this.waitFor(
        Kernel.levelIndex[entry.criticality],
        deadline,
        entry.clock,
        entry.getRef(Criticality.currentOverQuota) !== undefined
      )
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
    return new Permit(this, id, start, level, origin, queued)
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

  protected override onMissed(waiter: Waiter, miss: Kernel.DeadlineMiss): void {
    waiter.rejection = this.rejection(miss)
    this.queuedMetric.updateUnsafe(this.queued, this.context)
    if (waiter.resume !== undefined) waiter.resume(Effect.fail(waiter.rejection))
  }

  private sample(permit: Permit, outcome: LA.Outcome): void {
    const timed = this.needsClock
    const now = timed ? permit.clock.currentTimeMillisUnsafe() : permit.start
    const granted = this.release(permit, outcome, now, permit, timed)
    this.afterChange(granted, permit.queued || outcome !== "success")
  }

  private reportedInFlight = 0
  private reportInFlight(): void {
    this.reportedInFlight = this.inFlight
    this.inFlightMetric.updateUnsafe(this.inFlight, this.context)
  }

  private afterChange(granted: number, report: boolean): void {
    const limit = this.algorithm.limit
    if (limit !== this.reportedLimit) {
      this.reportedLimit = limit
      this.limitMetric.updateUnsafe(limit, this.context)
      report = true
    }
    if (granted > 0) this.queuedMetric.updateUnsafe(this.queued, this.context)
    // At rest the gauge reads 0 again, pushed once, not on every uncontended call.
    if (report || (this.inFlight === 0 && this.reportedInFlight !== 0)) this.reportInFlight()
  }

  // One refusal value per reason, made once: a refusal under a flood must cost little (no
  // error built, no stack captured, and the server encodes its answer once per value); the
  // counters by reason and the events stream keep every refusal observable.
  private readonly rejections = Object.fromEntries(
    reasons.map((reason) => [
      reason,
      new Errors.Overloaded({ reason: `concurrency limit: ${reason}`, origin: "local" })
    ])
  ) as Record<CL.RejectReason, Errors.Overloaded>

  private readonly refusals = Object.fromEntries(
    reasons.map((reason) => [reason, Admission.refuse(this.rejections[reason])])
  ) as Record<CL.RejectReason, Admission.Refused<Errors.Overloaded>>

  private refuse(reason: CL.RejectReason): Admission.Refused<Errors.Overloaded> {
    this.rejection(reason)
    return this.refusals[reason]
  }

  private rejection(reason: CL.RejectReason): Errors.Overloaded {
    this.rejectedMetrics[reason].update(1)
    EventHub.publish(this.hub, { _tag: "Rejected", key: this.key, reason })
    return this.rejections[reason]
  }

  /** Leaves the queue, or gives back a permit that arrived too late to be used. Idempotent. */
  private abandon(waiter: Waiter): void {
    if (waiter.state === Kernel.QUEUED) {
      this.leave(waiter)
      this.queuedMetric.updateUnsafe(this.queued, this.context)
    } else if (waiter.state === Kernel.GRANTED) {
      waiter.state = Kernel.DONE
      const permit = waiter.permit!
      const granted = this.releaseUnused(permit, permit.clock.currentTimeMillisUnsafe(), permit)
      this.afterChange(granted, true)
    }
  }

  /**
   * The waiting path: a permit once one is free, or a local refusal. The guard runs it
   * uninterruptibly; only the wait itself is interruptible, whatever the caller's region
   * (Effect's HTTP server runs middleware uninterruptibly: a caller that left must not keep
   * its place in the queue, nor run its handler for nobody).
   */
  private waitFor(
    level: number,
    deadline: number,
    clock: Clock.Clock,
    overQuota: boolean
  ): Effect.Effect<Permit, Errors.Overloaded> {
    return Effect.suspend(() => {
      const now = deadline === Infinity ? 0 : clock.currentTimeMillisUnsafe()
      // Work its caller will not wait for is refused before it takes a place.
      const miss = this.missOf(deadline, now)
      if (miss !== undefined) return Effect.fail(this.rejection(miss))
      // A full queue of work served no later: refused at once, with no wait set up.
      if (!this.hasRoom(level, overQuota)) return Effect.fail(this.rejection("queue-full"))
      let waiter: Waiter | undefined
      // The waiter joins the queue in the step that registers how it resumes and how it
      // leaves: a fiber whose interruption is pending as it reaches the gate stops at the
      // edge of the interruptible region, before it holds a place or can be granted a permit.
      const wait = Effect.callback<Permit, Errors.Overloaded>((resume) => {
        // A full queue displaces the least critical waiter for more critical work.
        if (!this.makeRoom(level, overQuota)) return resume(Effect.fail(this.rejection("queue-full")))
        const joined = (waiter = new Waiter(level, overQuota))
        joined.deadline = deadline
        joined.resume = resume
        this.enqueue(joined)
        this.queuedMetric.updateUnsafe(this.queued, this.context)
        this.reportInFlight()
        return Effect.sync(() => this.abandon(joined))
      })
      const bounded =
        this.maxWait === undefined
          ? wait
          : Effect.timeoutOrElse(wait, {
              duration: this.maxWait,
              orElse: () => Effect.fail(this.rejection("queue-timeout"))
            })
      // The waiter leaves once its deadline cannot be met: at the latest start the service
      // time known now allows (a drain judges again with the estimate of its own moment).
      const timed =
        deadline === Infinity
          ? bounded
          : Effect.timeoutOrElse(bounded, {
              duration: Duration.millis(Math.max(0, deadline - (this.serviceTime ?? 0) - now)),
              orElse: () =>
                Effect.fail(
                  this.rejection(
                    clock.currentTimeMillisUnsafe() >= deadline ? "deadline" : "deadline-unmeetable"
                  )
                )
            })
      return timed.pipe(
        Effect.withSpan(
          "sluice.concurrency_limiter.wait",
          { attributes: { key: this.key, criticality: Criticality.levels[level] } },
          { captureStackTrace: false }
        ),
        Effect.interruptible,
        // Outside the interruptible region: a permit granted as the wait was interrupted is
        // given back here; a permit that came out of the wait is the guard's from here on
        // (the guard stores it with no interruptible step in between).
        Effect.onExit((exit) => {
          if (waiter !== undefined) {
            if (exit._tag === "Success") waiter.state = Kernel.DONE
            else this.abandon(waiter)
          }
          return Effect.void
        })
      )
    })
  }
}

const defaultFactory: LA.Factory = () => congestionWindow.makeUnsafe()

const makeLimiter = (
  config: Config,
  context: Context.Context<never>,
  hub?: PubSub.PubSub<CL.Event>
): LimiterImpl =>
  new LimiterImpl(config.key, (config.algorithm ?? defaultFactory)(config.key), config, context, hub)

/** @internal */
export const makeUnsafe = (options: CL.LimiterOptions = {}): CL.Limiter =>
  makeLimiter(checkLimiter(options), noContext)

/** @internal */
export const make = (options: CL.LimiterOptions = {}): Effect.Effect<CL.Limiter, Options.InvalidOptions> =>
  tryConstruct((context) => makeLimiter(checkLimiter(options), context))

type Guard = <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E | Errors.Overloaded, R>

class ServiceImpl implements CL.Service {
  protected readonly bound = bindMethods(this, ["keys", "gate", "getUnsafe", "get", "withLimiter"])
  // Per key: the limiter (least recently used evicted, idle ones first: work still running
  // keeps its own limiter), and its gate and guard.
  private readonly limiters: BoundedMap.BoundedMap<string, LimiterImpl>
  private readonly gates: BoundedMap.BoundedMap<
    string,
    { readonly gate: Admission.Gate<CL.Permit, Errors.Overloaded>; readonly guard: Guard }
  >
  private readonly hub = EventHub.makeUnsafe<CL.Event>()
  readonly events: Stream.Stream<CL.Event> = Stream.fromPubSub(this.hub)
  constructor(
    private readonly config: ServiceConfig,
    private readonly context: Context.Context<never>
  ) {
    this.limiters = BoundedMap.make({ capacity: config.maxKeys, canEvict: (_, limiter) => limiter.idle })
    this.gates = BoundedMap.make({ capacity: config.maxKeys })
  }
  get size(): number {
    return this.limiters.size
  }
  keys(): ReadonlyArray<string> {
    return Array.from(this.limiters.keys())
  }
  private readonly newLimiter = (key: string): LimiterImpl =>
    makeLimiter({ ...this.config, key }, this.context, this.hub)
  private readonly newGate = (key: string) => {
    const gate: Admission.Gate<CL.Permit, Errors.Overloaded> = {
      // Straight to the map (not through the bound `getUnsafe`): this is the per-call path.
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
  getUnsafe(key: string): CL.Limiter {
    return this.limiters.getOrCreate(key, this.newLimiter)
  }
  get(key: string): Effect.Effect<CL.Limiter> {
    return Effect.sync(() => this.getUnsafe(key))
  }
  withLimiter<A, E, R>(
    self: Effect.Effect<A, E, R>,
    key = "default"
  ): Effect.Effect<A, E | Errors.Overloaded, R> {
    return this.gates.getOrCreate(key, this.newGate).guard(self)
  }
}

/** @internal */
export const ConcurrencyLimiter = Context.Service<CL.ConcurrencyLimiter, CL.Service>(
  "@sluice/adaptive/ConcurrencyLimiter"
)

/** @internal */
export const makeService = (
  options: CL.ServiceOptions = {}
): Effect.Effect<CL.Service, Options.InvalidOptions> =>
  tryConstruct((context) => {
    const config = checkService(options)
    // Limiters are made on demand: try the factory once now, so bad algorithm
    // options fail at construction rather than on the first call.
    if (config.algorithm !== undefined) config.algorithm("")
    return new ServiceImpl(config, context) as CL.Service
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
      ? Effect.flatMap(ConcurrencyLimiter, (service) => service.getUnsafe(keyOrLimiter).withLimiter(self))
      : keyOrLimiter.withLimiter(self)
)

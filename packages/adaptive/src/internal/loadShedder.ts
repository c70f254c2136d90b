import { Admission, Criticality, Errors, Options } from "@sluice/core"
import * as Meters from "@sluice/core/shared/Meters"
import type { ServerLoad } from "@sluice/core"
import * as Kernel from "@sluice/kernel/shed/LoadShedder"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import { performance } from "node:perf_hooks"
import type * as LS from "../LoadShedder.js"
import * as EventHub from "@sluice/core/shared/EventHub"
import type * as CL from "../ConcurrencyLimiter.js"
import * as limiterInternal from "./concurrencyLimiter.js"
import * as limitAlgorithm from "./limit/limitAlgorithm.js"
import { boundByLevel, Millis, options, peekAt, withDefault } from "./service.js"

type Level = Criticality.Criticality

const UtilizationSource = Schema.declare((u: unknown): u is Effect.Effect<number> => Effect.isEffect(u), {
  identifier: "UtilizationSource",
  description: "an Effect<number> giving the event-loop utilization since the previous sample"
})

const LoadShedderOptions = Schema.Struct({
  capacity: Schema.Number,
  smoothing: Schema.optional(Millis),
  thresholds: Schema.optional(Schema.Record(Criticality.Criticality, Schema.optional(Schema.Number))),
  retryAfter: withDefault(Options.PositiveDuration, Duration.seconds(1)),
  eventLoop: Schema.optional(
    Schema.Struct({ interval: Schema.optional(Millis), source: Schema.optional(UtilizationSource) })
  ),
  bound: Schema.optional(
    Schema.Union([
      Schema.Literal(false),
      Schema.Struct({
        maxQueue: Schema.optional(Schema.Number),
        maxWait: Schema.optional(Options.PositiveDuration)
      })
    ])
  ),
  name: withDefault(Schema.String, "default")
})
const { decode } = options("LoadShedder", LoadShedderOptions, Kernel.issues)

/** @internal */
export const defaultThresholds = Kernel.defaultThresholds

/** @internal */
export const overQuotaThreshold = Kernel.overQuotaThreshold

const families = {
  utilization: Meters.gauge(
    "sluice_load_shedder_utilization",
    "Utilization the shedder decides on: max(smoothed active / capacity, event-loop utilization)"
  ),
  eventLoopUtilization: Meters.gauge(
    "sluice_load_shedder_event_loop_utilization",
    "Last sampled event-loop utilization"
  ),
  shed: Meters.counter("sluice_load_shedder_shed", "Requests shed with Overloaded"),
  overQuotaShed: Meters.counter(
    "sluice_load_shedder_over_quota_shed",
    "Requests over their customer's quota shed with Overloaded (also counted in sluice_load_shedder_shed)"
  ),
  admitted: Meters.counter("sluice_load_shedder_admitted", "Requests admitted")
}

/** @internal */
export const metrics = {
  utilization: families.utilization.metric,
  eventLoopUtilization: families.eventLoopUtilization.metric,
  shed: families.shed.metric,
  overQuotaShed: families.overQuotaShed.metric,
  admitted: families.admitted.metric
}

/**
 * Node's event-loop utilization between successive samples.
 *
 * @internal
 */
export const nodeEventLoopUtilization: Effect.Effect<Effect.Effect<number>> = Effect.sync(() => {
  let previous = performance.eventLoopUtilization()
  return Effect.sync(() => {
    const current = performance.eventLoopUtilization()
    const delta = performance.eventLoopUtilization(current, previous)
    previous = current
    return delta.utilization
  })
})

/**
 * Work the shedder admitted: its level, whether it is over its customer's quota, and the
 * clock of the fiber that brought it (its completion folds the averages at that clock's
 * time). One ticket serves every admission of a level (over quota or not) under the same clock.
 */
class Ticket implements LS.Ticket {
  constructor(
    readonly criticality: Level,
    readonly overQuota: boolean,
    readonly clock: Clock.Clock
  ) {}
}

/** @internal */
export const make = (
  options: LS.LoadShedderOptions
): Effect.Effect<LS.Service, Options.InvalidOptions, Scope.Scope> =>
  Effect.gen(function* () {
    const decoded = yield* decode(options)
    const at = peekAt(yield* Clock.Clock)
    // the shedder's metrics go where it was made (its registry, its attributes)
    const context = yield* Effect.context<never>()
    const { name, retryAfter } = decoded
    // The hard bound: a concurrency limiter of `capacity` permits with a short queue that
    // serves the most critical waiter first. The smoothed estimate lags a burst by design
    // (a burst at an idle server reads as an idle server), so without it a burst would be
    // admitted whole; the limiter holds the line while the estimate catches up. The
    // shedder then judges the work inside it (running and queued) against what the bound
    // holds, so that it refuses cheaply what the queue could not take, and leaves the
    // queue to decide between levels.
    const permits = Math.max(1, Math.round(decoded.capacity))
    const maxQueue =
      decoded.bound === false ? 0 : (decoded.bound?.maxQueue ?? Math.max(1, Math.floor(permits / 2)))
    const bound: CL.Limiter | undefined =
      decoded.bound === false
        ? undefined
        : yield* limiterInternal.make({
            key: `load-shedder:${name}`,
            algorithm: () => limitAlgorithm.fixed(permits),
            maxQueue,
            maxWait: decoded.bound?.maxWait ?? Duration.seconds(1)
          })
    const shedder = Kernel.make({
      capacity: decoded.capacity + maxQueue,
      smoothing: decoded.smoothing,
      thresholds: decoded.thresholds,
      eventLoop: decoded.eventLoop
    })
    const { eventLoopInterval, thresholds } = shedder
    const capacity = decoded.capacity
    const hub = EventHub.makeUnsafe<LS.Event>()
    const attributes = { shedder: name }
    // Bound to the context the shedder was made in: a shed under a flood updates its series
    // without looking up the registry and attributes in a context each time.
    const utilizationMetric = Meters.bind(families.utilization.of(attributes), context)
    const eventLoopMetric = families.eventLoopUtilization.of(attributes)
    const shedMetrics = boundByLevel(families.shed, attributes, context)
    const overQuotaShedMetrics = boundByLevel(families.overQuotaShed, attributes, context)
    const admittedMetrics = boundByLevel(families.admitted, attributes, context)

    // One ticket per level (and over quota or not), reused while the clock stays the same.
    const tickets: Partial<Record<Level, Ticket>> = {}
    const overQuotaTickets: Partial<Record<Level, Ticket>> = {}
    const admit = (level: Level, overQuota: boolean, entry: Admission.Entry): Ticket => {
      shedder.admit(level, overQuota)
      admittedMetrics[level].update(1)
      const reused = overQuota ? overQuotaTickets : tickets
      const ticket = reused[level]
      if (ticket !== undefined && ticket.clock === entry.clock) return ticket
      return (reused[level] = new Ticket(level, overQuota, entry.clock))
    }

    // One refusal value, made once: a shed under a flood must cost little, so no error is
    // built (and no stack captured) and no span opened per refusal; the counters by level
    // and the events stream keep every refusal observable.
    const refusal = Admission.refuse(new Errors.Overloaded({ reason: "shed", retryAfter, origin: "local" }))
    const shed = (level: Level, overQuota: boolean, u: number) => {
      shedMetrics[level].update(1)
      if (overQuota) overQuotaShedMetrics[level].update(1)
      EventHub.publish(hub, { _tag: "Shed", shedder: name, criticality: level, overQuota, utilization: u })
      return refusal
    }

    // The shedder's side of the admission protocol: work is admitted or shed at once, it
    // never waits here. Whatever the outcome, a settled ticket is work that left: the
    // shedder counts load, it learns nothing from how the work went.
    const gate: Admission.Gate<LS.Ticket, Errors.Overloaded> = {
      tryEnter: (entry) => {
        const level = entry.criticality
        const overQuota = entry.getRef(Criticality.currentOverQuota) !== undefined
        const u = shedder.arrive(level, entry.now, overQuota)
        utilizationMetric.update(shedder.utilization(entry.now))
        return shedder.sheds(level, u, overQuota) ? shed(level, overQuota, u) : admit(level, overQuota, entry)
      },
      // never taken: `tryEnter` never answers Wait
      enter: (entry) =>
        Effect.suspend(() => {
          const level = entry.criticality
          const overQuota = entry.getRef(Criticality.currentOverQuota) !== undefined
          const u = shedder.arrive(level, entry.now, overQuota)
          return shedder.sheds(level, u, overQuota)
            ? Effect.fail(refusal.error)
            : Effect.sync(() => admit(level, overQuota, entry))
        }),
      settle: (ticket) => {
        const { clock, criticality, overQuota } = ticket as Ticket
        shedder.leave(criticality, clock.currentTimeMillisUnsafe(), overQuota)
      }
    }
    const run: LS.Service["withShedder"] = Admission.guard(
      bound === undefined ? [gate] : [gate, bound.gate as Admission.Gate<unknown, Errors.Overloaded>]
    )

    if (eventLoopInterval !== undefined) {
      const source = decoded.eventLoop?.source ?? (yield* nodeEventLoopUtilization)
      const sample = Effect.flatMap(source, (value) =>
        Effect.sync(() => eventLoopMetric.updateUnsafe(shedder.setEventLoop(value), context))
      ).pipe(Effect.catchCause(() => Effect.void))
      yield* Effect.sleep(eventLoopInterval).pipe(
        Effect.andThen(sample),
        Effect.forever,
        Effect.interruptible,
        Effect.forkScoped
      )
    }

    const utilizationUnsafe = (nowMillis?: number) => shedder.utilization(at(nowMillis))

    return {
      withShedder: run,
      gate,
      utilization: Effect.map(Clock.currentTimeMillis, utilizationUnsafe),
      utilizationUnsafe,
      levelUtilizationUnsafe: (level: Level, nowMillis?: number, overQuota?: boolean) =>
        shedder.levelUtilization(level, at(nowMillis), overQuota),
      activeUnsafe: () => shedder.active,
      activeOfUnsafe: shedder.activeOf,
      overQuotaOfUnsafe: shedder.overQuotaOf,
      eventLoopUtilizationUnsafe: () => shedder.eventLoop,
      wouldShedUnsafe: (level: Level, nowMillis?: number, overQuota?: boolean) =>
        shedder.wouldShed(level, at(nowMillis), overQuota),
      // The gate's arrival and shed without a ticket. An arrival it admits is recorded again
      // when it enters through the gate: `arrive` records an instant per rank, so a second
      // record of the same request changes nothing but that instant.
      shedUnsafe: (level: Level, nowMillis: number, overQuota = false) => {
        const u = shedder.arrive(level, nowMillis, overQuota)
        if (!shedder.sheds(level, u, overQuota)) return undefined
        utilizationMetric.update(shedder.utilization(nowMillis))
        return shed(level, overQuota, u).error
      },
      thresholds,
      capacity,
      retryAfter,
      bound,
      load: {
        utilization: (nowMillis: number) => shedder.utilization(nowMillis),
        admits: (level: Level, nowMillis: number) => !shedder.wouldShed(level, nowMillis)
      } satisfies ServerLoad.ServerLoad,
      events: Stream.fromPubSub(hub)
    } satisfies LS.Service
  })

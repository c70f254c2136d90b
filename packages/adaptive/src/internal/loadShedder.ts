import { Admission, Criticality, Errors, Options } from "@sluice/core"
import * as Kernel from "@sluice/kernel/shed/LoadShedder"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import type * as DefaultServices from "effect/DefaultServices"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import * as MetricLabel from "effect/MetricLabel"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import { performance } from "node:perf_hooks"
import type * as LS from "../LoadShedder.js"
import * as Stream from "effect/Stream"
import { makeHub } from "./events.js"

type Level = Criticality.Criticality

const Threshold = Schema.Number.pipe(
  Schema.filter((n) => !Number.isNaN(n) && n > 0, {
    message: (issue) => `expected a positive number (Infinity: never shed), got ${String(issue.actual)}`
  })
)

/** @internal */
export const defaultThresholds: Readonly<Record<Level, number>> = Kernel.defaultThresholds

/** @internal */
export const Thresholds = Schema.Struct({
  SHEDDABLE: Schema.optionalWith(Threshold, { default: () => defaultThresholds.SHEDDABLE }),
  SHEDDABLE_PLUS: Schema.optionalWith(Threshold, { default: () => defaultThresholds.SHEDDABLE_PLUS }),
  CRITICAL: Schema.optionalWith(Threshold, { default: () => defaultThresholds.CRITICAL }),
  CRITICAL_PLUS: Schema.optionalWith(Threshold, { default: () => defaultThresholds.CRITICAL_PLUS })
}).pipe(
  Schema.filter((t) => {
    const wrong = Kernel.misordered(t)
    if (wrong === undefined) return undefined
    const { level, lower } = wrong
    return {
      path: [level],
      message: `thresholds.${level} (${t[level]}) must not be below thresholds.${lower} (${t[lower]}): a more critical level may not be shed first`
    }
  })
)

const UtilizationSource = Schema.declare((u: unknown): u is Effect.Effect<number> => Effect.isEffect(u), {
  identifier: "UtilizationSource",
  description: "an Effect<number> giving the event-loop utilization since the previous sample"
})

/** @internal */
export const LoadShedderOptions = Schema.Struct({
  capacity: Options.PositiveNumber,
  smoothing: Schema.optionalWith(Options.PositiveDuration, { default: () => Duration.seconds(1) }),
  thresholds: Schema.optionalWith(Thresholds, { default: () => ({ ...defaultThresholds }) }),
  retryAfter: Schema.optionalWith(Options.PositiveDuration, { default: () => Duration.seconds(1) }),
  eventLoop: Schema.optional(
    Schema.Struct({
      interval: Schema.optionalWith(Options.PositiveDuration, { default: () => Duration.seconds(1) }),
      source: Schema.optional(UtilizationSource)
    })
  ),
  name: Schema.optionalWith(Schema.String, { default: () => "default" })
})

const utilizationMetric = Metric.gauge("sluice_load_shedder_utilization", {
  description: "Utilization the shedder decides on: max(smoothed active / capacity, event-loop utilization)"
})
const eventLoopMetric = Metric.gauge("sluice_load_shedder_event_loop_utilization", {
  description: "Last sampled event-loop utilization"
})
const shedMetric = Metric.counter("sluice_load_shedder_shed", {
  description: "Requests shed with Overloaded",
  incremental: true
})
const admittedMetric = Metric.counter("sluice_load_shedder_admitted", {
  description: "Requests admitted",
  incremental: true
})

/** @internal */
export const metrics = {
  utilization: utilizationMetric,
  eventLoopUtilization: eventLoopMetric,
  shed: shedMetric,
  admitted: admittedMetric
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
 * Work the shedder admitted: its level, and the clock of the fiber that brought it
 * (its completion folds the averages at that clock's time). One ticket serves every
 * admission of a level from the same fiber services.
 */
class Ticket implements LS.Ticket {
  constructor(
    readonly criticality: Level,
    readonly services: Context.Context<DefaultServices.DefaultServices>,
    readonly clock: Clock.Clock
  ) {}
}

/** @internal */
export const make = (
  options: LS.LoadShedderOptions
): Effect.Effect<LS.Service, Options.InvalidOptions, Scope.Scope> =>
  Effect.gen(function* () {
    const decoded = yield* Options.decode("LoadShedder", LoadShedderOptions)(options)
    const peekClock = yield* Effect.clock
    const { capacity, name, retryAfter, thresholds } = decoded
    const shedder = Kernel.make({
      capacity,
      smoothing: Duration.toMillis(decoded.smoothing),
      thresholds,
      eventLoopInterval:
        decoded.eventLoop === undefined ? undefined : Duration.toMillis(decoded.eventLoop.interval)
    })
    const hub = makeHub<LS.Event>()
    const nameLabel = MetricLabel.make("shedder", name)
    const nameTags: ReadonlyArray<MetricLabel.MetricLabel> = [nameLabel]
    const levelTags = {} as Record<Level, ReadonlyArray<MetricLabel.MetricLabel>>
    for (const level of Criticality.levels) {
      levelTags[level] = [nameLabel, MetricLabel.make("criticality", level)]
    }

    // One ticket per level, reused while the fiber services stay the same.
    const tickets: Partial<Record<Level, Ticket>> = {}
    const admit = (level: Level, entry: Admission.Entry): Ticket => {
      shedder.admit(level)
      admittedMetric.unsafeUpdate(1, levelTags[level])
      const ticket = tickets[level]
      if (ticket !== undefined && ticket.services === entry.services) return ticket
      return (tickets[level] = new Ticket(level, entry.services, Context.get(entry.services, Clock.Clock)))
    }

    const shed = (level: Level, u: number): Effect.Effect<never, Errors.Overloaded> => {
      shedMetric.unsafeUpdate(1, levelTags[level])
      hub.unsafeOffer({ _tag: "Shed", shedder: name, criticality: level, utilization: u })
      return Effect.fail(new Errors.Overloaded({ reason: "shed", retryAfter, origin: "local" })).pipe(
        Effect.withSpan("sluice.load_shedder.shed", {
          captureStackTrace: false,
          attributes: { shedder: name, criticality: level, utilization: u, threshold: thresholds[level] }
        })
      )
    }

    // The shedder's side of the admission protocol. Work is admitted at once or shed; a
    // shed goes down the waiting path (`Wait`) only so that the refusal fails inside its span.
    // Whatever the outcome, a settled ticket is work that left: the shedder counts load,
    // it learns nothing from how the work went.
    const gate: Admission.Gate<LS.Ticket, Errors.Overloaded> = {
      tryEnter: (entry) => {
        const level = entry.criticality
        const u = shedder.arrive(level, entry.now)
        utilizationMetric.unsafeUpdate(shedder.utilization(entry.now), nameTags)
        return shedder.sheds(level, u) ? Admission.Wait : admit(level, entry)
      },
      enter: (entry) =>
        Effect.suspend(() => {
          const level = entry.criticality
          const u = shedder.arrive(level, entry.now)
          // Admitted (the load fell since `tryEnter`): counted in one synchronous step that
          // hands the ticket straight on, so no interruption falls between the count and the ticket.
          return shedder.sheds(level, u) ? shed(level, u) : Effect.sync(() => admit(level, entry))
        }),
      settle: (ticket) => {
        const { clock, criticality } = ticket as Ticket
        shedder.leave(criticality, clock.unsafeCurrentTimeMillis())
      }
    }
    const run: LS.Service["withShedder"] = Admission.guard([gate])

    if (decoded.eventLoop !== undefined) {
      const source = decoded.eventLoop.source ?? (yield* nodeEventLoopUtilization)
      const sample = Effect.flatMap(source, (value) =>
        Effect.sync(() => eventLoopMetric.unsafeUpdate(shedder.setEventLoop(value), nameTags))
      ).pipe(Effect.catchAllCause(() => Effect.void))
      yield* Effect.sleep(decoded.eventLoop.interval).pipe(
        Effect.zipRight(sample),
        Effect.forever,
        Effect.interruptible,
        Effect.forkScoped
      )
    }

    const unsafeUtilization = (nowMillis?: number) =>
      shedder.utilization(nowMillis ?? peekClock.unsafeCurrentTimeMillis())
    const unsafeLevelUtilization = (level: Level, nowMillis?: number) =>
      shedder.levelUtilization(level, nowMillis ?? peekClock.unsafeCurrentTimeMillis())

    return {
      withShedder: run,
      gate,
      utilization: Effect.map(Clock.currentTimeMillis, unsafeUtilization),
      unsafeUtilization,
      unsafeLevelUtilization,
      unsafeActive: () => shedder.active,
      unsafeActiveOf: shedder.activeOf,
      unsafeEventLoopUtilization: () => shedder.eventLoop,
      unsafeWouldShed: (level: Level, nowMillis?: number) =>
        shedder.wouldShed(level, nowMillis ?? peekClock.unsafeCurrentTimeMillis()),
      thresholds,
      capacity,
      retryAfter,
      events: Stream.fromPubSub(hub)
    } satisfies LS.Service
  })

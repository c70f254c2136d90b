import { Admission, Criticality, Errors, Options } from "@sluice/core"
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

// Least critical first: the order in which thresholds must not decrease.
const ascending: ReadonlyArray<Level> = ["SHEDDABLE", "SHEDDABLE_PLUS", "CRITICAL", "CRITICAL_PLUS"]

const Threshold = Schema.Number.pipe(
  Schema.filter((n) => !Number.isNaN(n) && n > 0, {
    message: (issue) => `expected a positive number (Infinity: never shed), got ${String(issue.actual)}`
  })
)

/** @internal */
export const defaultThresholds: Readonly<Record<Level, number>> = {
  SHEDDABLE: 0.8,
  SHEDDABLE_PLUS: 0.9,
  CRITICAL: 1.0,
  CRITICAL_PLUS: 1.1
}

/** @internal */
export const Thresholds = Schema.Struct({
  SHEDDABLE: Schema.optionalWith(Threshold, { default: () => defaultThresholds.SHEDDABLE }),
  SHEDDABLE_PLUS: Schema.optionalWith(Threshold, { default: () => defaultThresholds.SHEDDABLE_PLUS }),
  CRITICAL: Schema.optionalWith(Threshold, { default: () => defaultThresholds.CRITICAL }),
  CRITICAL_PLUS: Schema.optionalWith(Threshold, { default: () => defaultThresholds.CRITICAL_PLUS })
}).pipe(
  Schema.filter((t) => {
    for (let i = 1; i < ascending.length; i++) {
      const lower = ascending[i - 1]!
      const level = ascending[i]!
      if (t[level] < t[lower]) {
        return {
          path: [level],
          message: `thresholds.${level} (${t[level]}) must not be below thresholds.${lower} (${t[lower]}): a more critical level may not be shed first`
        }
      }
    }
    return undefined
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
    readonly rank: number,
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
    const tauMillis = Duration.toMillis(decoded.smoothing)
    const hub = makeHub<LS.Event>()
    const nameLabel = MetricLabel.make("shedder", name)
    const nameTags: ReadonlyArray<MetricLabel.MetricLabel> = [nameLabel]
    const levelTags = {} as Record<Level, ReadonlyArray<MetricLabel.MetricLabel>>
    for (const level of Criticality.levels) {
      levelTags[level] = [nameLabel, MetricLabel.make("criticality", level)]
    }

    // Per level, least critical first (index = position in `ascending`): requests in
    // flight, and the smoothed amount of work at that level *or above*. A request is
    // judged by the work of its own level and the more critical ones only, so less
    // critical work never gets a more critical request shed (and since these sums
    // shrink as the level rises while thresholds grow, whenever a level is admitted
    // every more critical one is too).
    const rankOf = {} as Record<Level, number>
    ascending.forEach((level, i) => (rankOf[level] = i))
    const levelThresholds = ascending.map((level) => thresholds[level])
    const active = [0, 0, 0, 0]
    const atLeast = [0, 0, 0, 0]
    const smoothed = [0, 0, 0, 0]
    // When a request of each level last arrived (admitted or not), and the latest arrival
    // before that instant: cover is given by arrivals of earlier instants only, so every
    // decision within one instant sees the same cover, whatever the order of arrivals.
    const lastArrival = [-Infinity, -Infinity, -Infinity, -Infinity]
    const earlierArrival = [-Infinity, -Infinity, -Infinity, -Infinity]
    const arrive = (rank: number, now: number) => {
      if (lastArrival[rank]! < now) {
        earlierArrival[rank] = lastArrival[rank]!
        lastArrival[rank] = now
      }
    }
    let total = 0
    let last: number | undefined = undefined
    let eventLoop = 0
    // How long an arrival of a less critical level keeps the event-loop signal off the
    // more critical ones: two sampling intervals, so that the sample that saw its work does.
    const presenceMillis =
      decoded.eventLoop !== undefined ? 2 * Duration.toMillis(decoded.eventLoop.interval) : 0

    // The counts have held their values since `last`: fold that stretch into the
    // averages (exact for a step signal) before anything changes them.
    const fold = (now: number) => {
      if (last === undefined) {
        last = now
        for (let i = 0; i < 4; i++) smoothed[i] = atLeast[i]!
        return
      }
      const dt = now - last
      if (dt > 0) {
        const f = 1 - Math.exp(-dt / tauMillis)
        for (let i = 0; i < 4; i++) smoothed[i]! += f * (atLeast[i]! - smoothed[i]!)
        last = now
      }
    }
    const utilization = () => Math.max(smoothed[0]! / capacity, eventLoop)
    // The event-loop signal cannot tell whose work keeps the loop busy: it sheds only
    // the least critical levels still arriving, never one above a level that arrived lately.
    const lowerArrived = (rank: number, now: number) => {
      for (let i = 0; i < rank; i++) {
        const before = lastArrival[i]! < now ? lastArrival[i]! : earlierArrival[i]!
        if (now - before <= presenceMillis) return true
      }
      return false
    }
    const levelUtilization = (rank: number, now: number) =>
      Math.max(smoothed[rank]! / capacity, eventLoop > 0 && !lowerArrived(rank, now) ? eventLoop : 0)
    const add = (rank: number, delta: number) => {
      active[rank]! += delta
      total += delta
      for (let i = 0; i <= rank; i++) atLeast[i]! += delta
    }

    const tickets: Array<Ticket | undefined> = [undefined, undefined, undefined, undefined]
    const admit = (rank: number, entry: Admission.Entry): Ticket => {
      const level = ascending[rank]!
      add(rank, 1)
      admittedMetric.unsafeUpdate(1, levelTags[level])
      const ticket = tickets[rank]
      if (ticket !== undefined && ticket.services === entry.services) return ticket
      return (tickets[rank] = new Ticket(
        level,
        rank,
        entry.services,
        Context.get(entry.services, Clock.Clock)
      ))
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
        const now = entry.now
        fold(now)
        const rank = rankOf[entry.criticality]
        const u = levelUtilization(rank, now)
        arrive(rank, now)
        utilizationMetric.unsafeUpdate(utilization(), nameTags)
        return u >= levelThresholds[rank]! ? Admission.Wait : admit(rank, entry)
      },
      enter: (entry) =>
        Effect.suspend(() => {
          const now = entry.now
          fold(now)
          const level = entry.criticality
          const rank = rankOf[level]
          const u = levelUtilization(rank, now)
          arrive(rank, now)
          // Admitted (the load fell since `tryEnter`): counted in one synchronous step that
          // hands the ticket straight on, so no interruption falls between the count and the ticket.
          return u >= levelThresholds[rank]! ? shed(level, u) : Effect.sync(() => admit(rank, entry))
        }),
      settle: (ticket) => {
        const { clock, rank } = ticket as Ticket
        fold(clock.unsafeCurrentTimeMillis())
        add(rank, -1)
      }
    }
    const run: LS.Service["withShedder"] = Admission.guard([gate])

    if (decoded.eventLoop !== undefined) {
      const source = decoded.eventLoop.source ?? (yield* nodeEventLoopUtilization)
      const sample = Effect.flatMap(source, (value) =>
        Effect.sync(() => {
          // A broken reading (NaN, out of range) must not shed everything or nothing: clamp or keep the last one.
          if (Number.isFinite(value)) eventLoop = Math.min(1, Math.max(0, value))
          eventLoopMetric.unsafeUpdate(eventLoop, nameTags)
        })
      ).pipe(Effect.catchAllCause(() => Effect.void))
      yield* Effect.sleep(decoded.eventLoop.interval).pipe(
        Effect.zipRight(sample),
        Effect.forever,
        Effect.interruptible,
        Effect.forkScoped
      )
    }

    const unsafeUtilization = (nowMillis?: number) => {
      fold(nowMillis ?? peekClock.unsafeCurrentTimeMillis())
      return utilization()
    }
    const unsafeLevelUtilization = (level: Level, nowMillis?: number) => {
      const now = nowMillis ?? peekClock.unsafeCurrentTimeMillis()
      fold(now)
      return levelUtilization(rankOf[level], now)
    }

    return {
      withShedder: run,
      gate,
      utilization: Effect.map(Clock.currentTimeMillis, unsafeUtilization),
      unsafeUtilization,
      unsafeLevelUtilization,
      unsafeActive: () => total,
      unsafeActiveOf: (level: Level) => active[rankOf[level]]!,
      unsafeEventLoopUtilization: () => eventLoop,
      unsafeWouldShed: (level: Level, nowMillis?: number) =>
        unsafeLevelUtilization(level, nowMillis) >= thresholds[level],
      thresholds,
      capacity,
      retryAfter,
      events: Stream.fromPubSub(hub)
    } satisfies LS.Service
  })

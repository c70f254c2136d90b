import { Admission, Criticality, Errors, Options } from "@sluice/core"
import * as Kernel from "@sluice/kernel/shed/LoadShedder"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import type * as DefaultServices from "effect/DefaultServices"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import { performance } from "node:perf_hooks"
import type * as LS from "../LoadShedder.js"
import * as Stream from "effect/Stream"
import { makeHub, publish } from "./events.js"
import { counter, gauge, levelTags, Millis, options, peekAt, tags } from "./service.js"

type Level = Criticality.Criticality

const UtilizationSource = Schema.declare((u: unknown): u is Effect.Effect<number> => Effect.isEffect(u), {
  identifier: "UtilizationSource",
  description: "an Effect<number> giving the event-loop utilization since the previous sample"
})

const LoadShedderOptions = Schema.Struct({
  capacity: Schema.Number,
  smoothing: Schema.optional(Millis),
  thresholds: Schema.optional(
    Schema.partial(Schema.Record({ key: Criticality.Criticality, value: Schema.Number }))
  ),
  retryAfter: Schema.optionalWith(Options.PositiveDuration, { default: () => Duration.seconds(1) }),
  eventLoop: Schema.optional(
    Schema.Struct({ interval: Schema.optional(Millis), source: Schema.optional(UtilizationSource) })
  ),
  name: Schema.optionalWith(Schema.String, { default: () => "default" })
})
const { decode } = options("LoadShedder", LoadShedderOptions, Kernel.issues)

/** @internal */
export const defaultThresholds = Kernel.defaultThresholds

/** @internal */
export const metrics = {
  utilization: gauge(
    "sluice_load_shedder_utilization",
    "Utilization the shedder decides on: max(smoothed active / capacity, event-loop utilization)"
  ),
  eventLoopUtilization: gauge(
    "sluice_load_shedder_event_loop_utilization",
    "Last sampled event-loop utilization"
  ),
  shed: counter("sluice_load_shedder_shed", "Requests shed with Overloaded"),
  admitted: counter("sluice_load_shedder_admitted", "Requests admitted")
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
    const decoded = yield* decode(options)
    const at = peekAt(yield* Effect.clock)
    const { name, retryAfter } = decoded
    const shedder = Kernel.make(decoded)
    const { capacity, eventLoopInterval, thresholds } = shedder
    const hub = makeHub<LS.Event>()
    const nameTags = tags(["shedder", name])
    const byLevel = levelTags(nameTags)

    // One ticket per level, reused while the fiber services stay the same.
    const tickets: Partial<Record<Level, Ticket>> = {}
    const admit = (level: Level, entry: Admission.Entry): Ticket => {
      shedder.admit(level)
      metrics.admitted.unsafeUpdate(1, byLevel[level])
      const ticket = tickets[level]
      if (ticket !== undefined && ticket.services === entry.services) return ticket
      return (tickets[level] = new Ticket(level, entry.services, Context.get(entry.services, Clock.Clock)))
    }

    const shed = (level: Level, u: number): Effect.Effect<never, Errors.Overloaded> => {
      metrics.shed.unsafeUpdate(1, byLevel[level])
      publish(hub, { _tag: "Shed", shedder: name, criticality: level, utilization: u })
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
        metrics.utilization.unsafeUpdate(shedder.utilization(entry.now), nameTags)
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

    if (eventLoopInterval !== undefined) {
      const source = decoded.eventLoop?.source ?? (yield* nodeEventLoopUtilization)
      const sample = Effect.flatMap(source, (value) =>
        Effect.sync(() => metrics.eventLoopUtilization.unsafeUpdate(shedder.setEventLoop(value), nameTags))
      ).pipe(Effect.catchAllCause(() => Effect.void))
      yield* Effect.sleep(eventLoopInterval).pipe(
        Effect.zipRight(sample),
        Effect.forever,
        Effect.interruptible,
        Effect.forkScoped
      )
    }

    const unsafeUtilization = (nowMillis?: number) => shedder.utilization(at(nowMillis))

    return {
      withShedder: run,
      gate,
      utilization: Effect.map(Clock.currentTimeMillis, unsafeUtilization),
      unsafeUtilization,
      unsafeLevelUtilization: (level: Level, nowMillis?: number) =>
        shedder.levelUtilization(level, at(nowMillis)),
      unsafeActive: () => shedder.active,
      unsafeActiveOf: shedder.activeOf,
      unsafeEventLoopUtilization: () => shedder.eventLoop,
      unsafeWouldShed: (level: Level, nowMillis?: number) => shedder.wouldShed(level, at(nowMillis)),
      thresholds,
      capacity,
      retryAfter,
      events: Stream.fromPubSub(hub)
    } satisfies LS.Service
  })

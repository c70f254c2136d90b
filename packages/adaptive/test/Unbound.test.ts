/**
 * Every function on every public adaptive service value works when passed unbound
 * (conventions §1). The tables are typed: a function-valued property added to a service
 * interface without an entry here is a compile error.
 */
import { it } from "@effect/vitest"
import {
  AdaptiveThrottle,
  AimdLimit,
  AimdInterval,
  ConcurrencyLimiter,
  CongestionWindow,
  LoadShedder,
  Pacer,
  ProportionalSampler,
  QpsSensor,
  TempoLimit,
  ThresholdMonitor,
  VegasLimit
} from "@sluice/adaptive"
import { Cause, Clock, Context, Effect, Exit, Option } from "effect"
import { describe, expect } from "vitest"

type Fns<S> = { [K in keyof S]-?: S[K] extends (...args: any) => any ? K : never }[keyof S]
type Calls<S> = { readonly [K in Fns<S>]: ReadonlyArray<unknown> }

const sample = { id: 0, nextId: 1, outcome: "success", rtt: 5, inFlight: 1, now: 10 } as const

/** Detaches each function from its service and calls it through Effect combinators. */
const callAllUnbound = <S extends object>(label: string, service: S, calls: Calls<S>) =>
  Effect.forEach(Object.entries(calls) as Array<[string, ReadonlyArray<unknown>]>, ([name, args]) => {
    const fn = (service as any)[name] as (...args: ReadonlyArray<unknown>) => unknown
    expect(typeof fn, `${label}.${name}`).toBe("function")
    // Passed as a value to a combinator, exactly as a user would: no receiver.
    const called =
      args.length === 1
        ? Effect.flatMap(Effect.succeed(args[0]), (a) => lift(fn(a)))
        : Effect.suspend(() => lift(fn(...args)))
    return Effect.exit(called).pipe(
      Effect.map((exit) => {
        if (Exit.isFailure(exit) && Cause.hasDies(exit.cause)) {
          throw new Error(`${label}.${name} died unbound: ${Cause.pretty(exit.cause)}`)
        }
      })
    )
  })

const lift = (result: unknown): Effect.Effect<unknown, unknown> =>
  Effect.isEffect(result) ? (result as Effect.Effect<unknown, unknown>) : Effect.succeed(result)

describe("unbound service functions", () => {
  it.effect("adaptive throttle", () =>
    Effect.gen(function* () {
      const throttle = yield* AdaptiveThrottle.make()
      yield* callAllUnbound("throttle", throttle, {
        withThrottle: [Effect.succeed(1), "users"],
        probability: ["users"],
        probabilityUnsafe: ["users"],
        gate: ["users"],
        statsUnsafe: ["users"],
        keysUnsafe: [],
        k: ["CRITICAL"]
      })
    })
  )

  it.effect("concurrency limiter service and limiter", () =>
    Effect.gen(function* () {
      const service = yield* ConcurrencyLimiter.makeService()
      yield* callAllUnbound("limiters", service, {
        keys: [],
        gate: ["db"],
        getUnsafe: ["db"],
        get: ["db"],
        withLimiter: [Effect.succeed(1), "db"]
      })
      const limiter = yield* ConcurrencyLimiter.make()
      const context = yield* Effect.context<never>()
      yield* callAllUnbound("limiter", limiter, {
        inFlightOf: ["CRITICAL"],
        queuedOf: ["CRITICAL"],
        pipe: [],
        withLimiter: [Effect.succeed(1)],
        refuseUnsafe: ["SHEDDABLE"],
        // A deadline already passed: refused at once, nothing waits.
        enterBy: [
          {
            now: 0,
            criticality: "CRITICAL",
            clock: yield* Clock.Clock,
            context,
            getRef: <A>(ref: Context.Reference<A>) => Context.get(context, ref)
          },
          0
        ]
      })
      // Passed unbound, as `call.pipe(limiter.withLimiter)` does, it must not lose its `this`.
      expect(yield* Effect.succeed(1).pipe(limiter.withLimiter)).toBe(1)
      expect(yield* Effect.succeed(2).pipe(service.getUnsafe("db").withLimiter)).toBe(2)
    })
  )

  it.effect("load shedder", () =>
    Effect.gen(function* () {
      const shedder = yield* LoadShedder.make({ capacity: 10 })
      yield* callAllUnbound("shedder", shedder, {
        withShedder: [Effect.succeed(1)],
        utilizationUnsafe: [],
        levelUtilizationUnsafe: ["CRITICAL"],
        activeUnsafe: [],
        activeOfUnsafe: ["CRITICAL"],
        overQuotaOfUnsafe: ["CRITICAL"],
        eventLoopUtilizationUnsafe: [],
        wouldShedUnsafe: ["SHEDDABLE"],
        shedUnsafe: ["SHEDDABLE", 0]
      })
      expect(yield* Effect.succeed(1).pipe(shedder.withShedder)).toBe(1)
    })
  )

  it.effect("pacer", () =>
    Effect.gen(function* () {
      const pacer = yield* Pacer.make({ limit: () => 10 })
      yield* callAllUnbound("pacer", pacer, {
        withPacer: [Effect.succeed(1)],
        observeUnsafe: [5],
        releaseUnsafe: [1, 0],
        pipe: []
      })
      expect(yield* Effect.succeed(1).pipe(pacer.withPacer)).toBe(1)
    })
  )

  it.effect("proportional sampler and sensor", () =>
    Effect.gen(function* () {
      const store = QpsSensor.makeMemoryStore()
      yield* callAllUnbound("store", store, { incrementUnsafe: [1, 1], sumUnsafe: [0, 2] })
      const sensor = yield* QpsSensor.makeMemory({ store })
      yield* callAllUnbound("sensor", sensor, { recordUnsafe: [1000, 1] })
      const sampler = yield* ProportionalSampler.makeWith({ goal: 10 }, sensor)
      yield* callAllUnbound("sampler", sampler, {
        withSampler: [Effect.succeed(1), Effect.succeed(0)],
        setGoal: [20],
        sampleUnsafe: [1000],
        ratioUnsafe: [],
        pipe: []
      })
      const measured = yield* sensor.measure
      expect(Option.isOption(measured)).toBe(true)
    })
  )

  it.effect("threshold monitor", () =>
    Effect.gen(function* () {
      const monitor = yield* ThresholdMonitor.make({ thresholds: { rate: 5 } })
      yield* callAllUnbound("monitor", monitor, {
        record: ["save", "10 millis"],
        withMonitor: [Effect.succeed(1), "save"],
        exceeded: ["save"],
        stats: ["save"],
        setThresholds: [{ rate: 6 }],
        setInstances: [2],
        recordUnsafe: ["save", 0, 10],
        exceededUnsafe: ["save", 0],
        statsUnsafe: ["save", 0],
        pipe: []
      })
      // The reported crash: `Effect.flatMap(x, monitor.exceeded)`.
      expect(yield* Effect.flatMap(Effect.succeed("save"), monitor.exceeded)).toBe(false)
    })
  )

  it.effect("AIMD interval", () =>
    Effect.gen(function* () {
      const aimd = yield* AimdInterval.make({ min: "1 second", max: "10 seconds", step: "1 second" })
      yield* callAllUnbound("aimdInterval", aimd, {
        signal: [true],
        signalUnsafe: [false],
        intervalUnsafe: [],
        scheduleFrom: [(b: boolean) => b],
        pipe: []
      })
      expect(yield* Effect.forEach([true, false], aimd.signal)).toHaveLength(2)
    })
  )

  it.effect("limit algorithms", () =>
    Effect.gen(function* () {
      yield* callAllUnbound("aimd", yield* AimdLimit.make(), { onSample: [sample] })
      yield* callAllUnbound("congestionWindow", yield* CongestionWindow.make(), { onSample: [sample] })
      yield* callAllUnbound("vegas", yield* VegasLimit.make(), { onSample: [sample] })
      yield* callAllUnbound("tempo", yield* TempoLimit.make(), {
        onSample: [sample],
        onDeparture: [{ id: 0, inFlight: 1, now: 0 }],
        takeBurst: [],
        onTimer: [0]
      })
    })
  )
})

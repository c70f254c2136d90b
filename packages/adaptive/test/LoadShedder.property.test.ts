import { LoadShedder } from "@sluice/adaptive"
import { Criticality, Errors } from "@sluice/core"
import { describe, expect, it } from "@effect/vitest"
import { Clock, Deferred, Effect, Exit, Fiber } from "effect"
import { TestClock } from "effect/testing"
import * as fc from "fast-check"

type Level = Criticality.Criticality

const level = fc.constantFrom<Level>(...Criticality.levels)

const command = fc.oneof(
  // Work that arrives and stays in flight until a "finish".
  fc.record({
    _tag: fc.constant("arrive" as const),
    levels: fc.array(level, { minLength: 1, maxLength: 12 })
  }),
  fc.record({ _tag: fc.constant("advance" as const), millis: fc.integer({ min: 1, max: 5_000 }) }),
  fc.record({ _tag: fc.constant("finish" as const), count: fc.integer({ min: 0, max: 12 }) }),
  // Instant requests at several levels, in random order, at one instant.
  fc.record({ _tag: fc.constant("probe" as const), levels: fc.array(level, { minLength: 1, maxLength: 8 }) }),
  fc.record({ _tag: fc.constant("eventLoop" as const), value: fc.double({ min: 0, max: 1, noNaN: true }) })
)

// Four positive thresholds, sorted so they do not decrease with criticality.
const thresholds = fc
  .array(fc.double({ min: 0.05, max: 2, noNaN: true }), { minLength: 4, maxLength: 4 })
  .map((xs) => [...xs].sort((a, b) => a - b))
  .map(([a, b, c, d]) => ({ SHEDDABLE: a!, SHEDDABLE_PLUS: b!, CRITICAL: c!, CRITICAL_PLUS: d! }))

describe("LoadShedder (property)", () => {
  it("never sheds CRITICAL_PLUS while a lower level is being admitted", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 20 }),
        thresholds,
        fc.array(command, { minLength: 1, maxLength: 25 }),
        (capacity, t, commands) =>
          Effect.gen(function* () {
            let elu = 0
            const shedder = yield* LoadShedder.make({
              capacity,
              thresholds: t,
              smoothing: "1 second",
              eventLoop: { interval: "1 second", source: Effect.sync(() => elu) },
              // the utilization rule alone: the hard bound has tests of its own
              bound: false
            })
            const holders: Array<[Deferred.Deferred<void>, Fiber.Fiber<void, Errors.Overloaded>]> = []
            // Decisions taken at the current instant (utilization is constant within an instant).
            let instant: Array<[Level, boolean]> = []
            const check = () => {
              const criticalPlusShed = instant.some(([l, ok]) => l === "CRITICAL_PLUS" && !ok)
              const lowerAdmitted = instant.some(([l, ok]) => l !== "CRITICAL_PLUS" && ok)
              expect(criticalPlusShed && lowerAdmitted).toBe(false)
              // More generally: the admitted levels form an upper set.
              for (const [a, okA] of instant) {
                for (const [b, okB] of instant) {
                  if (okA && Criticality.isAtLeast(b, a)) expect(okB).toBe(true)
                }
              }
            }
            for (const c of commands) {
              switch (c._tag) {
                case "advance": {
                  yield* TestClock.adjust(c.millis)
                  instant = []
                  break
                }
                case "eventLoop": {
                  elu = c.value
                  break
                }
                case "finish": {
                  for (const [gate, fiber] of holders.splice(0, c.count)) {
                    yield* Deferred.succeed(gate, void 0)
                    yield* Fiber.await(fiber)
                  }
                  break
                }
                case "arrive": {
                  for (const l of c.levels) {
                    const gate = yield* Deferred.make<void>()
                    const before = shedder.activeUnsafe()
                    const fiber = yield* Effect.forkChild(
                      shedder.withShedder(Deferred.await(gate)).pipe(Criticality.withCriticality(l))
                    )
                    yield* Effect.yieldNow
                    const ok = shedder.activeUnsafe() === before + 1
                    if (!ok) {
                      const exit = yield* Fiber.await(fiber)
                      expect(Exit.isFailure(exit)).toBe(true)
                    } else {
                      holders.push([gate, fiber])
                    }
                    instant.push([l, ok])
                  }
                  break
                }
                case "probe": {
                  for (const l of c.levels) {
                    const exit = yield* Effect.exit(
                      shedder.withShedder(Effect.void).pipe(Criticality.withCriticality(l))
                    )
                    instant.push([l, Exit.isSuccess(exit)])
                  }
                  break
                }
              }
              check()
            }
            for (const [gate, fiber] of holders) {
              yield* Deferred.succeed(gate, void 0)
              yield* Fiber.await(fiber)
            }
            expect(shedder.activeUnsafe()).toBe(0)
          }).pipe(Effect.scoped, Effect.provide(TestClock.layer()), Effect.runPromise)
      ),
      { numRuns: 60 }
    )
  })

  it("strictly by criticality: a level is not shed while its own work and above stayed below its share, unless the loop is busy with it alone", async () => {
    const rank = (l: Level) => ["SHEDDABLE", "SHEDDABLE_PLUS", "CRITICAL", "CRITICAL_PLUS"].indexOf(l)
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 20 }),
        thresholds,
        fc.array(command, { minLength: 1, maxLength: 30 }),
        (capacity, t, commands) =>
          Effect.gen(function* () {
            let elu = 0
            const shedder = yield* LoadShedder.make({
              capacity,
              thresholds: t,
              smoothing: "1 second",
              eventLoop: { interval: "1 second", source: Effect.sync(() => elu) },
              // the utilization rule alone: the hard bound has tests of its own
              bound: false
            })
            const holders: Array<[Level, Deferred.Deferred<void>, Fiber.Fiber<void, Errors.Overloaded>]> = []
            // The most work of each level and above ever in flight: the smoothed work
            // (an average of the past) can never exceed it.
            const peak = [0, 0, 0, 0]
            // Arrival times per level: cover comes from arrivals of earlier instants only.
            const arrivals: Array<Array<number>> = [[], [], [], []]
            const inFlightAtLeast = (r: number) => holders.filter(([l]) => rank(l) >= r).length
            const notePeaks = () => {
              for (let r = 0; r < 4; r++) peak[r] = Math.max(peak[r]!, inFlightAtLeast(r))
            }
            const expectAdmissible = (l: Level, now: number, admitted: boolean) => {
              const r = rank(l)
              const belowShare = peak[r]! < t[l] * capacity
              const loopNotOnIt =
                shedder.eventLoopUtilizationUnsafe() < t[l] ||
                arrivals.slice(0, r).some((times) => times.some((at) => at < now && now - at <= 2000))
              if (belowShare && loopNotOnIt) expect(admitted).toBe(true)
            }
            for (const c of commands) {
              const now = yield* Clock.currentTimeMillis
              switch (c._tag) {
                case "advance": {
                  yield* TestClock.adjust(c.millis)
                  break
                }
                case "eventLoop": {
                  elu = c.value
                  break
                }
                case "finish": {
                  for (const [, gate, fiber] of holders.splice(0, c.count)) {
                    yield* Deferred.succeed(gate, void 0)
                    yield* Fiber.await(fiber)
                  }
                  break
                }
                case "arrive":
                case "probe": {
                  for (const l of c.levels) {
                    const gate = yield* Deferred.make<void>()
                    const before = shedder.activeUnsafe()
                    const fiber = yield* Effect.forkChild(
                      shedder
                        .withShedder(c._tag === "arrive" ? Deferred.await(gate) : Effect.void)
                        .pipe(Criticality.withCriticality(l))
                    )
                    yield* Effect.yieldNow
                    const exit = c._tag === "probe" ? yield* Fiber.await(fiber) : undefined
                    const admitted =
                      exit !== undefined ? Exit.isSuccess(exit) : shedder.activeUnsafe() === before + 1
                    expectAdmissible(l, now, admitted)
                    arrivals[rank(l)]!.push(now)
                    if (c._tag === "arrive" && admitted) holders.push([l, gate, fiber])
                    notePeaks()
                  }
                  break
                }
              }
            }
            for (const [, gate, fiber] of holders) {
              yield* Deferred.succeed(gate, void 0)
              yield* Fiber.await(fiber)
            }
            expect(shedder.activeUnsafe()).toBe(0)
          }).pipe(Effect.scoped, Effect.provide(TestClock.layer()), Effect.runPromise)
      ),
      { numRuns: 80 }
    )
  })
})

import { AdaptiveThrottle, ConcurrencyLimiter, LimitAlgorithm, LoadShedder } from "@sluice/adaptive"
import { Admission, CircuitBreaker, Criticality, Errors } from "@sluice/core"
import { RetryBudget } from "@sluice/retry"
import { describe, expect, it } from "@effect/vitest"
import { Cause, Deferred, Effect, Exit, FastCheck as fc, Fiber, Option, TestClock, TestContext } from "effect"

/** Wraps a gate and counts its open tickets; a ticket settled twice drives the count below zero. */
const counting = <T, E>(gate: Admission.Gate<T, E>) => {
  const counts = { open: 0, entered: 0, settled: 0, negative: false }
  const wrapped: Admission.Gate<T, E> = {
    tryEnter: (entry) => {
      const result = gate.tryEnter(entry)
      if (result !== Admission.Wait && (result as { readonly _tag?: unknown } | null)?._tag !== "Refused") {
        counts.open++
        counts.entered++
      }
      return result
    },
    enter: (entry) =>
      Effect.map(gate.enter(entry), (ticket) => {
        counts.open++
        counts.entered++
        return ticket
      }),
    settle: (ticket, outcome, cause) => {
      counts.open--
      counts.settled++
      if (counts.open < 0) counts.negative = true
      gate.settle(ticket, outcome, cause)
    },
    isDrop: gate.isDrop
  }
  return { gate: wrapped, counts }
}

describe("gates of every policy under one Admission.guard", () => {
  it.effect("a breaker outside a limiter that refuses locally is not opened by the refusals", () =>
    Effect.gen(function* () {
      const breaker = yield* CircuitBreaker.make({ name: "outside", consecutiveFailures: 1 })
      const limiter = yield* ConcurrencyLimiter.make({
        algorithm: () => LimitAlgorithm.fixed(1),
        maxQueue: 0
      })
      const guard = Admission.guard([breaker.gate, limiter.gate])
      const release = yield* Deferred.make<void>()
      const holder = yield* Effect.fork(guard(Deferred.await(release)))
      yield* Effect.yieldNow()
      expect(limiter.inFlight).toBe(1)
      for (let i = 0; i < 50; i++) {
        const exit = yield* Effect.exit(guard(Effect.succeed("never runs")))
        const error = Exit.isFailure(exit) ? Cause.failureOption(exit.cause) : Option.none()
        expect(Option.isSome(error) && error.value instanceof Errors.Overloaded && error.value.origin).toBe(
          "local"
        )
      }
      expect(yield* breaker.state).toBe("closed")
      // The caller giving up counts nothing either.
      yield* Fiber.interrupt(holder)
      expect(yield* breaker.state).toBe("closed")
      expect(limiter.inFlight).toBe(0)
      // A remote drop that got through the limiter does count.
      yield* Effect.exit(guard(Effect.fail(new Errors.Overloaded({ reason: "503" }))))
      expect(yield* breaker.state).toBe("open")
    })
  )

  it("property: throttle, breaker, shedder, limiter and budget settle every ticket exactly once", async () => {
    const step = fc.record({
      work: fc.constantFrom("ok", "drop", "fail", "die", "hold", "interrupt"),
      level: fc.constantFrom(...Criticality.levels),
      release: fc.nat({ max: 3 }),
      advance: fc.constantFrom(0, 1, 50, 1000)
    })
    await fc.assert(
      fc.asyncProperty(fc.array(step, { maxLength: 40 }), (script) =>
        Effect.gen(function* () {
          const throttle = yield* AdaptiveThrottle.make({ minRequestRate: 0 })
          const breaker = yield* CircuitBreaker.make({
            name: "property",
            consecutiveFailures: 2,
            openFor: "100 millis"
          })
          const shedder = yield* LoadShedder.make({ capacity: 2, smoothing: "10 millis" })
          const limiter = yield* ConcurrencyLimiter.make({
            algorithm: () => LimitAlgorithm.fixed(2),
            maxQueue: 1,
            maxWait: "20 millis"
          })
          const budget = RetryBudget.unsafeMake().forKey("property")
          const gates = [
            counting(throttle.gate("backend")),
            counting(breaker.gate),
            counting(shedder.gate),
            counting(limiter.gate),
            counting(budget.gate)
          ]
          const guard = Admission.guard(gates.map((g) => g.gate))
          const held: Array<[Deferred.Deferred<void>, Fiber.RuntimeFiber<unknown, unknown>]> = []
          for (const s of script) {
            const release = yield* Deferred.make<void>()
            const work =
              s.work === "ok"
                ? Effect.void
                : s.work === "drop"
                  ? Effect.fail(new Errors.Overloaded({ reason: "503" }))
                  : s.work === "fail"
                    ? Effect.fail(new Error("app"))
                    : s.work === "die"
                      ? Effect.die("bug")
                      : Deferred.await(release)
            const fiber = yield* Effect.fork(guard(work).pipe(Criticality.withCriticality(s.level)))
            yield* Effect.yieldNow()
            if (s.work === "interrupt") yield* Fiber.interrupt(fiber)
            else if (s.work === "hold") held.push([release, fiber])
            for (const [gate] of held.splice(0, s.release)) yield* Deferred.succeed(gate, void 0)
            if (s.advance > 0) yield* TestClock.adjust(s.advance)
            for (const g of gates) expect(g.counts.negative).toBe(false)
          }
          for (const [gate] of held) yield* Deferred.succeed(gate, void 0)
          yield* TestClock.adjust(1000)
          for (const [, fiber] of held) yield* Fiber.await(fiber)
          for (const g of gates) {
            expect(g.counts.negative).toBe(false)
            expect(g.counts.open).toBe(0)
            expect(g.counts.settled).toBe(g.counts.entered)
          }
          expect(limiter.inFlight).toBe(0)
          expect(limiter.queued).toBe(0)
          expect(shedder.unsafeActive()).toBe(0)
        }).pipe(Effect.scoped, Effect.provide(TestContext.TestContext), Effect.runPromise)
      ),
      { numRuns: 40 }
    )
  })
})

import { AimdLimit, ConcurrencyLimiter, CongestionWindow, LimitAlgorithm, VegasLimit } from "@sluice/adaptive"
import { Criticality, Errors } from "@sluice/core"
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Duration, Effect, Fiber } from "effect"
import { TestClock } from "effect/testing"
import * as fc from "fast-check"

type Kind = "success" | "drop" | "error"
type Op =
  | { readonly _tag: "arrive"; readonly level: number }
  | { readonly _tag: "complete"; readonly index: number; readonly kind: Kind }
  | { readonly _tag: "interrupt"; readonly index: number }
  | { readonly _tag: "advance"; readonly millis: number }
  // completes one request and interrupts another a few scheduler turns later: hits the
  // window where a waiter was granted a permit but has not resumed yet
  | { readonly _tag: "race"; readonly index: number; readonly victim: number; readonly yields: number }

const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({ _tag: fc.constant("arrive" as const), level: fc.integer({ min: 0, max: 3 }) })
  },
  {
    weight: 4,
    arbitrary: fc.record({
      _tag: fc.constant("complete" as const),
      index: fc.nat(),
      kind: fc.constantFrom<Kind>("success", "success", "drop", "error")
    })
  },
  { weight: 1, arbitrary: fc.record({ _tag: fc.constant("interrupt" as const), index: fc.nat() }) },
  {
    weight: 1,
    arbitrary: fc.record({ _tag: fc.constant("advance" as const), millis: fc.integer({ min: 1, max: 80 }) })
  }
)

const settle = Effect.repeat(Effect.yieldNow, { times: 10 })

interface Setup {
  readonly algorithm: LimitAlgorithm.LimitAlgorithm
  readonly fixedLimit: number | undefined
  readonly order: "fifo" | "lifo"
  readonly maxQueue: number
  readonly partitions: boolean
}

const scenario = (setup: Setup, ops: ReadonlyArray<Op>) =>
  Effect.gen(function* () {
    const inner = setup.algorithm
    let samples = 0
    let peak = inner.limit
    const algorithm: LimitAlgorithm.LimitAlgorithm = {
      name: "checked",
      get limit() {
        return inner.limit
      },
      onSample: (sample) => {
        samples++
        const limit = inner.onSample(sample)
        peak = Math.max(peak, limit)
        return limit
      }
    }
    const limiter = yield* ConcurrencyLimiter.make({
      algorithm: () => algorithm,
      order: setup.order,
      maxQueue: setup.maxQueue,
      maxWait: "100 millis",
      ...(setup.partitions ? { partitions: { CRITICAL_PLUS: 0.25, SHEDDABLE: 0.25 } } : {})
    })
    const tasks: Array<{
      readonly gate: Deferred.Deferred<Kind>
      readonly fiber: Fiber.Fiber<void, Errors.Overloaded | string>
    }> = []
    let started = 0
    const check = () => {
      const bound = setup.fixedLimit ?? Math.ceil(peak)
      expect(limiter.inFlight).toBeGreaterThanOrEqual(0)
      expect(limiter.inFlight).toBeLessThanOrEqual(bound)
      expect(limiter.queued).toBeLessThanOrEqual(setup.maxQueue)
      const byLevel = Criticality.levels.reduce((n, level) => n + limiter.inFlightOf(level), 0)
      expect(byLevel).toBe(limiter.inFlight)
      const queuedByLevel = Criticality.levels.reduce((n, level) => n + limiter.queuedOf(level), 0)
      expect(queuedByLevel).toBe(limiter.queued)
    }
    for (const op of ops) {
      switch (op._tag) {
        case "arrive": {
          const gate = yield* Deferred.make<Kind>()
          const body = Effect.suspend((): Effect.Effect<void, Errors.Overloaded | string> => {
            started++
            // a body only starts while the limit allows it
            expect(limiter.inFlight).toBeLessThanOrEqual(setup.fixedLimit ?? Math.ceil(peak))
            return Effect.flatMap(
              Deferred.await(gate),
              (kind): Effect.Effect<void, Errors.Overloaded | string> =>
                kind === "success"
                  ? Effect.void
                  : kind === "drop"
                    ? Effect.fail(new Errors.Overloaded({ reason: "503" }))
                    : Effect.fail("boom")
            )
          })
          const fiber = yield* Effect.forkChild(
            limiter.withLimiter(body).pipe(Criticality.withCriticality(Criticality.levels[op.level]!))
          )
          tasks.push({ gate, fiber })
          break
        }
        case "complete": {
          if (tasks.length > 0) yield* Deferred.succeed(tasks[op.index % tasks.length]!.gate, op.kind)
          break
        }
        case "interrupt": {
          if (tasks.length > 0) yield* Fiber.interrupt(tasks[op.index % tasks.length]!.fiber)
          break
        }
        case "race": {
          if (tasks.length > 0) {
            yield* Deferred.succeed(tasks[op.index % tasks.length]!.gate, "success")
            for (let i = 0; i < op.yields; i++) yield* Effect.yieldNow
            yield* Effect.forkDetach(Fiber.interrupt(tasks[op.victim % tasks.length]!.fiber))
          }
          break
        }
        case "advance": {
          yield* TestClock.adjust(Duration.millis(op.millis))
          break
        }
      }
      yield* settle
      check()
    }
    // let every remaining request finish
    for (const task of tasks) yield* Deferred.succeed(task.gate, "success")
    yield* Effect.forEach(tasks, (task) => Fiber.await(task.fiber), { discard: true })
    check()
    expect(limiter.inFlight).toBe(0)
    expect(limiter.queued).toBe(0)
    // every body that started reported exactly once; a permit is never reported twice
    expect(samples).toBeGreaterThanOrEqual(started)
    expect(samples).toBeLessThanOrEqual(limiter.nextId)
  }).pipe(Effect.provide(TestClock.layer()))

const setupArb = (
  algorithm: fc.Arbitrary<readonly [() => LimitAlgorithm.LimitAlgorithm, number | undefined]>
) =>
  fc.record({
    algorithm,
    order: fc.constantFrom<"fifo" | "lifo">("fifo", "lifo"),
    maxQueue: fc.integer({ min: 0, max: 6 }),
    partitions: fc.boolean()
  })

const run = (
  algorithm: fc.Arbitrary<readonly [() => LimitAlgorithm.LimitAlgorithm, number | undefined]>,
  numRuns: number
) =>
  fc.assert(
    fc.asyncProperty(setupArb(algorithm), fc.array(opArb, { minLength: 1, maxLength: 60 }), (s, ops) => {
      const [make, fixedLimit] = s.algorithm
      return Effect.runPromise(
        scenario(
          { algorithm: make(), fixedLimit, order: s.order, maxQueue: s.maxQueue, partitions: s.partitions },
          ops
        )
      )
    }),
    { numRuns }
  )

describe("ConcurrencyLimiter properties", () => {
  it("fixed limit: in-flight never exceeds the limit, returns to 0, no permit leaks", () =>
    run(
      fc.integer({ min: 1, max: 4 }).map((n) => [() => LimitAlgorithm.fixed(n), n] as const),
      150
    ))

  it("adaptive limits: in-flight bounded by the peak limit, returns to 0, no permit leaks", () =>
    run(
      fc.oneof(
        fc
          .integer({ min: 1, max: 4 })
          .map(
            (n) => [() => CongestionWindow.makeUnsafe({ initial: n, variant: "tahoe" }), undefined] as const
          ),
        fc
          .integer({ min: 1, max: 4 })
          .map((n) => [() => CongestionWindow.makeUnsafe({ initial: n, ssthresh: 3 }), undefined] as const),
        fc
          .integer({ min: 2, max: 4 })
          .map((n) => [() => AimdLimit.makeUnsafe({ initial: n, backoffRatio: 0.5 }), undefined] as const),
        fc
          .integer({ min: 1, max: 4 })
          .map((n) => [() => VegasLimit.makeUnsafe({ initial: n, probeMultiplier: 1 }), undefined] as const)
      ),
      150
    ))
})

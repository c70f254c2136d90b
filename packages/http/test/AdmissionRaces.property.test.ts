// The bound holds under races (Netflix concurrency-limits #234: a partitioned limiter went past
// its limit across the gap between its check and its acquire). fast-check's scheduler orders
// arrivals, interruptions and settlements at random; the work running at once never exceeds the
// limit, for the server's gates and the client's limiter, and nothing is held afterwards.
import { Criticality } from "@sluice/core"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Fiber, Scope } from "effect"
import fc from "fast-check"
import { type Setup, suts } from "./admissionSuts.js"

interface Task {
  readonly criticality: Criticality.Criticality
  /** Interrupted at a moment the scheduler picks (or never). */
  readonly interrupt: boolean
  /** Fails instead of succeeding when it settles. */
  readonly fails: boolean
}

const taskArb: fc.Arbitrary<Task> = fc.record({
  criticality: fc.constantFrom<Criticality.Criticality>(...Criticality.levels),
  interrupt: fc.boolean(),
  fails: fc.boolean()
})

const setupArb: fc.Arbitrary<Setup> = fc.record({
  capacity: fc.integer({ min: 1, max: 4 }),
  maxQueue: fc.integer({ min: 0, max: 4 }),
  partitions: fc.boolean()
})

/** One macrotask: lets the fibers the last step woke run until they block again. */
const macrotask = () => new Promise<void>((resolve) => setTimeout(resolve, 0))

// The gates that bound admitted work (the shedder alone sheds by a smoothed load, not a bound).
const bounded = ["ConcurrencyLimiter", "Middleware.loadShed", "SluiceHttpClient"] as const

describe("admitted work never exceeds the bound under random interleavings", () => {
  for (const name of bounded) {
    it(name, async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.scheduler(),
          setupArb,
          fc.array(taskArb, { minLength: 1, maxLength: 12 }),
          async (s, setup, tasks) => {
            const scope = Effect.runSync(Scope.make())
            const sut = await Effect.runPromise(Scope.provide(suts[name]!(setup), scope))
            let running = 0
            let peak = 0
            const fibers: Array<Fiber.Fiber<unknown, unknown>> = []
            tasks.forEach((task, i) => {
              // Settling waits for the scheduler: any other task's step may come first.
              // Counted from the work's start to its end on the fiber (an interrupted work
              // ends then, before its pass gives the permit back).
              const work = Effect.suspend(() => {
                running++
                peak = Math.max(peak, running)
                return Effect.promise(() => s.schedule(Promise.resolve(), `settle ${i}`))
              }).pipe(
                Effect.andThen(task.fails ? Effect.die("boom") : Effect.void),
                Effect.ensuring(Effect.sync(() => running--))
              )
              void s.schedule(Promise.resolve(), `arrive ${i}`).then(() => {
                const fiber = Effect.runFork(Criticality.withCriticality(sut.request(work), task.criticality))
                fibers.push(fiber)
                if (task.interrupt) {
                  void s.schedule(Promise.resolve(), `interrupt ${i}`).then(() => fiber.interruptUnsafe())
                }
              })
            })
            // Run every step, in the scheduler's order, letting the fibers move between steps.
            for (let guard = 0; guard < 1000; guard++) {
              await macrotask()
              if (s.count() === 0) break
              await s.waitOne()
            }
            await macrotask()
            expect(s.count()).toBe(0)
            for (const fiber of fibers) await Effect.runPromise(Fiber.await(fiber))
            expect(peak).toBeLessThanOrEqual(setup.capacity)
            expect(sut.inFlight()).toBe(0)
            expect(sut.queued()).toBe(0)
            const next = await Effect.runPromise(Effect.exit(sut.request(Effect.void)))
            expect(Exit.isSuccess(next)).toBe(true)
            await Effect.runPromise(Scope.close(scope, Exit.void))
          }
        ),
        { numRuns: Number(process.env.RUNS ?? 100) }
      )
    })
  }
})

// Interrupting a request at every point of the life of its pass through the server's gates
// (LoadShedder, ConcurrencyLimiter, both in Middleware.loadShed) and the client's limiter
// (SluiceHttpClient's): arrival (interruption pending as the caller reaches the gate), queued,
// granted (between the grant and the waiter's resumption), running, settling (the work has
// finished, the pass is settling). Afterwards nothing is held or queued and the next request
// passes.
import { Criticality } from "@sluice/core"
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber } from "effect"
import type { Scope } from "effect"
import { TestClock } from "effect/testing"
import fc from "fast-check"
import { type Setup, type Sut, suts } from "./admissionSuts.js"

type Phase = "arrival" | "queued" | "granted" | "running" | "settling"

interface Case {
  readonly setup: Setup
  readonly phase: Phase
  /** Scheduler turns between the event that starts the phase and the interruption. */
  readonly turns: number
  /** The caller runs uninterruptibly, as Effect's HTTP server runs middleware. */
  readonly uninterruptibleCaller: boolean
  readonly criticality: Criticality.Criticality
  /** Waiters queued beside the victim. */
  readonly others: number
}

const caseArb: fc.Arbitrary<Case> = fc.record({
  setup: fc.record({ capacity: fc.integer({ min: 1, max: 3 }), maxQueue: fc.integer({ min: 1, max: 4 }) }),
  phase: fc.constantFrom<Phase>("arrival", "queued", "granted", "running", "settling"),
  turns: fc.integer({ min: 0, max: 8 }),
  uninterruptibleCaller: fc.boolean(),
  criticality: fc.constantFrom<Criticality.Criticality>(...Criticality.levels),
  others: fc.integer({ min: 0, max: 2 })
})

const turns = (n: number) => Effect.repeat(Effect.yieldNow, { times: n })
const settle = turns(20)

const scenario = (make: (setup: Setup) => Effect.Effect<Sut, unknown, Scope.Scope>, c: Case) =>
  Effect.gen(function* () {
    const sut = yield* make(c.setup)
    const fibers: Array<Fiber.Fiber<unknown, unknown>> = []
    const releases: Array<Deferred.Deferred<void>> = []
    const hold = (criticality: Criticality.Criticality) =>
      Effect.gen(function* () {
        const release = yield* Deferred.make<void>()
        releases.push(release)
        const fiber = yield* Effect.forkChild(
          Criticality.withCriticality(sut.request(Deferred.await(release)), criticality)
        )
        fibers.push(fiber)
        return release
      })
    // The phases that wait need the capacity taken first.
    const contended = c.phase === "queued" || c.phase === "granted" || c.phase === "arrival"
    const holders: Array<Deferred.Deferred<void>> = []
    if (contended) for (let i = 0; i < c.setup.capacity; i++) holders.push(yield* hold("CRITICAL_PLUS"))
    yield* settle
    for (let i = 0; i < c.others; i++) yield* hold("SHEDDABLE")
    yield* settle

    const victimWork = yield* Deferred.make<void>()
    releases.push(victimWork)
    let victimRan = false
    const asCaller = <A, E>(self: Effect.Effect<A, E>) =>
      c.uninterruptibleCaller ? Effect.uninterruptible(self) : self
    const victimRequest = Criticality.withCriticality(
      sut.request(
        Effect.suspend(() => {
          victimRan = true
          return Deferred.await(victimWork)
        })
      ),
      c.criticality
    )
    const victim = yield* Effect.forkChild(
      c.phase === "arrival"
        ? Effect.uninterruptible(Effect.andThen(Effect.sleep("10 millis"), victimRequest))
        : asCaller(victimRequest)
    )
    fibers.push(victim)
    if (c.phase === "arrival") {
      yield* settle
      // Forked and not awaited: a gate that admits at once runs the work, which ends later.
      yield* Effect.forkChild(Fiber.interrupt(victim))
      yield* TestClock.adjust("10 millis")
    } else {
      yield* settle
      if (c.phase === "granted") yield* Deferred.succeed(holders[0]!, undefined)
      if (c.phase === "settling") yield* Deferred.succeed(victimWork, undefined)
      yield* turns(c.turns)
      // Forked: an uninterruptible caller ends only once its work does.
      yield* Effect.forkChild(Fiber.interrupt(victim))
    }
    yield* settle

    // Everyone leaves: nothing is held or queued any more.
    for (const release of releases) yield* Deferred.succeed(release, undefined)
    yield* TestClock.adjust("2 seconds")
    for (const fiber of fibers) yield* Fiber.await(fiber)
    yield* settle
    expect(sut.inFlight()).toBe(0)
    expect(sut.queued()).toBe(0)
    // A caller interrupted before or while it waits never gets to run its work.
    if (sut.waits && (c.phase === "arrival" || c.phase === "queued")) expect(victimRan).toBe(false)
    // And the next request passes.
    const nextExit = yield* Effect.exit(Criticality.withCriticality(sut.request(Effect.void), "CRITICAL"))
    expect(Exit.isSuccess(nextExit)).toBe(true)
    expect(sut.inFlight()).toBe(0)
  }).pipe(Effect.scoped, Effect.provide(TestClock.layer()))

describe("interrupting a pass at every point of its life leaks nothing", () => {
  for (const [name, make] of Object.entries(suts)) {
    it(name, async () => {
      await fc.assert(
        fc.asyncProperty(caseArb, (c) => Effect.runPromise(scenario(make, c))),
        { numRuns: Number(process.env.RUNS ?? 60), timeout: 3000 }
      )
    })
  }
})

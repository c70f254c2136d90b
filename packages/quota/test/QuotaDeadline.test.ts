import { Quota, QuotaConfig, QuotaStore } from "@sluice/quota"
import { describe, expect, it } from "@effect/vitest"
import { Clock, Duration, Effect, Fiber, Layer } from "effect"
import { TestClock } from "effect/testing"

const plan: QuotaConfig.PlanInput = {
  tiers: [{ name: "rate", algorithm: "gcra", limit: 1000, period: "1 second", burst: 1000 }]
}

type Pending = {
  readonly client: string
  readonly answer: () => void
}

/**
 * A remote store that answers only when the test says so (decided by a memory store), like Redis
 * working through a backlog. `ordered`: its answers come in call order on one connection.
 */
const slowStore = (ordered: boolean) =>
  Effect.gen(function* () {
    const memory = yield* QuotaStore.makeMemory()
    const pending: Array<Pending> = []
    const store: QuotaStore.Store = {
      name: "slow",
      remote: true,
      ordered,
      check: () => Effect.never,
      checkCallback: (client, compiled, cost, callback) => {
        pending.push({
          client,
          answer: () => callback(undefined, memory.checkUnsafe(client, compiled, cost))
        })
      },
      adjust: () => Effect.void,
      block: () => Effect.void,
      reset: () => Effect.void
    }
    /** answers the oldest pending call of `client`, once it has been sent */
    const answer = (client: string): Effect.Effect<void> =>
      Effect.suspend(() => {
        const i = pending.findIndex((p) => p.client === client)
        if (i < 0) return Effect.andThen(Effect.yieldNow, answer(client))
        pending.splice(i, 1)[0]!.answer()
        return Effect.void
      })
    return { store, answer }
  })

const withQuota = <A, E>(
  ordered: boolean,
  options: Quota.QuotaOptions,
  body: (quota: Quota.Service, answer: (client: string) => Effect.Effect<void>) => Effect.Effect<A, E>,
  clock?: Clock.Clock
) =>
  Effect.gen(function* () {
    const { answer, store } = yield* slowStore(ordered)
    const built = Quota.layer({ mode: "fail-closed", ...options }).pipe(
      Layer.provide(Layer.succeed(QuotaStore.QuotaStore, store)),
      Layer.provide(QuotaConfig.layer({ default: plan }))
    )
    // the service reads `clock` (the test drives the TestClock through its own service)
    const layer =
      clock === undefined
        ? built
        : Layer.effectContext(Effect.provideService(Layer.build(built), Clock.Clock, clock))
    return yield* Effect.flatMap(Quota.Quota, (quota) => body(quota, answer)).pipe(Effect.provide(layer))
  })

const at = (ms: number) => TestClock.setTime(ms)

/**
 * The TestClock, read `stall(ms)` later than it is: a process that did not run for that long sees
 * its timers fire late by as much.
 */
const stallingClock = Clock.clockWith((test) => {
  let offsetMs = 0
  const offsetNanos = () => BigInt(Math.round(offsetMs * 1e6))
  const clock: Clock.Clock = {
    currentTimeMillisUnsafe: () => test.currentTimeMillisUnsafe() + offsetMs,
    currentTimeNanosUnsafe: () => test.currentTimeNanosUnsafe() + offsetNanos(),
    monotonicTimeNanosUnsafe: () => test.monotonicTimeNanosUnsafe() + offsetNanos(),
    currentTimeMillis: Effect.sync(() => test.currentTimeMillisUnsafe() + offsetMs),
    currentTimeNanos: Effect.sync(() => test.currentTimeNanosUnsafe() + offsetNanos()),
    monotonicTimeNanos: Effect.sync(() => test.monotonicTimeNanosUnsafe() + offsetNanos()),
    sleep: (duration) => test.sleep(duration)
  }
  return Effect.succeed({
    clock,
    stall: (ms: number) => {
      offsetMs += ms
    }
  })
})

/** The learned deadline, opted in: a 50 ms silence, up to 1 second while the store keeps answering. */
const learned: Quota.QuotaOptions = { deadline: "50 millis", maxDeadline: "1 second" }

/**
 * Whether the fiber has ended once the event loop has had a few turns at the current TestClock
 * time (the deadline queue gives the loop one real I/O turn, a `setImmediate`, before it expires
 * anything).
 */
const endedNow = <A, E>(fiber: Fiber.Fiber<A, E>) =>
  Effect.gen(function* () {
    for (let i = 0; i < 5 && fiber.pollUnsafe() === undefined; i++)
      yield* Effect.promise(() => new Promise((resolve) => setImmediate(resolve)))
    return fiber.pollUnsafe() !== undefined
  })

/** Checks "a" and "b" sent at 0, the store answers "a" at 40: returns the fiber of "b". */
const answerFirstAt40 = (quota: Quota.Service, answer: (client: string) => Effect.Effect<void>) =>
  Effect.gen(function* () {
    const a = yield* Effect.forkChild(quota.check("a"))
    const b = yield* Effect.forkChild(quota.check("b"))
    yield* at(40)
    yield* answer("a")
    expect((yield* Fiber.join(a)).source).toBe("store")
    return b
  })

/** A check of `client` sent at `sentAt` is still waiting at `failsAt` - 0.1 and failed closed at `failsAt`. */
const failsAt = (quota: Quota.Service, client: string, sentAt: number, failsAt: number) =>
  Effect.gen(function* () {
    yield* at(sentAt)
    const fiber = yield* Effect.forkChild(quota.check(client))
    yield* at(failsAt - 0.1)
    expect(fiber.pollUnsafe()).toBeUndefined()
    yield* at(failsAt)
    expect((yield* Fiber.join(fiber)).source).toBe("fail-closed")
  })

describe("Quota deadlines (TestClock)", () => {
  it.effect("defaults: a 15 ms deadline, and maxDeadline equal to the deadline unless set above it", () =>
    Effect.gen(function* () {
      yield* withQuota(true, {}, (quota) =>
        Effect.sync(() => {
          expect(quota.deadline).toEqual(Duration.millis(15))
          expect(quota.maxDeadline).toEqual(Duration.millis(15))
        })
      )
      yield* withQuota(true, { deadline: "50 millis" }, (quota) =>
        Effect.sync(() => expect(quota.maxDeadline).toEqual(Duration.millis(50)))
      )
      yield* withQuota(true, learned, (quota) =>
        Effect.sync(() => expect(quota.maxDeadline).toEqual(Duration.seconds(1)))
      )
      // never below the deadline
      yield* withQuota(true, { deadline: "2 seconds", maxDeadline: "1 second" }, (quota) =>
        Effect.sync(() => expect(quota.maxDeadline).toEqual(Duration.seconds(2)))
      )
    })
  )

  it.effect(
    "defaults, a hard bound: an ordered store that keeps answering other checks still fails a silent one at its deadline",
    () =>
      withQuota(true, {}, (quota, answer) =>
        Effect.gen(function* () {
          const stuck = yield* Effect.forkChild(quota.check("stuck"))
          for (let t = 1; t < 10; t += 1) {
            yield* at(t)
            const other = yield* Effect.forkChild(quota.check(`other${t}`))
            yield* answer(`other${t}`)
            expect((yield* Fiber.join(other)).source).toBe("store")
          }
          // 15 ms, fired 5 ms early like every deadline: the answers to the others extend nothing
          yield* at(9.9)
          expect(stuck.pollUnsafe()).toBeUndefined()
          yield* at(10)
          expect(yield* endedNow(stuck)).toBe(true)
          expect((yield* Fiber.join(stuck)).source).toBe("fail-closed")
          // and a silence the store came back from (9 ms: 18 ms would be allowed if it learnt) teaches nothing
          const slow = yield* Effect.forkChild(quota.check("slow"))
          yield* at(19)
          yield* answer("slow")
          expect((yield* Fiber.join(slow)).source).toBe("store")
          yield* failsAt(quota, "after", 30, 40)
        })
      )
  )

  it.effect("defaults, a hard bound: a stall of the process gives a check no grace beyond its deadline", () =>
    Effect.gen(function* () {
      const { clock, stall } = yield* stallingClock
      yield* withQuota(
        true,
        {},
        (quota) =>
          Effect.gen(function* () {
            const a = yield* Effect.forkChild(quota.check("a"))
            // the deadline timer is armed (due at 10, 5 ms early); then the process does not run
            // for 20 ms: the timer fires at 10 on the TestClock, 30 on the Clock the quota reads
            yield* at(1)
            stall(20)
            yield* at(10)
            // decided as soon as the process runs again, not "as long again" after the stall
            expect(yield* endedNow(a)).toBe(true)
            expect((yield* Fiber.join(a)).source).toBe("fail-closed")
            // and a check sent just after the stall (at 31) has its plain deadline (41)
            yield* failsAt(quota, "b", 11, 21)
          }),
        clock
      )
    })
  )

  it.effect(
    "the learned deadline, opted in: after a long stall no check in flight expires for as long again",
    () =>
      Effect.gen(function* () {
        const { clock, stall } = yield* stallingClock
        yield* withQuota(
          true,
          { deadline: "15 millis", maxDeadline: "1 second" },
          (quota) =>
            Effect.gen(function* () {
              const a = yield* Effect.forkChild(quota.check("a"))
              yield* at(1)
              stall(20)
              yield* at(10)
              // a stall of 20 ms (seen at 30): the grace lasts until 50 (25 on the TestClock), 5 ms early
              expect(yield* endedNow(a)).toBe(false)
              yield* at(24.9)
              expect(a.pollUnsafe()).toBeUndefined()
              yield* at(25)
              expect((yield* Fiber.join(a)).source).toBe("fail-closed")
            }),
          clock
        )
      })
  )

  it.effect(
    "an ordered store that keeps answering: a check waits past its deadline until the store falls silent",
    () =>
      withQuota(true, learned, (quota, answer) =>
        Effect.gen(function* () {
          const b = yield* answerFirstAt40(quota, answer)
          // b is past its own deadline (50, fired 5 ms early), but the store answered at 40:
          // silent for 44 ms only
          yield* at(84)
          expect(b.pollUnsafe()).toBeUndefined()
          yield* answer("b")
          expect((yield* Fiber.join(b)).source).toBe("store")
          // a check sent while the store then stays silent fails once the store has been silent
          // for twice the longest silence it came back from (b's, 44 ms: 88 ms), 5 ms early
          yield* failsAt(quota, "c", 84, 84 + 83)
        })
      )
  )

  it.effect("the store silent after its last answer: every check in flight fails a deadline after it", () =>
    withQuota(true, learned, (quota, answer) =>
      Effect.gen(function* () {
        const fibers = []
        for (let t = 0; t <= 30; t += 10) {
          yield* at(t)
          fibers.push(yield* Effect.forkChild(quota.check(`k${t}`)))
        }
        yield* at(35)
        yield* answer("k0")
        expect((yield* Fiber.join(fibers[0]!)).source).toBe("store")
        // silent from 35 (k0's answer ended a 35 ms silence: 70 ms are allowed now): k10, k20, k30
        // (deadlines 60, 70, 80) all fail at 35 + 70 - 5
        yield* at(99.9)
        for (const f of fibers.slice(1)) expect(f.pollUnsafe()).toBeUndefined()
        yield* at(100)
        for (const f of fibers.slice(1)) expect((yield* Fiber.join(f)).source).toBe("fail-closed")
      })
    )
  )

  it.effect("maxDeadline bounds the wait however long the store keeps answering others", () =>
    withQuota(true, { deadline: "50 millis", maxDeadline: "120 millis" }, (quota, answer) =>
      Effect.gen(function* () {
        const stuck = yield* Effect.forkChild(quota.check("stuck"))
        for (let t = 10; t < 116; t += 10) {
          yield* at(t)
          const other = yield* Effect.forkChild(quota.check(`other${t}`))
          yield* answer(`other${t}`)
          expect((yield* Fiber.join(other)).source).toBe("store")
          expect(stuck.pollUnsafe()).toBeUndefined()
        }
        // 5 ms early, as every deadline
        yield* at(114.9)
        expect(stuck.pollUnsafe()).toBeUndefined()
        yield* at(115)
        expect((yield* Fiber.join(stuck)).source).toBe("fail-closed")
        expect(quota.maxDeadline).toEqual(Duration.millis(120))
      })
    )
  )

  it.effect(
    "a store whose answers are not ordered (a cluster): answers to others do not extend a deadline, even opted in",
    () =>
      withQuota(false, learned, (quota, answer) =>
        Effect.gen(function* () {
          const b = yield* answerFirstAt40(quota, answer)
          yield* at(44.9)
          expect(b.pollUnsafe()).toBeUndefined()
          yield* at(45)
          expect((yield* Fiber.join(b)).source).toBe("fail-closed")
        })
      )
  )

  it.effect(
    "a silence the store came back from is allowed twice over for a while; a late answer teaches nothing",
    () =>
      withQuota(true, learned, (quota, answer) =>
        Effect.gen(function* () {
          const a = yield* Effect.forkChild(quota.check("a"))
          yield* at(40)
          yield* answer("a")
          expect((yield* Fiber.join(a)).source).toBe("store")
          // the store came back after 40 ms: a later check may wait 80 ms of silence (less 5 ms)
          yield* failsAt(quota, "b", 100, 175)
          // b's answer comes late: it teaches nothing (the allowed silence stays 80 ms, not 200)
          yield* at(300)
          yield* answer("b")
          yield* failsAt(quota, "c", 300, 375)
          // two windows of 5 seconds later the lesson is forgotten: the deadline again
          yield* at(11_000)
          yield* answer("c")
          yield* failsAt(quota, "d", 11_000, 11_045)
        })
      )
  )
})

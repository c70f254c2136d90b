import { Quota, QuotaConfig, QuotaStore } from "@sluice/core"
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Fiber, Layer, TestClock } from "effect"

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
          answer: () => callback(undefined, memory.unsafeCheck(client, compiled, cost))
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
        if (i < 0) return Effect.zipRight(Effect.yieldNow(), answer(client))
        pending.splice(i, 1)[0]!.answer()
        return Effect.void
      })
    return { store, answer }
  })

const withQuota = <A, E>(
  ordered: boolean,
  options: Quota.QuotaOptions,
  body: (quota: Quota.Service, answer: (client: string) => Effect.Effect<void>) => Effect.Effect<A, E>
) =>
  Effect.gen(function* () {
    const { answer, store } = yield* slowStore(ordered)
    const layer = Quota.layer({ mode: "fail-closed", ...options }).pipe(
      Layer.provide(Layer.succeed(QuotaStore.QuotaStore, store)),
      Layer.provide(QuotaConfig.layer({ default: plan }))
    )
    return yield* Effect.flatMap(Quota.Quota, (quota) => body(quota, answer)).pipe(Effect.provide(layer))
  })

const at = (ms: number) => TestClock.setTime(ms)

/** Checks "a" and "b" sent at 0, the store answers "a" at 40: returns the fiber of "b". */
const answerFirstAt40 = (quota: Quota.Service, answer: (client: string) => Effect.Effect<void>) =>
  Effect.gen(function* () {
    const a = yield* Effect.fork(quota.check("a"))
    const b = yield* Effect.fork(quota.check("b"))
    yield* at(40)
    yield* answer("a")
    expect((yield* Fiber.join(a)).source).toBe("store")
    return b
  })

/** A check of `client` sent at `sentAt` is still waiting at `failsAt` - 0.1 and failed closed at `failsAt`. */
const failsAt = (quota: Quota.Service, client: string, sentAt: number, failsAt: number) =>
  Effect.gen(function* () {
    yield* at(sentAt)
    const fiber = yield* Effect.fork(quota.check(client))
    yield* at(failsAt - 0.1)
    expect(fiber.unsafePoll()).toBeNull()
    yield* at(failsAt)
    expect((yield* Fiber.join(fiber)).source).toBe("fail-closed")
  })

describe("Quota deadlines (TestClock)", () => {
  it.effect(
    "an ordered store that keeps answering: a check waits past its deadline until the store falls silent",
    () =>
      withQuota(true, { deadline: "50 millis", maxDeadline: "1 second" }, (quota, answer) =>
        Effect.gen(function* () {
          const b = yield* answerFirstAt40(quota, answer)
          // b is past its own deadline (50, fired 5 ms early), but the store answered at 40:
          // silent for 44 ms only
          yield* at(84)
          expect(b.unsafePoll()).toBeNull()
          yield* answer("b")
          expect((yield* Fiber.join(b)).source).toBe("store")
          // a check sent while the store then stays silent fails once the store has been silent
          // for twice the longest silence it came back from (b's, 44 ms: 88 ms), 5 ms early
          yield* failsAt(quota, "c", 84, 84 + 83)
        })
      )
  )

  it.effect("the store silent after its last answer: every check in flight fails a deadline after it", () =>
    withQuota(true, { deadline: "50 millis" }, (quota, answer) =>
      Effect.gen(function* () {
        const fibers = []
        for (let t = 0; t <= 30; t += 10) {
          yield* at(t)
          fibers.push(yield* Effect.fork(quota.check(`k${t}`)))
        }
        yield* at(35)
        yield* answer("k0")
        expect((yield* Fiber.join(fibers[0]!)).source).toBe("store")
        // silent from 35 (k0's answer ended a 35 ms silence: 70 ms are allowed now): k10, k20, k30
        // (deadlines 60, 70, 80) all fail at 35 + 70 - 5
        yield* at(99.9)
        for (const f of fibers.slice(1)) expect(f.unsafePoll()).toBeNull()
        yield* at(100)
        for (const f of fibers.slice(1)) expect((yield* Fiber.join(f)).source).toBe("fail-closed")
      })
    )
  )

  it.effect("maxDeadline bounds the wait however long the store keeps answering others", () =>
    withQuota(true, { deadline: "50 millis", maxDeadline: "120 millis" }, (quota, answer) =>
      Effect.gen(function* () {
        const stuck = yield* Effect.fork(quota.check("stuck"))
        for (let t = 10; t < 116; t += 10) {
          yield* at(t)
          const other = yield* Effect.fork(quota.check(`other${t}`))
          yield* answer(`other${t}`)
          expect((yield* Fiber.join(other)).source).toBe("store")
          expect(stuck.unsafePoll()).toBeNull()
        }
        // 5 ms early, as every deadline
        yield* at(114.9)
        expect(stuck.unsafePoll()).toBeNull()
        yield* at(115)
        expect((yield* Fiber.join(stuck)).source).toBe("fail-closed")
        expect(quota.maxDeadline).toEqual(Duration.millis(120))
      })
    )
  )

  it.effect(
    "a store whose answers are not ordered (a cluster): answers to others do not extend a deadline",
    () =>
      withQuota(false, { deadline: "50 millis" }, (quota, answer) =>
        Effect.gen(function* () {
          const b = yield* answerFirstAt40(quota, answer)
          yield* at(44.9)
          expect(b.unsafePoll()).toBeNull()
          yield* at(45)
          expect((yield* Fiber.join(b)).source).toBe("fail-closed")
        })
      )
  )

  it.effect(
    "a silence the store came back from is allowed twice over for a while; a late answer teaches nothing",
    () =>
      withQuota(true, { deadline: "50 millis", maxDeadline: "1 second" }, (quota, answer) =>
        Effect.gen(function* () {
          const a = yield* Effect.fork(quota.check("a"))
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

  it.effect("defaults: 50 ms deadline, 1 second maxDeadline (never below the deadline)", () =>
    Effect.gen(function* () {
      yield* withQuota(true, {}, (quota) =>
        Effect.sync(() => {
          expect(quota.deadline).toEqual(Duration.millis(50))
          expect(quota.maxDeadline).toEqual(Duration.seconds(1))
        })
      )
      yield* withQuota(true, { deadline: "2 seconds" }, (quota) =>
        Effect.sync(() => expect(quota.maxDeadline).toEqual(Duration.seconds(2)))
      )
    })
  )
})

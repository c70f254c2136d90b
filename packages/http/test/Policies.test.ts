// SluiceHttpClient.layer / make use the app's RetryBudget, AdaptiveThrottle and
// ConcurrencyLimiter from context, so an app shares them; layerDefault / makeDefault
// build private ones.
import { NodeHttpClient } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { AdaptiveThrottle, ConcurrencyLimiter, LimitAlgorithm } from "@sluice/adaptive"
import { SluiceHttpClient } from "@sluice/http"
import { RetryBudget } from "@sluice/retry"
import { Cause, Context, Deferred, Effect, Exit, Fiber, Layer, Option, Result, Schedule } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"
import { routes, serve } from "./utils.js"

const failure = <A, E>(exit: Exit.Exit<A, E>): E => {
  if (Exit.isSuccess(exit)) throw new Error("expected a failure")
  const e = Cause.findErrorOption(exit.cause)
  if (Option.isNone(e)) throw new Error(`expected a typed failure: ${Cause.pretty(exit.cause)}`)
  return e.value
}

/** A backend whose `/hold` answers once `release` is done, and counts arrivals per route. */
const makeBackend = (release: Deferred.Deferred<void>) => {
  const hits = new Map<string, number>()
  const hit = (name: string) => Effect.sync(() => hits.set(name, (hits.get(name) ?? 0) + 1))
  const app = routes(
    HttpRouter.route("GET", "/ok", Effect.as(hit("ok"), HttpServerResponse.text("ok"))),
    HttpRouter.route(
      "GET",
      "/hold",
      Effect.andThen(hit("hold"), Effect.as(Deferred.await(release), HttpServerResponse.text("held")))
    ),
    HttpRouter.route(
      "GET",
      "/overloaded",
      Effect.as(hit("overloaded"), HttpServerResponse.empty({ status: 503 }))
    )
  )
  return { app, hits }
}

/** One permit per host, no queue: a second concurrent call to the host is refused locally. */
const onePermit = { algorithm: () => LimitAlgorithm.fixed(1), maxQueue: 0 } as const

/** One retry per 10-second window, whatever the traffic. */
const oneRetry = { ratio: 0, minRetriesPerSecond: 0.1 } as const

const waitUntil = (done: () => boolean) =>
  Effect.repeat(Effect.sleep("2 millis"), { until: done, times: 2500 })

describe("SluiceHttpClient policies from context", () => {
  it.live("the app's budget, throttle and limiter are the ones the client uses", () =>
    Effect.gen(function* () {
      const release = yield* Deferred.make<void>()
      const { app, hits } = makeBackend(release)
      const base = yield* serve(yield* app)
      // the client keeps the throttle's and the limiter's state per host and criticality level
      const host = `${new URL(base).host}/CRITICAL`
      const client = yield* SluiceHttpClient.SluiceHttpClient
      // the app's own instances, read after calls through the client
      const budget = yield* RetryBudget.forKey("orders")
      const throttle = yield* AdaptiveThrottle.AdaptiveThrottle
      const limiters = yield* ConcurrencyLimiter.ConcurrencyLimiter

      yield* client.get(`${base}/ok`)
      yield* client.get(`${base}/ok`)
      const spent = failure(yield* Effect.exit(client.get(`${base}/overloaded`)))
      expect(spent._tag === "DontRetry" && spent.reason).toBe("budget")
      expect(hits.get("overloaded")).toBe(2)
      const stats = yield* budget.stats
      expect({ requests: stats.requests, retries: stats.retries }).toEqual({ requests: 3, retries: 1 })
      // 3 first tries and 1 retry reached the throttle; the two 503s were not accepted
      expect(throttle.statsUnsafe(host)).toEqual({ requests: 4, accepts: 2, inFlight: 0 })
      expect(limiters.keys()).toEqual([host])

      // a call in flight holds the app's limiter's permit, which the app sees
      const held = yield* Effect.forkChild(client.get(`${base}/hold`))
      yield* waitUntil(() => limiters.getUnsafe(host).inFlight === 1)
      // ...and the app's own work on that host waits for the same permits
      const own = yield* Effect.exit(limiters.withLimiter(Effect.void, host))
      expect(failure(own)._tag).toBe("Overloaded")
      yield* Deferred.succeed(release, undefined)
      const response = yield* Fiber.join(held)
      expect(yield* response.text).toBe("held")
      expect(limiters.getUnsafe(host).inFlight).toBe(0)
    }).pipe(
      Effect.provide(
        SluiceHttpClient.layer({ name: "orders", schedule: Schedule.forever }).pipe(
          Layer.provideMerge(
            Layer.mergeAll(
              RetryBudget.layer(oneRetry),
              AdaptiveThrottle.layer(),
              ConcurrencyLimiter.layer(onePermit)
            )
          ),
          Layer.provide(NodeHttpClient.layerUndici)
        )
      )
    )
  )

  it.live("two clients on one limiter share its permits; with one name they share one budget", () =>
    Effect.gen(function* () {
      const release = yield* Deferred.make<void>()
      const { app, hits } = makeBackend(release)
      const base = yield* serve(yield* app)
      const a = yield* SluiceHttpClient.make({ name: "shared", schedule: Schedule.forever })
      const b = yield* SluiceHttpClient.make({ name: "shared", schedule: Schedule.forever })
      const other = yield* SluiceHttpClient.make({ name: "other", schedule: Schedule.forever })

      // a holds the host's only permit: b is refused locally, never reaching the server
      const held = yield* Effect.forkChild(a.get(`${base}/hold`))
      yield* waitUntil(() => hits.get("hold") === 1)
      const refused = failure(yield* Effect.exit(b.get(`${base}/ok`)))
      expect(refused._tag === "DontRetry" && refused.reason).toBe("refused")
      expect(hits.get("ok")).toBeUndefined()
      yield* Deferred.succeed(release, undefined)
      yield* Fiber.join(held)
      expect((yield* b.get(`${base}/ok`)).status).toBe(200)

      // a spends the one retry of budget "shared"; b finds it spent, "other" has its own
      const first = failure(yield* Effect.exit(a.get(`${base}/overloaded`)))
      expect(first._tag === "DontRetry" && first.reason).toBe("budget")
      expect(hits.get("overloaded")).toBe(2)
      const second = failure(yield* Effect.exit(b.get(`${base}/overloaded`)))
      expect(second._tag === "DontRetry" && second.reason).toBe("budget")
      expect(hits.get("overloaded")).toBe(3)
      yield* Effect.exit(other.get(`${base}/overloaded`))
      expect(hits.get("overloaded")).toBe(5)
      const service = yield* RetryBudget.RetryBudget
      expect((yield* service.forKey("shared").stats).retries).toBe(1)
      expect((yield* service.forKey("other").stats).retries).toBe(1)
    }).pipe(
      Effect.provide(
        Layer.mergeAll(
          NodeHttpClient.layerUndici,
          RetryBudget.layer(oneRetry),
          AdaptiveThrottle.layer(),
          ConcurrencyLimiter.layer(onePermit)
        )
      )
    )
  )

  it.live("two layerDefault clients share nothing, and leave the app's policies alone", () =>
    Effect.gen(function* () {
      const release = yield* Deferred.make<void>()
      const { app, hits } = makeBackend(release)
      const base = yield* serve(yield* app)
      const host = new URL(base).host
      const options = { name: "private", schedule: Schedule.forever, limiter: onePermit, budget: oneRetry }
      const build = Effect.map(
        Layer.build(SluiceHttpClient.layerDefault(options)),
        Context.get(SluiceHttpClient.SluiceHttpClient)
      )
      const a = yield* build
      const b = yield* build

      // a holds its own limiter's only permit: b has its own
      const held = yield* Effect.forkChild(a.get(`${base}/hold`))
      yield* waitUntil(() => hits.get("hold") === 1)
      expect((yield* b.get(`${base}/ok`)).status).toBe(200)
      yield* Deferred.succeed(release, undefined)
      yield* Fiber.join(held)

      // each has its own one retry, though both are named "private"
      yield* Effect.exit(a.get(`${base}/overloaded`))
      yield* Effect.exit(b.get(`${base}/overloaded`))
      expect(hits.get("overloaded")).toBe(4)

      // the app's services in context saw none of it
      const budget = yield* RetryBudget.forKey("private")
      expect((yield* budget.stats).requests).toBe(0)
      expect((yield* AdaptiveThrottle.AdaptiveThrottle).statsUnsafe(`${host}/CRITICAL`).requests).toBe(0)
      expect((yield* ConcurrencyLimiter.ConcurrencyLimiter).size).toBe(0)
    }).pipe(
      Effect.provide(
        Layer.mergeAll(
          NodeHttpClient.layerUndici,
          RetryBudget.layer(),
          AdaptiveThrottle.layer(),
          ConcurrencyLimiter.layer()
        )
      )
    )
  )

  it.effect("layer refuses policy options (they would be ignored) naming the field", () =>
    Effect.gen(function* () {
      const options: SluiceHttpClient.DefaultOptions = { limiter: onePermit }
      const result = yield* Effect.result(
        Layer.build(
          SluiceHttpClient.layer(options).pipe(
            Layer.provide(
              Layer.mergeAll(
                NodeHttpClient.layerUndici,
                RetryBudget.layer(),
                AdaptiveThrottle.layer(),
                ConcurrencyLimiter.layer()
              )
            )
          )
        ).pipe(Effect.scoped)
      )
      expect(Result.isFailure(result) && result.failure._tag).toBe("InvalidOptions")
      expect(Result.isFailure(result) && result.failure.message).toContain(
        "\nlimiter: the policies come from context here"
      )
      expect(Result.isFailure(result) && result.failure.message).toContain("layerDefault")
    })
  )
  it.effect("an attempt timeout longer than the throttle's window is refused (go-zero #5011)", () =>
    Effect.gen(function* () {
      const made = (options: SluiceHttpClient.DefaultOptions) =>
        Effect.result(SluiceHttpClient.makeDefault(options).pipe(Effect.provide(NodeHttpClient.layerUndici)))
      // The throttle's default window is 2 minutes: an attempt may not outlive its request's count.
      const tooLong = yield* made({ attemptTimeout: "3 minutes" })
      expect(Result.isFailure(tooLong) && tooLong.failure._tag).toBe("InvalidOptions")
      expect(Result.isFailure(tooLong) && tooLong.failure.message).toContain("throttle's window")
      const inherited = yield* made({ timeout: "3 minutes" })
      expect(Result.isFailure(inherited) && inherited.failure._tag).toBe("InvalidOptions")
      expect(
        Result.isSuccess(yield* made({ attemptTimeout: "3 minutes", throttle: { window: "5 minutes" } }))
      ).toBe(true)
      expect(Result.isSuccess(yield* made({ timeout: "3 minutes", throttle: false }))).toBe(true)
      expect(Result.isSuccess(yield* made({ timeout: "2 seconds" }))).toBe(true)
    })
  )
})

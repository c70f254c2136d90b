/**
 * System tests: the client's own waits and its own deadline are never taken for
 * backend overload.
 *
 * Real `NodeHttpServer` on 127.0.0.1 + `SluiceHttpClient` over undici, composed as
 * the README composes it. Invariants are counts, never timings: each call is also
 * raced against a generous guard only so that a hang fails an assertion instead of
 * the test. Server and client share one process: on a machine so loaded that the
 * process is starved for longer than the backend's slack, the backend, as the client
 * sees it, does exceed the attempt's bound, and only the invariants that hold whatever
 * the backend's speed are asserted (the figures say which).
 *
 * API assumptions (beyond today's code):
 * - `attemptTimeout` defaults to `timeout`: only an exchange that ran that long
 *   from its send counts as a slow backend (dropped). An exchange cut off sooner
 *   because the call's deadline was spent waiting locally is ignored by the
 *   limiter, the throttle and the budget, and never retried.
 * - A retry that could not start before the call's deadline is not scheduled and
 *   spends no budget: the call fails `DontRetry` with reason `"timeout"`.
 * - `sluice_retry_retries` and `sluice_retry_budget_withdrawals` carry
 *   `policy = <client name>`.
 */
import { HttpClient, HttpRouter, HttpServerResponse } from "effect/http"
import { NodeHttpClient } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { AdaptiveThrottle, ConcurrencyLimiter } from "@sluice/adaptive"
import { SluiceHttpClient } from "@sluice/http"
import { RetryBudget } from "@sluice/retry"
import { Cause, Clock, Effect, type Exit, Fiber, Layer, Option } from "effect"
import {
  Arrivals,
  chainOf,
  type ClientOptions,
  clientLayer,
  counters,
  describeError,
  failureOf,
  isTimeout,
  report,
  serve,
  tally,
  routes
} from "./harness.js"

// A guard, not an assertion on time: far beyond every deadline below.
const GUARD = "10 seconds"

/** Whether the error says a backend refused the work (an `Overloaded` or `QuotaExceeded` from the network). */
const isRemoteRefusal = (error: unknown): boolean =>
  chainOf(error).some((e) => {
    const node = e as { readonly _tag?: unknown; readonly origin?: unknown }
    return (node._tag === "Overloaded" || node._tag === "QuotaExceeded") && node.origin !== "local"
  })

/**
 * As `clientLayer`, with the platform client beside it: calls made through it share
 * the Sluice client's connection pool (warm-up without touching its policies).
 */
const clientLayerWithPlatform = ({ budget, limiter, throttle, ...options }: ClientOptions) =>
  SluiceHttpClient.layer(options).pipe(
    Layer.provideMerge(
      Layer.mergeAll(
        RetryBudget.layer(budget),
        AdaptiveThrottle.layer(throttle),
        ConcurrencyLimiter.layer(limiter)
      )
    ),
    Layer.provideMerge(NodeHttpClient.layerUndici)
  )

const TICK = 10

/** The most lateness of the ticks that fell within any `window` ms. */
const worstLateness = (
  ticks: ReadonlyArray<{ readonly at: number; readonly late: number }>,
  window: number
) => {
  let worst = 0
  let sum = 0
  let first = 0
  for (const tick of ticks) {
    sum += tick.late
    while (ticks[first]!.at <= tick.at - window) sum -= ticks[first++]!.late
    worst = Math.max(worst, sum)
  }
  return worst
}

describe("system: the client's own waits and deadline are not backend overload", () => {
  it.live(
    "waves of calls queue behind a healthy 100 ms backend: no limit falls, nothing is rejected or retried",
    () => {
      const name = "system-local-waits"
      return Effect.gen(function* () {
        const arrivals = new Arrivals()
        const app = yield* routes(
          HttpRouter.route(
            "GET",
            "/items",
            Effect.andThen(
              arrivals.record("items"),
              Effect.as(Effect.sleep("100 millis"), HttpServerResponse.text("ok"))
            )
          ),
          HttpRouter.route("GET", "/warm", HttpServerResponse.text("ok"))
        )
        const { base, host } = yield* serve(app)
        const client = yield* SluiceHttpClient.SluiceHttpClient
        // Connections opened and code warmed beforehand, outside the client's policies: the
        // waves then measure the client, not a cold start on a loaded machine.
        const platform = yield* HttpClient.HttpClient
        yield* Effect.forEach(
          Array.from({ length: 120 }),
          () => Effect.ignore(Effect.scoped(Effect.flatMap(platform.get(`${base}/warm`), (r) => r.text))),
          { concurrency: "unbounded" }
        )
        const throttle = yield* AdaptiveThrottle.AdaptiveThrottle
        const limiters = yield* ConcurrencyLimiter.ConcurrencyLimiter
        const budget = yield* RetryBudget.forKey(name)
        const metrics = yield* counters({
          retries: ["sluice_retry_retries", { policy: name }],
          withdrawals: ["sluice_retry_budget_withdrawals", { policy: name }],
          throttled: ["sluice_adaptive_throttle_throttled", { key: `${host}/CRITICAL` }]
        })
        const initial = limiters.getUnsafe(`${host}/CRITICAL`).limit

        // The lowest limit seen while the waves run (sampled often: a drop halves the
        // window, and it grows back only slowly), and how late each tick came: the
        // backend is "never slower than the attempt's bound" only as long as this
        // process gets the CPU to read its answers.
        let lowest = initial
        const ticks: Array<{ readonly at: number; readonly late: number }> = []
        const watch = yield* Effect.forkScoped(
          Effect.forever(
            Effect.gen(function* () {
              const before = yield* Clock.currentTimeMillis
              yield* Effect.sleep(`${TICK} millis`)
              const at = yield* Clock.currentTimeMillis
              ticks.push({ at, late: Math.max(0, at - before - TICK) })
              lowest = Math.min(lowest, limiters.getUnsafe(`${host}/CRITICAL`).limit)
            })
          )
        )

        const waves = 3
        const perWave = 120
        const trajectory: Array<number> = [initial]
        const exits: Array<Exit.Exit<unknown, unknown>> = []
        for (let wave = 0; wave < waves; wave++) {
          const settled = yield* Effect.forEach(
            Array.from({ length: perWave }),
            () => Effect.timeoutOption(Effect.exit(client.get(`${base}/items`)), GUARD),
            { concurrency: "unbounded" }
          )
          exits.push(...settled.flatMap((o) => (Option.isSome(o) ? [o.value] : [])))
          const limit = limiters.getUnsafe(`${host}/CRITICAL`).limit
          lowest = Math.min(lowest, limit)
          trajectory.push(Math.round(limit * 10) / 10)
        }
        yield* Fiber.interrupt(watch)
        const calls = tally(exits)
        const delta = yield* metrics.delta
        const stats = throttle.statsUnsafe(`${host}/CRITICAL`)
        const budgetStats = yield* budget.stats
        const failures = calls.failures
        const figures = {
          trajectory,
          lowest: Math.round(lowest * 10) / 10,
          starved: worstLateness(ticks, 300),
          calls: calls.calls,
          succeeded: calls.succeeded,
          failed: calls.failed,
          throttledCalls: calls.throttled,
          other: calls.other,
          failureKinds: [...new Set(failures.map(describeError))].slice(0, 5),
          throttleRejections: stats.requests - stats.accepts,
          // Calls that ended by their attempt's own bound (the backend, as this process saw it, exceeded it).
          attemptTimeouts: failures.filter((e) => chainOf(e).some(Cause.isTimeoutError)).length,
          throttleStats: stats,
          budget: { requests: budgetStats.requests, retries: budgetStats.retries },
          arrivals: arrivals.total,
          serverRetries: arrivals.retries,
          ...delta
        }
        yield* report("local waits", figures)

        const summary = JSON.stringify(figures)
        // Every call ended (none hung) and some got through.
        expect(calls.calls, summary).toBe(waves * perWave)
        expect(calls.succeeded, summary).toBeGreaterThan(0)
        // The backend never refused and, unless this process was starved for longer than
        // its slack (then a call ends by its attempt's own bound, a drop it may count),
        // never took longer than the attempt's bound: the limit never fell and the
        // throttle recorded no rejection.
        if (figures.attemptTimeouts === 0) {
          expect(lowest, summary).toBeGreaterThanOrEqual(initial)
          expect(stats.requests - stats.accepts, summary).toBe(0)
        }
        // Whatever the load: the throttle refused nothing...
        expect(calls.throttled + delta.throttled, summary).toBe(0)
        // ...and nothing was retried: no budget spent, no retry at the server.
        expect(delta.retries, summary).toBe(0)
        expect(delta.withdrawals, summary).toBe(0)
        expect(budgetStats.retries, summary).toBe(0)
        expect(arrivals.retries, summary).toBe(0)
        // Every call that did not succeed ran out of its own time locally, and no failure
        // says the backend refused.
        expect(calls.other, summary).toBe(0)
        expect(
          failures.every((e) => isTimeout(e) && !isRemoteRefusal(e)),
          summary
        ).toBe(true)
      }).pipe(Effect.provide(clientLayerWithPlatform({ name, timeout: "300 millis" })))
    },
    60_000
  )

  it.live(
    "calls to a hanging endpoint end by their timeout: no retry scheduled, no budget spent, one request each",
    () => {
      const name = "system-own-deadline"
      const calls = 10
      return Effect.gen(function* () {
        const arrivals = new Arrivals()
        const app = yield* routes(
          HttpRouter.route("GET", "/hang", Effect.andThen(arrivals.record("hang"), Effect.never))
        )
        const { base } = yield* serve(app)
        const client = yield* SluiceHttpClient.SluiceHttpClient
        const budget = yield* RetryBudget.forKey(name)
        const metrics = yield* counters({
          retries: ["sluice_retry_retries", { policy: name }],
          withdrawals: ["sluice_retry_budget_withdrawals", { policy: name }]
        })
        const tokensBefore = (yield* budget.stats).retries

        const settled = yield* Effect.forEach(
          Array.from({ length: calls }),
          () => Effect.timeoutOption(Effect.exit(client.get(`${base}/hang`)), GUARD),
          { concurrency: "unbounded" }
        )
        const hung = settled.filter(Option.isNone).length
        const errors = settled.flatMap((o) => (Option.isSome(o) ? [failureOf(o.value)] : []))
        const delta = yield* metrics.delta
        const budgetStats = yield* budget.stats
        const figures = {
          hung,
          errors: [...new Set(errors.map((e) => (e === undefined ? "success" : describeError(e))))],
          arrivals: arrivals.total,
          serverRetries: arrivals.retries,
          tokensSpent: budgetStats.retries - tokensBefore,
          ...delta
        }
        yield* report("own deadline", figures)

        const summary = JSON.stringify(figures)
        expect(hung, summary).toBe(0)
        // Each call failed DontRetry("timeout")...
        expect(
          errors.every(
            (e) =>
              e !== undefined &&
              (e as { readonly _tag?: unknown })._tag === "DontRetry" &&
              (e as { readonly reason?: unknown }).reason === "timeout"
          ),
          summary
        ).toBe(true)
        // ...without scheduling a retry or spending a token on one...
        expect(delta.retries, summary).toBe(0)
        expect(delta.withdrawals, summary).toBe(0)
        expect(budgetStats.retries - tokensBefore, summary).toBe(0)
        // ...and the server saw exactly one request per call, every one a first try.
        expect(arrivals.total, summary).toBe(calls)
        expect(arrivals.retries, summary).toBe(0)
      }).pipe(
        Effect.provide(
          // The budget allows every retry the policy asks for: only the deadline may stop them.
          clientLayer({ name, timeout: "300 millis", budget: { minRetriesPerSecond: 1000 } })
        )
      )
    },
    60_000
  )
})

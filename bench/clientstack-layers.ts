/**
 * Per-call cost of the fused `ClientStack` against its parts:
 * `npx tsx --conditions=@sluice/source bench/clientstack-layers.ts [--json] [--quick]`.
 *
 * Same measurement as `bench/overhead.ts` (CPU time of this process, one fiber running
 * the calls in sequence, variants measured round-robin, medians reported), with:
 * - bare: `Effect.succeed(1)`;
 * - fused: `ClientStack.run` (retry with 3 attempts and a budget, adaptive throttle,
 *   concurrency limiter with the congestion window), built from the Layers' services;
 * - composed: the same stack from the public combinators
 *   (`Retry.withRetry(throttle.withThrottle(limiter.withLimiter(effect, key), key))`);
 * - floor: `Effect.uninterruptibleMask` + `Effect.matchCauseEffect` around the effect
 *   with no bookkeeping at all: what an interruption-safe release costs by itself;
 * - cockatiel: `wrap(retry, circuitBreaker, bulkhead)` around an async function.
 *
 * Prints one JSON object on stdout (with --json, nothing else).
 */
import { AdaptiveThrottle, ConcurrencyLimiter, CongestionWindow } from "@sluice/adaptive"
import { ClientStack } from "@sluice/http"
import { RetryBudget } from "@sluice/retry"
import {
  bulkhead,
  circuitBreaker,
  ConsecutiveBreaker,
  handleAll,
  retry as cockatielRetry,
  wrap
} from "cockatiel"
import type { Cause } from "effect"
import { Effect, Layer } from "effect"
import { log, median, quick, round, timeEffect, timePromise } from "./measure.js"

const CALLS = quick ? 20_000 : 200_000
const WARM_UP = quick ? 10_000 : 100_000
const REPEATS = quick ? 3 : 5

const program = Effect.gen(function* () {
  const work = Effect.succeed(1)
  const fused = yield* ClientStack.fromContext({
    key: "fused",
    retry: { maxAttempts: 3, budget: "bench-fused" }
  })
  const composed = yield* ClientStack.fromContext({
    key: "composed",
    retry: { maxAttempts: 3, budget: "bench-composed" }
  })
  const handlers = {
    onSuccess: (a: number) => Effect.succeed(a),
    onFailure: (cause: Cause.Cause<never>) => Effect.failCause(cause)
  }
  const policy = wrap(
    cockatielRetry(handleAll, { maxAttempts: 2 }),
    circuitBreaker(handleAll, { halfOpenAfter: 10_000, breaker: new ConsecutiveBreaker(5) }),
    bulkhead(100, 100)
  )
  const fn = async () => 1

  const variants: Array<readonly [string, (n: number) => Effect.Effect<number, unknown>]> = [
    ["bare", (n) => timeEffect(() => work, n)],
    ["fused", (n) => timeEffect(() => fused.run(work), n)],
    ["composed", (n) => timeEffect(() => composed.composed(work), n)],
    [
      "floor",
      (n) =>
        timeEffect(
          () => Effect.uninterruptibleMask((restore) => Effect.matchCauseEffect(restore(work), handlers)),
          n
        )
    ],
    ["cockatiel", (n) => timePromise(() => policy.execute(fn), n)]
  ]
  for (const [name, measure] of variants) log(`warm-up ${name}: ${round(yield* measure(WARM_UP))} ns/call`)
  const samples: Record<string, Array<number>> = {}
  for (let r = 0; r < REPEATS; r++) {
    for (const [name, measure] of variants) {
      const ns = yield* measure(CALLS)
      ;(samples[name] ??= []).push(ns)
      log(`round ${r + 1} ${name}: ${round(ns)} ns/call`)
    }
  }
  // Every call must have taken the success path.
  for (const stack of [fused, composed]) {
    const limiter = stack.limiters.unsafeGet(stack.key)
    const stats = stack.throttle.unsafeStats(stack.key)
    if (limiter.inFlight !== 0 || stats.accepts !== stats.requests) {
      return yield* Effect.dieMessage(`unexpected state of ${stack.key}: ${JSON.stringify(stats)}`)
    }
  }
  const m = (name: string) => median(samples[name]!)
  return {
    calls: CALLS,
    repeats: REPEATS,
    bareNsPerCall: round(m("bare")),
    fusedNsPerCall: round(m("fused")),
    composedNsPerCall: round(m("composed")),
    floorNsPerCall: round(m("floor")),
    cockatielNsPerCall: round(m("cockatiel")),
    fusedVsCockatiel: round(m("fused") / m("cockatiel"), 3),
    fusedVsComposed: round(m("fused") / m("composed"), 3)
  }
})

const result = await Effect.runPromise(
  program.pipe(
    Effect.provide(
      Layer.mergeAll(
        RetryBudget.layer(),
        AdaptiveThrottle.layer(),
        ConcurrencyLimiter.layer({ algorithm: CongestionWindow.factory() })
      )
    )
  )
)
console.log(JSON.stringify(result))

// Unknown options are bad input: every constructor that checks its options refuses a key it
// does not declare with `InvalidOptions` naming it (the kernel's `Field.unknownKeys`), in the
// one layout of the kernel's `Field.describe`. One case per option family.
import {
  AdaptiveThrottle,
  AimdInterval,
  AimdLimit,
  ConcurrencyLimiter,
  CongestionWindow,
  LoadShedder,
  Pacer,
  ProportionalSampler,
  QpsSensor,
  TempoLimit,
  ThresholdMonitor,
  VegasLimit
} from "@sluice/adaptive"
import { CircuitBreaker, Options } from "@sluice/core"
import { SluiceHttpClient, Trust } from "@sluice/http"
import { Quota, QuotaConfig, QuotaStore } from "@sluice/quota"
import { Backoff, Retry, RetryBudget, RetryHistogram } from "@sluice/retry"
import { describe, expect, it } from "@effect/vitest"
import { Cause, Effect, Exit, Layer, Option, Redacted } from "effect"
import { HttpClient, HttpClientResponse } from "effect/http"

/** `options` with one more key: what a misspelling, or a removed option, looks like at run time. */
const plus = <A extends object>(options: A, key: string, value: unknown = 1): A => ({
  ...options,
  [key]: value
})

const backend = Layer.succeed(
  HttpClient.HttpClient,
  HttpClient.make((request) => Effect.succeed(HttpClientResponse.fromWeb(request, new Response("ok"))))
)

const quotaContext = Layer.mergeAll(
  QuotaStore.layerMemory(),
  QuotaConfig.layer({
    default: { tiers: [{ name: "s", algorithm: "gcra", limit: 10, period: "1 second" }] }
  })
)

const cases: ReadonlyArray<readonly [string, string, () => Effect.Effect<unknown, unknown, any>]> = [
  // the 1.0 option name that left: it must not silently run with the default backoff ratio
  ["CongestionWindow", "factor", () => CongestionWindow.make(plus({ backoffRatio: 0.9 }, "factor", 0.9))],
  [
    "CongestionWindow (makeUnsafe)",
    "factor",
    () => Effect.try(() => CongestionWindow.makeUnsafe(plus({}, "factor", 0.9)))
  ],
  ["AimdLimit", "backoff", () => AimdLimit.make(plus({ timeout: "1 second" } as const, "backoff"))],
  ["VegasLimit", "gamma", () => VegasLimit.make(plus({}, "gamma"))],
  ["TempoLimit", "tempo", () => TempoLimit.make(plus({}, "tempo"))],
  ["Pacer", "rate", () => Pacer.make(plus({ limit: () => 4, initialRtt: "10 millis" } as const, "rate"))],
  [
    "ConcurrencyLimiter",
    "maxWaiting",
    () => ConcurrencyLimiter.make(plus({ maxWait: "1 second" } as const, "maxWaiting"))
  ],
  ["ConcurrencyLimiter.makeService", "key", () => ConcurrencyLimiter.makeService(plus({}, "key", "a"))],
  ["LoadShedder", "capacty", () => LoadShedder.make(plus({ capacity: 8 }, "capacty"))],
  ["AdaptiveThrottle", "ratio", () => AdaptiveThrottle.make(plus({}, "ratio"))],
  ["AimdInterval", "steps", () => AimdInterval.make(plus({ min: "1 second", max: "1 minute" }, "steps"))],
  ["ThresholdMonitor", "limit", () => ThresholdMonitor.make(plus({ name: "op" }, "limit"))],
  ["QpsSensor", "windw", () => QpsSensor.makeLocal(plus({}, "windw"))],
  [
    "ProportionalSampler",
    "goalQps",
    () => ProportionalSampler.make(plus({ goal: 10 }, "goalQps")).pipe(Effect.provide(QpsSensor.layerLocal()))
  ],
  ["RetryBudget", "percent", () => RetryBudget.make(plus({}, "percent"))],
  ["RetryHistogram", "bucketz", () => RetryHistogram.make(plus({}, "bucketz"))],
  ["Retry", "attempts", () => Retry.make(plus({ maxAttempts: 2 }, "attempts"))],
  [
    "Backoff.exponential",
    "multiplier",
    // A schedule carries its invalid options to the policy that runs it.
    () =>
      Effect.void.pipe(
        Retry.withRetry({ schedule: Backoff.exponential(plus({ base: "10 millis" }, "multiplier")) })
      )
  ],
  ["CircuitBreaker", "threshold", () => CircuitBreaker.make(plus({ name: "db" }, "threshold"))],
  [
    "SluiceHttpClient.makeDefault",
    "retries",
    () => SluiceHttpClient.makeDefault(plus({ limiter: {} }, "retries")).pipe(Effect.provide(backend))
  ],
  [
    "Trust.sharedSecret",
    "headr",
    () => Trust.sharedSecret(plus({ secret: Redacted.make("s3cr3t-s3cr3t-s3cr3t") }, "headr"))
  ],
  ["QuotaStore.makeMemory", "ttl", () => QuotaStore.makeMemory(plus({}, "ttl"))],
  ["Quota", "deadlin", () => Quota.make(plus({}, "deadlin")).pipe(Effect.provide(quotaContext))],
  [
    "Quota (breaker)",
    "breaker.windw",
    () =>
      Quota.make({ breaker: plus({ openFor: "1 second" } as const, "windw") }).pipe(
        Effect.provide(quotaContext)
      )
  ]
]

const failureOf = (exit: Exit.Exit<unknown, unknown>): unknown => {
  if (Exit.isSuccess(exit)) return undefined
  const error = Cause.findErrorOption(exit.cause)
  if (Option.isSome(error)) return error.value
  const defect = Cause.findDefect(exit.cause)
  return defect._tag === "Success" ? defect.success : Cause.pretty(exit.cause)
}

describe("an unknown option is refused, named, in the kernel's one layout", () => {
  for (const [name, key, make] of cases) {
    it.effect(name, () =>
      Effect.gen(function* () {
        const exit = yield* Effect.exit(Effect.scoped(make()))
        let error = failureOf(exit)
        // `Effect.try` wraps a throw: the thrown `InvalidOptions` is its cause.
        if (error instanceof Cause.UnknownError) error = error.cause
        expect(error).toBeInstanceOf(Options.InvalidOptions)
        const message = (error as Options.InvalidOptions).message
        expect(message).toMatch(/^[\w.]+: invalid options\n/)
        expect(message.split("\n")).toContain(`${key}: is not an option`)
      })
    )
  }
})

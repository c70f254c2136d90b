import * as Cause from "effect/Cause"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import { dual } from "effect/Function"
import * as Metric from "effect/Metric"
import * as MetricBoundaries from "effect/MetricBoundaries"
import * as MetricLabel from "effect/MetricLabel"
import * as Schema from "effect/Schema"
import * as CircuitBreaker from "../CircuitBreaker.js"
import { CircuitOpen, QuotaExceeded } from "../Errors.js"
import * as Options from "./options.js"
import type { QuotaConfigService } from "./quotaConfig.js"
import { MemoryQuotaState } from "./quotaMemory.js"
import type { CompiledPlan, StoreResult, TierDecision } from "./quotaPlan.js"
import { QuotaStoreError } from "./quotaPlan.js"
import type { Store } from "./quotaStore.js"
import { clockMillis, DeadlineQueue } from "./deadlines.js"
import type * as Scope from "effect/Scope"

/** @internal */
export const FailureMode = Schema.Literal("fail-open", "fail-closed", "fallback")

/** @internal */
export type FailureMode = typeof FailureMode.Type

/** @internal */
export const QuotaOptions = Schema.Struct({
  mode: Schema.optionalWith(FailureMode, { default: () => "fail-open" as const }),
  deadline: Schema.optionalWith(Options.PositiveDuration, { default: () => Duration.millis(15) }),
  breaker: Schema.optionalWith(
    Schema.Struct({
      consecutiveFailures: Schema.optionalWith(Options.PositiveInt, { default: () => 5 }),
      openFor: Schema.optionalWith(Options.PositiveDuration, { default: () => Duration.seconds(1) }),
      halfOpenProbes: Schema.optionalWith(Options.PositiveInt, { default: () => 1 })
    }),
    { default: () => ({ consecutiveFailures: 5, openFor: Duration.seconds(1), halfOpenProbes: 1 }) }
  ),
  failClosedRetryAfter: Schema.optionalWith(Options.PositiveDuration, { default: () => Duration.seconds(1) }),
  fallbackMaxClients: Schema.optionalWith(Options.PositiveInt, { default: () => 100_000 })
})

/** @internal */
export type QuotaOptions = typeof QuotaOptions.Encoded

/** @internal */
export type DecisionSource = "store" | "fail-open" | "fail-closed" | "fallback"

/** @internal */
export interface Decision {
  readonly client: string
  readonly allowed: boolean
  readonly tiers: ReadonlyArray<TierDecision>
  readonly deniedBy: TierDecision | undefined
  readonly retryAfterMs: number
  readonly source: DecisionSource
}

/** @internal */
export interface CheckOptions {
  readonly cost?: number | undefined
}

/** @internal */
export interface QuotaService {
  readonly check: (client: string, options?: CheckOptions) => Effect.Effect<Decision>
  readonly guard: {
    (
      client: string,
      options?: CheckOptions
    ): <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E | QuotaExceeded, R>
    <A, E, R>(
      self: Effect.Effect<A, E, R>,
      client: string,
      options?: CheckOptions
    ): Effect.Effect<A, E | QuotaExceeded, R>
  }
  readonly breaker: CircuitBreaker.CircuitBreaker | undefined
  readonly mode: FailureMode
  readonly deadline: Duration.Duration
}

// ---- metrics -------------------------------------------------------------

const latency = Metric.histogram(
  "sluice_quota_check_latency_ms",
  MetricBoundaries.exponential({ start: 0.025, factor: 2, count: 14 }),
  "Latency of a quota check, store call included"
)
const allowedTotal = Metric.counter("sluice_quota_allowed_total", { description: "Checks allowed" })
const deniedTotal = Metric.counter("sluice_quota_denied_total", { description: "Denials, by tier" })
const failOpenTotal = Metric.counter("sluice_quota_fail_open_total", {
  description: "Checks allowed because the store failed or missed its deadline"
})
const failClosedTotal = Metric.counter("sluice_quota_fail_closed_total", {
  description: "Checks denied because the store failed or missed its deadline"
})
const fallbackTotal = Metric.counter("sluice_quota_fallback_total", {
  description: "Checks decided by the local fallback store"
})
const storeFailures = Metric.counter("sluice_quota_store_failures_total", {
  description: "Store calls that failed, by reason (timeout, unavailable, error, circuit-open)"
})
const breakerState = Metric.gauge("sluice_quota_breaker_state", {
  description: "Store circuit breaker: 0 closed, 1 half-open, 2 open"
})

const noTags: ReadonlyArray<MetricLabel.MetricLabel> = []
const tierTags = new Map<string, ReadonlyArray<MetricLabel.MetricLabel>>()
const tagsFor = (key: string, value: string) => {
  const id = `${key}=${value}`
  let tags = tierTags.get(id)
  if (tags === undefined) {
    tags = [MetricLabel.make(key, value)]
    tierTags.set(id, tags)
  }
  return tags
}
const stateValue = { closed: 0, "half-open": 1, open: 2 } as const

// ---- decisions -----------------------------------------------------------

const toDecision = (client: string, result: StoreResult, source: DecisionSource): Decision => {
  if (result.allowed) {
    return { client, allowed: true, tiers: result.tiers, deniedBy: undefined, retryAfterMs: 0, source }
  }
  let deniedBy: TierDecision | undefined
  let retryAfterMs = 0
  for (const tier of result.tiers) {
    if (!tier.allowed) {
      if (deniedBy === undefined) deniedBy = tier
      if (tier.retryAfterMs > retryAfterMs) retryAfterMs = tier.retryAfterMs
    }
  }
  return { client, allowed: false, tiers: result.tiers, deniedBy, retryAfterMs, source }
}

const unknownTiers = (plan: CompiledPlan, allowed: boolean, retryAfterMs: number): Array<TierDecision> =>
  plan.tiers.map((tier) => ({
    tier: tier.name,
    algorithm: tier.algorithm,
    allowed,
    limit: tier.capacity,
    remaining: allowed ? tier.capacity : 0,
    resetMs: 0,
    retryAfterMs: allowed ? 0 : retryAfterMs
  }))

const validCost = (cost: number) => Number.isInteger(cost) && cost > 0

/** @internal */
export const make = (
  store: Store,
  config: QuotaConfigService,
  input: QuotaOptions = {}
): Effect.Effect<QuotaService, Options.InvalidOptions, Scope.Scope> =>
  Effect.gen(function* () {
    const options = yield* Options.decode("Quota", QuotaOptions)(input)
    const clock = yield* Effect.clock
    const deadline = options.deadline
    const fallback =
      options.mode === "fallback"
        ? new MemoryQuotaState({ maxClients: options.fallbackMaxClients })
        : undefined
    const breaker = store.remote
      ? yield* CircuitBreaker.make({
          name: `quota-store:${store.name}`,
          consecutiveFailures: options.breaker.consecutiveFailures,
          openFor: options.breaker.openFor,
          halfOpenProbes: options.breaker.halfOpenProbes
        })
      : undefined
    const failClosedMs = Duration.toMillis(options.failClosedRetryAfter)
    let lastState: keyof typeof stateValue = "closed"
    let suspectBreaker = false

    const recordBreaker = () => {
      if (breaker === undefined) return
      const state = breaker.unsafeState(clock.unsafeCurrentTimeMillis())
      if (state !== lastState) {
        lastState = state
        breakerState.unsafeUpdate(stateValue[state], noTags)
      }
    }

    const nowMs = () => clockMillis(clock)

    const finish = (client: string, result: StoreResult, source: DecisionSource, start: number): Decision => {
      const decision = toDecision(client, result, source)
      if (decision.allowed) allowedTotal.unsafeUpdate(1, noTags)
      else {
        for (const tier of decision.tiers)
          if (!tier.allowed) deniedTotal.unsafeUpdate(1, tagsFor("tier", tier.tier))
      }
      latency.unsafeUpdate(nowMs() - start, noTags)
      return decision
    }

    const onStoreFailure = (
      client: string,
      plan: CompiledPlan,
      cost: number,
      start: number,
      cause: Cause.Cause<unknown>
    ): Effect.Effect<Decision> =>
      Effect.suspend(() => {
        const error = Cause.failureOption(cause)
        let reason = "error"
        let retryAfterMs = failClosedMs
        if (error._tag === "Some") {
          const e = error.value
          if (e instanceof CircuitOpen) {
            reason = "circuit-open"
            retryAfterMs = Math.max(1, Math.ceil(Duration.toMillis(e.retryAfter)))
          } else if (e instanceof QuotaStoreError) reason = e.reason
        } else reason = "defect"
        storeFailures.unsafeUpdate(1, tagsFor("reason", reason))
        const annotate = Effect.annotateCurrentSpan("reason", reason)
        recordBreaker()
        switch (options.mode) {
          case "fail-open": {
            failOpenTotal.unsafeUpdate(1, noTags)
            const result: StoreResult = { allowed: true, tiers: unknownTiers(plan, true, 0), now: 0 }
            return Effect.as(annotate, finish(client, result, "fail-open", start))
          }
          case "fail-closed": {
            failClosedTotal.unsafeUpdate(1, noTags)
            const result: StoreResult = {
              allowed: false,
              tiers: unknownTiers(plan, false, retryAfterMs),
              now: 0
            }
            return Effect.as(annotate, finish(client, result, "fail-closed", start))
          }
          case "fallback": {
            fallbackTotal.unsafeUpdate(1, noTags)
            const result = fallback!.check(client, plan, cost, clock.unsafeCurrentTimeMillis())
            return Effect.as(annotate, finish(client, result, "fallback", start))
          }
        }
      }).pipe(
        Effect.withSpan("sluice.quota.store_failure", { captureStackTrace: false, attributes: { client } })
      )

    const unsafeCheck = store.unsafeCheck
    const checkCallback = store.checkCallback
    const deadlines = checkCallback !== undefined ? yield* DeadlineQueue.make(clock, deadline) : undefined
    // One value for every missed deadline: an error carries no per-call data here, and building
    // one (an Error, with its stack trace) on a CPU that sat idle for the whole deadline cost a
    // tenth of a millisecond or more, all of it past the deadline (bench/quota.ts, failOpenMaxMs).
    const timedOut = new QuotaStoreError(
      { store: store.name, reason: "timeout", message: "quota store missed its deadline" },
      true
    )
    // A failed call: feed the breaker (from then on every call goes through it until a success,
    // so it opens, probes and closes exactly as if it wrapped every call), then the failure mode.
    const failed = (
      client: string,
      plan: CompiledPlan,
      cost: number,
      start: number,
      cause: Cause.Cause<QuotaStoreError | CircuitOpen>
    ): Effect.Effect<Decision> =>
      breaker === undefined
        ? onStoreFailure(client, plan, cost, start, cause)
        : Effect.zipRight(
            Effect.sync(() => {
              suspectBreaker = true
            }),
            Effect.zipRight(
              Effect.exit(breaker.withBreaker(Effect.failCause(cause))),
              onStoreFailure(client, plan, cost, start, cause)
            )
          )

    // The remote hot path while the breaker has nothing to learn (it is closed and nothing failed
    // since the last success): ONE Effect.async per check. It reads the clock once (latency and
    // deadline), registers the deadline (a linked-list append, no timer, no fiber), and finishes
    // the decision in the store's callback. It returns no canceler on purpose: a canceler makes
    // Effect wrap the wait for interruption, which cost more than the rest of the check; if the
    // fiber is interrupted, the late answer or deadline resumes nothing, and the entry leaves the
    // deadline list when either comes (within the deadline).
    const remoteFast = (client: string, plan: CompiledPlan, cost: number): Effect.Effect<Decision> =>
      Effect.async<Decision>((resume) => {
        if (suspectBreaker) return resume(remoteGuarded(client, plan, cost))
        const start = nowMs()
        const queue = deadlines!
        const entry = queue.register(start, () =>
          resume(failed(client, plan, cost, start, Cause.fail(timedOut)))
        )
        checkCallback!(client, plan, cost, (error, result) => {
          if (!queue.settle(entry)) return
          if (error !== undefined) return resume(failed(client, plan, cost, start, Cause.fail(error)))
          if (lastState !== "closed") recordBreaker()
          resume(Effect.succeed(finish(client, result!, "store", start)))
        })
      })

    // Through the breaker: after a failure, until a success, and while it is open or half-open.
    const remoteGuarded = (client: string, plan: CompiledPlan, cost: number): Effect.Effect<Decision> => {
      let start = -1
      const call = Effect.async<Decision, QuotaStoreError>((resume) => {
        start = nowMs()
        const queue = deadlines!
        const entry = queue.register(start, () => resume(Effect.fail(timedOut)))
        checkCallback!(client, plan, cost, (error, result) => {
          if (!queue.settle(entry)) return
          if (error !== undefined) return resume(Effect.fail(error))
          if (lastState !== "closed") recordBreaker()
          resume(Effect.succeed(finish(client, result!, "store", start)))
        })
        return Effect.sync(() => {
          queue.settle(entry)
        })
      })
      return Effect.catchAllCause(
        Effect.tap(breaker!.withBreaker(call), () => {
          // back to the fast path once a success has closed the breaker
          if (breaker!.unsafeState(clock.unsafeCurrentTimeMillis()) === "closed") suspectBreaker = false
        }),
        (cause) =>
          Cause.isInterruptedOnly(cause)
            ? Effect.failCause(cause as Cause.Cause<never>)
            : onStoreFailure(client, plan, cost, start < 0 ? nowMs() : start, cause)
      )
    }

    const check = (client: string, checkOptions?: CheckOptions): Effect.Effect<Decision> => {
      const cost = checkOptions?.cost ?? 1
      if (!validCost(cost))
        return Effect.dieMessage(`Quota.check: cost must be a positive integer, got ${cost}`)
      const plan = config.planFor(client)
      if (unsafeCheck !== undefined) {
        // local store: one synchronous step, no deadline or breaker to pay for
        return Effect.sync(() => {
          const start = nowMs()
          return finish(client, unsafeCheck(client, plan, cost), "store", start)
        })
      }
      if (checkCallback !== undefined) return remoteFast(client, plan, cost)
      // a remote store without the callback form: Effect.timeout and the breaker around every call
      let start = -1
      const call = Effect.suspend(() => {
        start = nowMs()
        return Effect.map(
          Effect.timeoutFail(store.check(client, plan, cost), {
            duration: deadline,
            onTimeout: () => timedOut
          }),
          (result) => {
            if (lastState !== "closed") recordBreaker()
            return finish(client, result, "store", start)
          }
        )
      })
      return Effect.catchAllCause(breaker === undefined ? call : breaker.withBreaker(call), (cause) =>
        Cause.isInterruptedOnly(cause)
          ? Effect.failCause(cause as Cause.Cause<never>)
          : onStoreFailure(client, plan, cost, start < 0 ? nowMs() : start, cause)
      )
    }

    const guard = dual(
      (args) => Effect.isEffect(args[0]),
      <A, E, R>(
        self: Effect.Effect<A, E, R>,
        client: string,
        checkOptions?: CheckOptions
      ): Effect.Effect<A, E | QuotaExceeded, R> =>
        Effect.flatMap(check(client, checkOptions), (decision): Effect.Effect<A, E | QuotaExceeded, R> =>
          decision.allowed ? self : Effect.fail(toQuotaExceeded(decision))
        )
    )

    return { check, guard, breaker, mode: options.mode, deadline } satisfies QuotaService
  })

/** @internal */
export const toQuotaExceeded = (decision: Decision): QuotaExceeded => {
  const tier = decision.deniedBy ?? decision.tiers[0]!
  return new QuotaExceeded({
    tier: tier.tier,
    limit: tier.limit,
    remaining: tier.remaining,
    retryAfter: Duration.millis(decision.retryAfterMs),
    client: decision.client
  })
}

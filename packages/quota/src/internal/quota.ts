import * as Cause from "effect/Cause"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import { dual } from "effect/Function"
import * as Metric from "effect/Metric"
import * as PubSub from "effect/PubSub"
import * as Stream from "effect/Stream"
import * as MetricBoundaries from "effect/MetricBoundaries"
import * as MetricLabel from "effect/MetricLabel"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import * as CircuitBreaker from "@sluice/core/CircuitBreaker"
import type * as Q from "../Quota.js"
import { CircuitOpen, QuotaExceeded } from "@sluice/core/Errors"
import * as RollingCounter from "@sluice/core/RollingCounter"
import * as Deadlines from "./deadlines.js"
import * as Options from "@sluice/core/Options"
import * as ClientKey from "@sluice/kernel/quota/ClientKey"
import * as QuotaDecision from "@sluice/kernel/quota/Decision"
import { MemoryQuotaState } from "@sluice/kernel/quota/MemoryStore"
import * as QuotaPlan from "@sluice/kernel/quota/Plan"
import * as ratio from "@sluice/kernel/stats/Ratio"
import type { QuotaConfigService } from "./quotaConfig.js"
import type { CompiledPlan, StoreResult } from "./quotaPlan.js"
import { QuotaStoreError } from "./quotaPlan.js"
import type { Store } from "./quotaStore.js"

/** @internal */
export const FailureMode = Schema.Literal("fail-open", "fail-closed", "fallback")

/** @internal */
export type FailureMode = typeof FailureMode.Type

const Share = Schema.Number.pipe(
  Schema.filter((n) => Number.isFinite(n) && n > 0 && n <= 1, {
    message: (issue) => `expected a share in (0, 1], got ${String(issue.actual)}`
  })
)

const breakerDefaults = {
  failureRatio: 0.5,
  window: Duration.seconds(1),
  minimumCalls: 20,
  consecutiveFailures: 5,
  minFailureSpan: Duration.millis(250),
  openFor: Duration.millis(500),
  halfOpenProbes: 1
}

/** @internal */
export const QuotaOptions = Schema.Struct({
  mode: Schema.optionalWith(FailureMode, { default: () => "fallback" as const }),
  deadline: Schema.optionalWith(Options.PositiveDuration, { default: () => Duration.millis(15) }),
  // no default: it is the deadline unless set above it (the learned deadline is opt-in)
  maxDeadline: Schema.optional(Options.PositiveDuration),
  breaker: Schema.optionalWith(
    Schema.Struct({
      failureRatio: Schema.optionalWith(Share, { default: () => breakerDefaults.failureRatio }),
      window: Schema.optionalWith(Options.PositiveDuration, { default: () => breakerDefaults.window }),
      minimumCalls: Schema.optionalWith(Options.PositiveInt, { default: () => breakerDefaults.minimumCalls }),
      consecutiveFailures: Schema.optionalWith(Options.PositiveInt, {
        default: () => breakerDefaults.consecutiveFailures
      }),
      minFailureSpan: Schema.optionalWith(Options.NonNegativeDuration, {
        default: () => breakerDefaults.minFailureSpan
      }),
      openFor: Schema.optionalWith(Options.PositiveDuration, { default: () => breakerDefaults.openFor }),
      halfOpenProbes: Schema.optionalWith(Options.PositiveInt, {
        default: () => breakerDefaults.halfOpenProbes
      })
    }),
    { default: () => breakerDefaults }
  ),
  failClosedRetryAfter: Schema.optionalWith(Options.PositiveDuration, { default: () => Duration.seconds(1) }),
  fallbackShare: Schema.optionalWith(Share, { default: () => 1 }),
  fallbackMaxClients: Schema.optionalWith(Options.PositiveInt, { default: () => 100_000 }),
  maxClientIdLength: Schema.optionalWith(
    Options.PositiveInt.pipe(
      Schema.filter((n) => n >= 80 || "expected at least 80 (a prefix, `#` and 64 hex digits of SHA-256)")
    ),
    { default: () => 256 }
  )
})

/** @internal */
export type QuotaOptions = typeof QuotaOptions.Encoded

/** @internal */
export type DecisionSource = "store" | "fail-open" | "fail-closed" | "fallback"

/** @internal */
export type Decision = Q.Decision

/** @internal */
export type CheckOptions = Q.CheckOptions

/** @internal */
export type WaitOptions = Q.WaitOptions

/** @internal */
export interface QuotaService {
  readonly check: (client: string, options?: CheckOptions) => Effect.Effect<Decision, Options.InvalidOptions>
  readonly get: (client: string) => Effect.Effect<Decision>
  readonly reward: (
    client: string,
    units: number
  ) => Effect.Effect<void, Options.InvalidOptions | QuotaStoreError>
  readonly penalty: (
    client: string,
    units: number
  ) => Effect.Effect<void, Options.InvalidOptions | QuotaStoreError>
  readonly block: (
    client: string,
    duration: Duration.DurationInput
  ) => Effect.Effect<void, Options.InvalidOptions | QuotaStoreError>
  readonly reset: (client: string) => Effect.Effect<void, QuotaStoreError>
  readonly guard: {
    (
      client: string,
      options?: CheckOptions
    ): <A, E, R>(
      self: Effect.Effect<A, E, R>
    ) => Effect.Effect<A, E | QuotaExceeded | Options.InvalidOptions, R>
    <A, E, R>(
      self: Effect.Effect<A, E, R>,
      client: string,
      options?: CheckOptions
    ): Effect.Effect<A, E | QuotaExceeded | Options.InvalidOptions, R>
  }
  readonly withQuota: {
    (
      client: string,
      options?: WaitOptions
    ): <A, E, R>(
      self: Effect.Effect<A, E, R>
    ) => Effect.Effect<A, E | QuotaExceeded | Options.InvalidOptions, R>
    <A, E, R>(
      self: Effect.Effect<A, E, R>,
      client: string,
      options?: WaitOptions
    ): Effect.Effect<A, E | QuotaExceeded | Options.InvalidOptions, R>
  }
  /** The id a client is stored under: itself, or (above `maxClientIdLength`) a prefix and its SHA-256. */
  readonly storedId: (client: string) => string
  readonly breaker: CircuitBreaker.Service | undefined
  readonly mode: FailureMode
  readonly deadline: Duration.Duration
  readonly maxDeadline: Duration.Duration
  /** Denials from the moment the stream is run (a subscriber more than 256 behind loses the oldest). */
  readonly events: Stream.Stream<QuotaEvent>
}

/** @internal */
export type QuotaEvent = Q.Event

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
  description: "Store calls that failed, by reason (timeout, stalled, unavailable, error, circuit-open)"
})
const refundsTotal = Metric.counter("sluice_quota_refunds_total", {
  description: "Units given back to the store for checks it counted after their deadline had been decided"
})
const waitedTotal = Metric.counter("sluice_quota_waited_total", {
  description: "withQuota calls that waited for a permit"
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
  const tiers = result.tiers
  return {
    client,
    allowed: false,
    tiers,
    deniedBy: QuotaDecision.deniedBy(tiers),
    retryAfterMs: QuotaDecision.retryAfterMs(tiers),
    source
  }
}

const invalid = (message: string) => new Options.InvalidOptions({ module: "Quota", message })

const checkUnits = (what: string, units: number): Options.InvalidOptions | undefined =>
  Number.isSafeInteger(units) && units > 0
    ? undefined
    : invalid(`Quota.${what}: units must be a positive integer, got ${String(units)}`)

/** @internal */
export const make = (
  store: Store,
  config: QuotaConfigService,
  input: QuotaOptions = {}
): Effect.Effect<QuotaService, Options.InvalidOptions, Scope.Scope> =>
  Effect.gen(function* () {
    const options = yield* Options.decode("Quota", QuotaOptions)(input)
    const clock = yield* Effect.clock
    const pubsub = yield* Effect.acquireRelease(PubSub.sliding<QuotaEvent>(256), PubSub.shutdown)
    const deadline = options.deadline
    const maxDeadline =
      options.maxDeadline === undefined ? deadline : Duration.max(deadline, options.maxDeadline)
    const maxIdLength = options.maxClientIdLength
    const share = options.fallbackShare
    const fallback =
      options.mode === "fallback" && store.remote
        ? new MemoryQuotaState({ maxClients: options.fallbackMaxClients })
        : undefined
    const scaled = new WeakMap<CompiledPlan, CompiledPlan>()
    const fallbackPlan = (plan: CompiledPlan) => {
      let s = scaled.get(plan)
      if (s === undefined) {
        s = QuotaPlan.scale(plan, share)
        scaled.set(plan, s)
      }
      return s
    }
    const b = options.breaker
    // The breaker itself opens on the first failure it is fed: Quota feeds it only once the
    // store's failure is sustained (below), and while it is open or half-open, so one stall
    // never opens it, and a failed probe re-opens it at once.
    const breaker = store.remote
      ? yield* CircuitBreaker.make({
          name: `quota-store:${store.name}`,
          consecutiveFailures: 1,
          openFor: b.openFor,
          halfOpenProbes: b.halfOpenProbes
        })
      : undefined
    // Failures are counted over `window`; calls only while failures are in it (an "episode"),
    // so a successful check pays one comparison, not a counter update.
    const failures = RollingCounter.unsafeMake({ window: b.window, buckets: 10 })
    const failureRatio = ratio.make(b.failureRatio)
    const minSpanMs = Duration.toMillis(b.minFailureSpan)
    let consecutive = 0
    let firstFailureAt = 0
    let episodeStart = 0
    let episodeCalls = 0
    let inEpisode = false
    const failClosedMs = Duration.toMillis(options.failClosedRetryAfter)
    let lastState: keyof typeof stateValue = "closed"
    /** the breaker has something to learn: every call goes through it until it closes again */
    let suspectBreaker = false

    const storedId = (client: string): string => ClientKey.storedId(client, maxIdLength)

    const recordBreaker = () => {
      if (breaker === undefined) return
      const state = breaker.unsafeState(clock.unsafeCurrentTimeMillis())
      if (state !== lastState) {
        lastState = state
        breakerState.unsafeUpdate(stateValue[state], noTags)
      }
    }

    const nowMs = () => Deadlines.clockMillis(clock)

    /** A store call answered: the failure run ends. */
    const recordSuccess = () => {
      if (inEpisode) episodeCalls++
      consecutive = 0
    }
    // Both rules ask for failure that lasts: one stall fails every call in flight at once (with
    // 32 in flight, 32 failures in a row, 100% of the calls since), so a run of failures, or an
    // episode of failures (from a failure with none before it in the window, counting every call
    // since), must span `minFailureSpan` before either rule trips.
    const recordFailure = (now: number): boolean => {
      if (!inEpisode || failures.unsafeTotal(now) === 0) {
        inEpisode = true
        episodeStart = now
        episodeCalls = 0
        failures.unsafeReset()
      }
      episodeCalls++
      failures.unsafeAdd(now)
      if (consecutive++ === 0) firstFailureAt = now
      if (consecutive >= b.consecutiveFailures && now - firstFailureAt >= minSpanMs) return true
      if (now - episodeStart < minSpanMs) return false
      return episodeCalls >= b.minimumCalls && failureRatio.atLeast(failures.unsafeTotal(now), episodeCalls)
    }

    const finish = (
      client: string,
      result: StoreResult,
      source: DecisionSource,
      start: number,
      end = nowMs()
    ): Decision => {
      const decision = toDecision(client, result, source)
      if (decision.allowed) allowedTotal.unsafeUpdate(1, noTags)
      else {
        for (const tier of decision.tiers)
          if (!tier.allowed) deniedTotal.unsafeUpdate(1, tagsFor("tier", tier.tier))
        // off the success path only: a denial publishes, an admission never does
        pubsub.unsafeOffer({
          _tag: "Denied",
          client,
          tier: (decision.deniedBy ?? decision.tiers[0])?.tier ?? "",
          retryAfterMs: decision.retryAfterMs,
          source,
          at: end
        })
      }
      latency.unsafeUpdate(end - start, noTags)
      return decision
    }

    const onStoreFailure = (
      client: string,
      id: string,
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
          } else if (e instanceof QuotaStoreError) reason = e === stalledOut ? "stalled" : e.reason
        } else reason = "defect"
        storeFailures.unsafeUpdate(1, tagsFor("reason", reason))
        const annotate = Effect.annotateCurrentSpan("reason", reason)
        recordBreaker()
        // a cost no tier can hold is denied whatever the mode
        if (cost > plan.maxCost) {
          const result: StoreResult = {
            allowed: false,
            tiers: QuotaDecision.unknownTiers(plan, false, Infinity),
            now: 0
          }
          return Effect.as(annotate, finish(client, result, "store", start))
        }
        switch (options.mode) {
          case "fail-open": {
            failOpenTotal.unsafeUpdate(1, noTags)
            const result: StoreResult = {
              allowed: true,
              tiers: QuotaDecision.unknownTiers(plan, true, 0),
              now: 0
            }
            return Effect.as(annotate, finish(client, result, "fail-open", start))
          }
          case "fail-closed": {
            failClosedTotal.unsafeUpdate(1, noTags)
            const result: StoreResult = {
              allowed: false,
              tiers: QuotaDecision.unknownTiers(plan, false, retryAfterMs),
              now: 0
            }
            return Effect.as(annotate, finish(client, result, "fail-closed", start))
          }
          case "fallback": {
            fallbackTotal.unsafeUpdate(1, noTags)
            const local = fallback ?? new MemoryQuotaState({ maxClients: 1 })
            const result = local.check(
              id,
              fallbackPlan(plan),
              cost,
              Math.floor(clock.unsafeCurrentTimeMillis())
            )
            return Effect.as(annotate, finish(client, result, "fallback", start))
          }
        }
      }).pipe(
        Effect.withSpan("sluice.quota.store_failure", { captureStackTrace: false, attributes: { client } })
      )

    const unsafeCheck = store.unsafeCheck
    const checkCallback = store.checkCallback
    // With `maxDeadline` at the deadline (the default) every check is decided by its deadline,
    // whatever the store or the process did meanwhile. Above it (opted in), an ordered store (one
    // connection: answers in call order) that answers other checks is working through a backlog,
    // not gone: a check then waits past `deadline` while answers keep coming, up to `maxDeadline`
    // (a saturated host, not a failed store: see DeadlineQueue).
    const deadlines =
      checkCallback !== undefined
        ? yield* Deadlines.make(clock, deadline, {
            ordered: store.ordered === true,
            maxTimeout: maxDeadline
          })
        : undefined
    // One value for every missed deadline: an error carries no per-call data here, and building
    // one (an Error, with its stack trace) on a CPU that sat idle for the whole deadline cost a
    // tenth of a millisecond or more, all of it past the deadline (bench/quota.ts, failOpenMaxMs).
    const timedOut = new QuotaStoreError(
      { store: store.name, reason: "timeout", message: "quota store missed its deadline" },
      true
    )
    // A deadline missed while this process was not running: not the store's fault.
    const stalledOut = new QuotaStoreError(
      {
        store: store.name,
        reason: "timeout",
        message: "quota check missed its deadline: the process stalled"
      },
      true
    )
    // What the failure mode told each caller whose deadline passed, by store call: a reply that
    // comes later and says the store counted the request is refunded if the caller was denied
    // (a second command, off the check's path), so the store counts only what callers got.
    // A late denial still teaches the fallback (below).
    const lateReply = (
      id: string,
      plan: CompiledPlan,
      cost: number,
      result: StoreResult | undefined,
      toldAllowed: boolean
    ) => {
      if (result === undefined) return
      // a late answer still shows the store is working (it teaches no silence: no entry)
      deadlines!.progress(nowMs())
      if (cost === 0) return
      if (result.allowed) {
        if (!toldAllowed && store.refund !== undefined) {
          refundsTotal.unsafeUpdate(cost, noTags)
          store.refund(id, plan, cost)
        } else if (fallback !== undefined) learnEmpty(id, plan, result)
      } else learn(id, plan, result)
    }
    // The fallback learns the store's denials: a client the store denies until t is denied by the
    // fallback until t too, so a fleet that falls back (a slow or lost Redis) does not hand out a
    // quota the store already saw spent.
    // An admission that left a gcra tier empty says the same a little earlier: the next unit is
    // at most one emission interval away, so the fallback denies the client for that long.
    const learnEmpty = (id: string, plan: CompiledPlan, result: StoreResult) => {
      const wait = QuotaDecision.emptyWaitMs(plan, result)
      if (wait > 0) {
        const now = Math.floor(clock.unsafeCurrentTimeMillis())
        fallback!.block(id, fallbackPlan(plan), now + wait, now)
      }
    }
    const learn = (id: string, plan: CompiledPlan, result: StoreResult) => {
      if (fallback === undefined) return
      const wait = QuotaDecision.retryAfterMs(result.tiers)
      if (wait > 0 && Number.isFinite(wait)) {
        const now = Math.floor(clock.unsafeCurrentTimeMillis())
        fallback.block(id, fallbackPlan(plan), now + wait, now)
      }
    }

    // A failed call: count it; once failure is sustained feed the breaker (from then on every
    // call goes through it until a success closes it), then the failure mode.
    const failed = (
      client: string,
      id: string,
      plan: CompiledPlan,
      cost: number,
      start: number,
      error: QuotaStoreError
    ): Effect.Effect<Decision> => {
      const cause = Cause.fail(error)
      if (breaker === undefined || error === stalledOut || !recordFailure(clock.unsafeCurrentTimeMillis()))
        return onStoreFailure(client, id, plan, cost, start, cause)
      suspectBreaker = true
      return Effect.zipRight(
        Effect.exit(breaker.withBreaker(Effect.failCause(cause))),
        onStoreFailure(client, id, plan, cost, start, cause)
      )
    }

    // The remote hot path while the breaker is closed: ONE Effect.async per check. It reads the
    // clock once (latency and deadline), registers the deadline (a linked-list append, no timer,
    // no fiber), and finishes the decision in the store's callback. It returns no canceler on
    // purpose: a canceler makes Effect wrap the wait for interruption, which cost more than the
    // rest of the check; if the fiber is interrupted, the late answer or deadline resumes
    // nothing, and the entry leaves the deadline list when either comes (within the deadline).
    const remoteFast = (
      client: string,
      id: string,
      plan: CompiledPlan,
      cost: number
    ): Effect.Effect<Decision> =>
      Effect.async<Decision>((resume) => {
        if (suspectBreaker) return resume(remoteGuarded(client, id, plan, cost))
        const start = nowMs()
        const queue = deadlines!
        const entry = queue.register(start, (stalled) =>
          resume(
            Effect.tap(failed(client, id, plan, cost, start, stalled ? stalledOut : timedOut), (d) => {
              toldAllowed = d.allowed
            })
          )
        )
        // what the failure mode told the caller, if the deadline passed first
        let toldAllowed = true
        checkCallback!(id, plan, cost, (error, result) => {
          if (!queue.settle(entry)) return lateReply(id, plan, cost, result, toldAllowed)
          if (error !== undefined) return resume(failed(client, id, plan, cost, start, error))
          const end = nowMs()
          queue.progress(end, entry)
          recordSuccess()
          if (lastState !== "closed") recordBreaker()
          if (fallback !== undefined) {
            if (!result!.allowed) learn(id, plan, result!)
            else if (cost > 0) learnEmpty(id, plan, result!)
          }
          resume(Effect.succeed(finish(client, result!, "store", start, end)))
        })
      })

    // Through the breaker: while it is open or half-open.
    const remoteGuarded = (
      client: string,
      id: string,
      plan: CompiledPlan,
      cost: number
    ): Effect.Effect<Decision> => {
      let start = -1
      const call = Effect.async<Decision, QuotaStoreError>((resume) => {
        start = nowMs()
        const queue = deadlines!
        const entry = queue.register(start, (stalled) => resume(Effect.fail(stalled ? stalledOut : timedOut)))
        checkCallback!(id, plan, cost, (error, result) => {
          // the failure mode's verdict is not known here: a late admission is refunded unless fail-open
          if (!queue.settle(entry)) return lateReply(id, plan, cost, result, options.mode === "fail-open")
          if (error !== undefined) return resume(Effect.fail(error))
          const end = nowMs()
          queue.progress(end, entry)
          recordSuccess()
          if (!result!.allowed) learn(id, plan, result!)
          if (lastState !== "closed") recordBreaker()
          resume(Effect.succeed(finish(client, result!, "store", start, end)))
        })
        return Effect.sync(() => {
          queue.settle(entry)
        })
      })
      return Effect.catchAllCause(
        Effect.tap(breaker!.withBreaker(call), () => {
          // back to the fast path once a success has closed the breaker
          if (breaker!.unsafeState(clock.unsafeCurrentTimeMillis()) === "closed") {
            suspectBreaker = false
            consecutive = 0
            inEpisode = false
            failures.unsafeReset()
            recordBreaker()
          }
        }),
        (cause) =>
          Cause.isInterruptedOnly(cause)
            ? Effect.failCause(cause as Cause.Cause<never>)
            : onStoreFailure(client, id, plan, cost, start < 0 ? nowMs() : start, cause)
      )
    }

    const decide = (client: string, cost: number): Effect.Effect<Decision> => {
      const plan = config.planFor(client)
      const id = storedId(client)
      if (unsafeCheck !== undefined) {
        // local store: one synchronous step, no deadline or breaker to pay for
        return Effect.sync(() => {
          const start = nowMs()
          return finish(client, unsafeCheck(id, plan, cost), "store", start)
        })
      }
      if (checkCallback !== undefined) return remoteFast(client, id, plan, cost)
      // a remote store without the callback form: Effect.timeout and the breaker around every call
      let start = -1
      const call = Effect.suspend(() => {
        start = nowMs()
        return Effect.map(
          Effect.timeoutFail(store.check(id, plan, cost), { duration: deadline, onTimeout: () => timedOut }),
          (result) => {
            if (lastState !== "closed") recordBreaker()
            return finish(client, result, "store", start)
          }
        )
      })
      return Effect.catchAllCause(breaker === undefined ? call : breaker.withBreaker(call), (cause) =>
        Cause.isInterruptedOnly(cause)
          ? Effect.failCause(cause as Cause.Cause<never>)
          : onStoreFailure(client, id, plan, cost, start < 0 ? nowMs() : start, cause)
      )
    }

    const check = (
      client: string,
      checkOptions?: CheckOptions
    ): Effect.Effect<Decision, Options.InvalidOptions> => {
      const cost = checkOptions?.cost ?? 1
      if (!Number.isSafeInteger(cost) || cost < 0)
        return Effect.fail(
          invalid(`Quota.check: cost must be a non-negative integer (0 peeks), got ${String(cost)}`)
        )
      return decide(client, cost)
    }

    const get = (client: string): Effect.Effect<Decision> => decide(client, 0)

    const adjust = (
      what: string,
      client: string,
      units: number,
      sign: 1 | -1
    ): Effect.Effect<void, Options.InvalidOptions | QuotaStoreError> => {
      const bad = checkUnits(what, units)
      if (bad !== undefined) return Effect.fail(bad)
      const plan = config.planFor(client)
      const id = storedId(client)
      return Effect.zipRight(
        Effect.sync(() =>
          fallback?.adjust(id, fallbackPlan(plan), sign * units, Math.floor(clock.unsafeCurrentTimeMillis()))
        ),
        store.adjust(id, plan, sign * units)
      )
    }

    const block = (
      client: string,
      duration: Duration.DurationInput
    ): Effect.Effect<void, Options.InvalidOptions | QuotaStoreError> => {
      const ms = Duration.toMillis(
        Duration.decodeUnknown(duration).pipe((o) => (o._tag === "Some" ? o.value : Duration.zero))
      )
      if (!Number.isFinite(ms) || ms < 1)
        return Effect.fail(
          invalid(`Quota.block: duration must be at least 1 ms and finite, got ${String(duration)}`)
        )
      const whole = Math.ceil(ms)
      const plan = config.planFor(client)
      const id = storedId(client)
      return Effect.zipRight(
        Effect.sync(() => {
          const now = Math.floor(clock.unsafeCurrentTimeMillis())
          fallback?.block(id, fallbackPlan(plan), now + whole, now)
        }),
        store.block(id, plan, whole)
      )
    }

    const reset = (client: string): Effect.Effect<void, QuotaStoreError> => {
      const id = storedId(client)
      return Effect.zipRight(
        Effect.sync(() => fallback?.reset(id)),
        store.reset(id)
      )
    }

    const guard = dual(
      (args) => Effect.isEffect(args[0]),
      <A, E, R>(
        self: Effect.Effect<A, E, R>,
        client: string,
        checkOptions?: CheckOptions
      ): Effect.Effect<A, E | QuotaExceeded | Options.InvalidOptions, R> =>
        Effect.flatMap(check(client, checkOptions), (decision): Effect.Effect<A, E | QuotaExceeded, R> =>
          decision.allowed ? self : Effect.fail(toQuotaExceeded(decision))
        )
    )

    const withQuota = dual(
      (args) => Effect.isEffect(args[0]),
      <A, E, R>(
        self: Effect.Effect<A, E, R>,
        client: string,
        waitOptions?: WaitOptions
      ): Effect.Effect<A, E | QuotaExceeded | Options.InvalidOptions, R> => {
        const maxWaitMs =
          waitOptions?.maxWait === undefined ? 0 : Duration.toMillis(Duration.decode(waitOptions.maxWait))
        const cost = waitOptions?.cost
        const attempt = (
          deadlineAt: number,
          waited: boolean
        ): Effect.Effect<A, E | QuotaExceeded | Options.InvalidOptions, R> =>
          Effect.flatMap(check(client, cost === undefined ? undefined : { cost }), (decision) => {
            if (decision.allowed) {
              if (waited) waitedTotal.unsafeUpdate(1, noTags)
              return self
            }
            const now = clock.unsafeCurrentTimeMillis()
            const wait = decision.retryAfterMs
            // a permit that cannot come within the bound (or ever) fails now, not at the bound
            if (!Number.isFinite(wait) || now + wait > deadlineAt)
              return Effect.fail(toQuotaExceeded(decision))
            return Effect.zipRight(
              Effect.sleep(Duration.millis(Math.max(1, wait))),
              attempt(deadlineAt, true)
            )
          })
        return Effect.suspend(() => attempt(clock.unsafeCurrentTimeMillis() + maxWaitMs, false))
      }
    )

    return {
      check,
      get,
      reward: (client, units) => adjust("reward", client, units, -1),
      penalty: (client, units) => adjust("penalty", client, units, 1),
      block,
      reset,
      guard,
      withQuota,
      storedId,
      breaker,
      mode: options.mode,
      deadline,
      maxDeadline,
      events: Stream.fromPubSub(pubsub)
    } satisfies QuotaService
  })

/** @internal */
export const toQuotaExceeded = (decision: Decision): QuotaExceeded => {
  const tier = decision.deniedBy ?? decision.tiers[0]!
  return new QuotaExceeded({
    tier: tier.tier,
    limit: tier.limit,
    remaining: tier.remaining,
    retryAfter: Number.isFinite(decision.retryAfterMs)
      ? Duration.millis(decision.retryAfterMs)
      : Duration.infinity,
    client: decision.client
  })
}

import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import type * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import { dual } from "effect/Function"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import * as PubSub from "effect/PubSub"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as CircuitBreaker from "@sluice/core/CircuitBreaker"
import * as EventHub from "@sluice/core/shared/EventHub"
import * as Meters from "@sluice/core/shared/Meters"
import { CircuitOpen, QuotaExceeded } from "@sluice/core/Errors"
import * as Options from "@sluice/core/Options"
import * as ClientKey from "@sluice/kernel/quota/ClientKey"
import * as QuotaDecision from "@sluice/kernel/quota/QuotaDecision"
import { Fallback } from "@sluice/kernel/quota/QuotaFallback"
import * as QuotaOptions from "@sluice/kernel/quota/QuotaOptions"
import { SustainedFailure } from "@sluice/kernel/quota/SustainedFailure"
import type * as Q from "../Quota.js"
import * as Deadlines from "./deadlines.js"
import * as TurnPacer from "./turnPacer.js"
import type * as QC from "../QuotaConfig.js"
import type { Store, StoreResult } from "../QuotaStore.js"
import { invalidOptions, QuotaStoreError } from "./quotaPlan.js"

const invalid = (message: string) => new Options.InvalidOptions({ module: "Quota", message })

const decodeDuration = Schema.decodeUnknownOption(Options.DurationInput)

/** A duration in milliseconds; `NaN` for what is not one (the kernel's rules name it). */
const toMillis = (input: Duration.Input): number =>
  Option.match(decodeDuration(input), { onNone: () => NaN, onSome: Duration.toMillis })

/** One check: the client, the id it is stored under, its plan and its cost. */
interface Call {
  readonly client: string
  readonly id: string
  readonly plan: QC.CompiledPlan
  readonly cost: number
}

// ---- metrics -------------------------------------------------------------
// One metric per attribute set, made up front (or once per tier): an update then costs a
// registry lookup, where `Metric.withAttributes` builds a Context and a key on every update.

const latency = Metric.histogram("sluice_quota_check_latency_ms", {
  description: "Latency of a quota check, store call included",
  boundaries: Metric.exponentialBoundaries({ start: 0.025, factor: 2, count: 14 })
})
const allowedTotal = Meters.counter(
  "sluice_quota_allowed_total",
  "Checks allowed, by source (store, fallback, fail-open)"
)
const deniedTotal = Meters.counter(
  "sluice_quota_denied_total",
  "Denials, by tier and source (store, fallback, fail-closed)"
)
const sources: ReadonlyArray<Q.DecisionSource> = ["store", "fallback", "fail-open", "fail-closed"]
const allowedBy = Object.fromEntries(
  sources.map((source) => [source, allowedTotal.of({ source })])
) as Record<Q.DecisionSource, Metric.Counter<number>>
const failOpenTotal = Meters.counter(
  "sluice_quota_fail_open_total",
  "Checks allowed because the store failed or missed its deadline"
).metric
const failClosedTotal = Meters.counter(
  "sluice_quota_fail_closed_total",
  "Checks denied because the store failed or missed its deadline"
).metric
const fallbackTotal = Meters.counter(
  "sluice_quota_fallback_total",
  "Checks decided by the local fallback store"
).metric
type FailureReason = QuotaStoreError["reason"] | "stalled" | "circuit-open" | "defect"
const failureReasons: ReadonlyArray<FailureReason> = [
  "timeout",
  "stalled",
  "unavailable",
  "error",
  "circuit-open",
  "defect"
]
const storeFailuresTotal = Meters.counter(
  "sluice_quota_store_failures_total",
  "Store calls that failed, by reason (timeout, stalled, unavailable, error, circuit-open)"
)
const storeFailures = Object.fromEntries(
  failureReasons.map((reason) => [reason, storeFailuresTotal.of({ reason })])
) as Record<FailureReason, Metric.Counter<number>>
const refundsTotal = Meters.counter(
  "sluice_quota_refunds_total",
  "Units given back to the store for checks it counted after their deadline had been decided"
).metric
const raisedTotal = Meters.counter(
  "sluice_quota_store_raised_total",
  "Checks whose client state the store had lost (a restarted or failed-over Redis) and took back from this instance's floor"
).metric
const waitedTotal = Meters.counter(
  "sluice_quota_waited_total",
  "withQuota calls that waited for a permit"
).metric
const breakerState = Metric.gauge("sluice_quota_breaker_state", {
  description: "Store circuit breaker: 0 closed, 1 half-open, 2 open"
})

const stateValue = { closed: 0, "half-open": 1, open: 2 } as const

/** @internal */
export const make = (
  store: Store,
  config: QC.Service,
  input: Q.QuotaOptions = {}
): Effect.Effect<Q.Service, Options.InvalidOptions, Scope.Scope> =>
  Effect.gen(function* () {
    const options = QuotaOptions.resolve(input, toMillis)
    if (Array.isArray(options)) return yield* Effect.fail(invalidOptions("Quota", options))
    const clock = yield* Clock.Clock
    // Metrics are updated from store callbacks, outside any fiber: into the registry (and with
    // the metric attributes) of the context the service is built in.
    const services: Context.Context<never> = yield* Effect.context<never>()
    const pubsub = yield* Effect.acquireRelease(EventHub.make<Q.Event>(), PubSub.shutdown)
    // denial series by source, then tier (tiers are the plans' own names: made when first seen)
    const deniedBy = Object.fromEntries(
      sources.map((source) => [source, new Map<string, Metric.Counter<number>>()])
    ) as Record<Q.DecisionSource, Map<string, Metric.Counter<number>>>
    const deniedIn = (source: Q.DecisionSource, tier: string) => {
      const byTier = deniedBy[source]
      let metric = byTier.get(tier)
      if (metric === undefined) {
        metric = deniedTotal.of({ tier, source })
        byTier.set(tier, metric)
      }
      return metric
    }
    const deadline = Duration.millis(options.deadlineMs)
    const fallback =
      options.mode === "fallback" && store.remote
        ? new Fallback({ maxClients: options.fallbackMaxClients, share: options.fallbackShare })
        : undefined
    // The breaker itself opens on the first failure it is fed: Quota feeds it only once the
    // store's failure is sustained (the kernel's SustainedFailure), and while it is open or
    // half-open, so one stall never opens it, and a failed probe re-opens it at once.
    const breaker = store.remote
      ? yield* CircuitBreaker.make({
          name: `quota-store:${store.name}`,
          consecutiveFailures: 1,
          openFor: options.breaker.openForMs,
          halfOpenProbes: options.breaker.halfOpenProbes
        })
      : undefined
    const health = new SustainedFailure(options.breaker)
    const failuresBy = { "fail-open": failOpenTotal, "fail-closed": failClosedTotal, fallback: fallbackTotal }
    let lastState: keyof typeof stateValue = "closed"

    const storedId = (client: string): string => ClientKey.storedId(client, options.maxClientIdLength)

    const recordBreaker = () => {
      if (breaker === undefined) return
      const state = breaker.stateUnsafe(clock.currentTimeMillisUnsafe())
      if (state !== lastState) {
        lastState = state
        breakerState.updateUnsafe(stateValue[state], services)
      }
    }

    // latencies and deadlines: elapsed time, on the Clock's monotonic time
    const nowMs = () => Deadlines.monotonicMillis(clock)
    // decisions are made in whole milliseconds (see the kernel's quota/QuotaPlan)
    const wholeMs = () => Math.floor(clock.currentTimeMillisUnsafe())

    const finish = (
      client: string,
      result: StoreResult,
      source: Q.DecisionSource,
      start: number,
      end = nowMs()
    ): Q.Decision => {
      const decision = QuotaDecision.make(client, result, source)
      if (decision.allowed) allowedBy[source].updateUnsafe(1, services)
      else {
        for (const tier of decision.tiers)
          if (!tier.allowed) deniedIn(source, tier.tier).updateUnsafe(1, services)
        // off the success path only: a denial publishes (stamped with the Clock's epoch time), an
        // admission never does
        EventHub.publish(pubsub, QuotaDecision.denied(decision, clock.currentTimeMillisUnsafe()))
      }
      latency.updateUnsafe(end - start, services)
      return decision
    }

    const onStoreFailure = (
      call: Call,
      start: number,
      cause: Cause.Cause<unknown>
    ): Effect.Effect<Q.Decision> => {
      const decided = Effect.suspend(() => {
        const failure = Cause.findErrorOption(cause)
        const e = Option.getOrUndefined(failure)
        const reason: FailureReason = Option.isNone(failure)
          ? "defect"
          : e instanceof CircuitOpen
            ? "circuit-open"
            : e === stalledOut
              ? "stalled"
              : e instanceof QuotaStoreError
                ? e.reason
                : "error"
        storeFailures[reason].updateUnsafe(1, services)
        recordBreaker()
        const closedMs =
          e instanceof CircuitOpen
            ? QuotaDecision.circuitOpenWaitMs(Duration.toMillis(e.retryAfter))
            : options.failClosedRetryAfterMs
        const { result, source } = QuotaDecision.whenStoreFails(
          options.mode,
          call.plan,
          call.cost,
          closedMs,
          () =>
            // a store that is not remote has no fallback of its own: a fresh one per failed call
            (fallback ?? new Fallback({ maxClients: 1, share: options.fallbackShare })).check(
              call.id,
              call.plan,
              call.cost,
              wholeMs()
            )
        )
        if (source !== "store") failuresBy[source].updateUnsafe(1, services)
        return Effect.as(
          Effect.annotateCurrentSpan("reason", reason),
          finish(call.client, result, source, start)
        )
      })
      return Effect.withSpan(decided, "sluice.quota.store_failure", {
        captureStackTrace: false,
        attributes: { client: call.client }
      })
    }

    /** A store call that failed or was interrupted: the failure mode decides, an interruption stays one. */
    const orFailureMode = (
      attempt: Effect.Effect<Q.Decision, unknown>,
      call: Call,
      started: () => number
    ): Effect.Effect<Q.Decision> =>
      Effect.catchCause(attempt, (cause) =>
        Cause.hasInterruptsOnly(cause)
          ? Effect.failCause(cause as Cause.Cause<never>)
          : onStoreFailure(call, started() < 0 ? nowMs() : started(), cause)
      )

    const checkUnsafe = store.checkUnsafe
    const checkCallback = store.checkCallback
    // With `maxDeadline` at the deadline (the default) every check is decided by its deadline,
    // whatever the store or the process did meanwhile. Above it (opted in), an ordered store (one
    // connection: answers in call order) that answers other checks is working through a backlog,
    // not gone: a check then waits past `deadline` while answers keep coming, up to `maxDeadline`
    // (a saturated host, not a failed store: see DeadlineQueue).
    const deadlines =
      checkCallback !== undefined
        ? yield* Deadlines.make(clock, options.deadlineMs, {
            ordered: store.ordered === true,
            maxTimeoutMs: options.maxDeadlineMs
          })
        : undefined
    // resumes answered checks a few per event-loop turn when the store asks for it
    const paced = store.resumesPerTurn !== undefined ? TurnPacer.make(store.resumesPerTurn) : undefined
    // One value for every missed deadline: an error carries no per-call data here, and building
    // one (an Error, with its stack trace) on a CPU that sat idle for the whole deadline cost a
    // tenth of a millisecond or more, all of it past the deadline (bench/quota.ts, failOpenMaxMs).
    const missed = (message: string) => new QuotaStoreError({ store: store.name, reason: "timeout", message })
    const timedOut = missed("quota store missed its deadline")
    // A deadline missed while this process was not running: not the store's fault.
    const stalledOut = missed("quota check missed its deadline: the process stalled")
    // What the failure mode told each caller whose deadline passed, by store call: a reply that
    // comes later and says the store counted the request is refunded if the caller was denied
    // (a second command, off the check's path), so the store counts only what callers got.
    // Any other late answer still teaches the fallback (the kernel's Fallback).
    const lateReply = (call: Call, result: StoreResult | undefined, toldAllowed: boolean) => {
      if (result === undefined) return
      // a late answer still shows the store is working (it teaches no silence: no entry)
      deadlines!.progress(nowMs())
      if (QuotaDecision.refundsLate(result, call.cost, toldAllowed) && store.refund !== undefined) {
        refundsTotal.updateUnsafe(call.cost, services)
        store.refund(call.id, call.plan, call.cost)
      } else if (call.cost > 0) fallback?.learn(call.id, call.plan, result, call.cost, wholeMs())
    }

    // A store answer in time: the deadline queue and the breaker's rule learn the store works,
    // the fallback learns the answer (`learnAdmissions`: an admission too, not only a denial).
    const answered = (
      entry: Deadlines.Entry,
      call: Call,
      start: number,
      result: StoreResult,
      learnAdmissions: boolean
    ): Q.Decision => {
      const end = nowMs()
      deadlines!.progress(end, entry)
      health.success()
      if (lastState !== "closed") recordBreaker()
      if (result.raised === true) raisedTotal.updateUnsafe(1, services)
      if (learnAdmissions || !result.allowed || result.state !== undefined)
        fallback?.learn(call.id, call.plan, result, call.cost, wholeMs())
      return finish(call.client, result, "store", start, end)
    }

    // A failed call: count it; once failure is sustained feed the breaker (from then on every
    // call goes through it until a success closes it), then the failure mode.
    const failed = (call: Call, start: number, error: QuotaStoreError): Effect.Effect<Q.Decision> => {
      const cause = Cause.fail(error)
      const decided = onStoreFailure(call, start, cause)
      if (breaker === undefined || error === stalledOut || !health.failure(clock.currentTimeMillisUnsafe()))
        return decided
      return Effect.andThen(Effect.exit(breaker.withBreaker(Effect.failCause(cause))), decided)
    }

    // The client's floor, for the store to ask for if it finds the client's state lost: given only
    // when the fallback holds one (a lookup per check; the floor itself is built when asked for)
    const floorOf = (call: Call): (() => ReadonlyArray<number> | undefined) | undefined =>
      fallback !== undefined && fallback.knows(call.id, call.plan, wholeMs())
        ? () => fallback.floor(call.id, call.plan, wholeMs())
        : undefined

    // The remote hot path while the breaker is closed: ONE Effect.callback per check. It reads
    // the clock once (latency and deadline), registers the deadline (a linked-list append, no
    // timer, no fiber), and finishes the decision in the store's callback. Its register function
    // takes no AbortSignal and returns no canceler, on purpose: either makes Effect push a
    // finalizer for interruption (and a signal an AbortController), which cost more than the
    // rest of the check; if the fiber is interrupted, the late answer or deadline resumes
    // nothing, and the entry leaves the deadline list when either comes (within the deadline).
    const remoteFast = (call: Call): Effect.Effect<Q.Decision> =>
      Effect.callback<Q.Decision>((resume) => {
        if (health.suspect) return resume(remoteGuarded(call))
        const start = nowMs()
        const queue = deadlines!
        // what the failure mode told the caller, if the deadline passed first
        let toldAllowed = true
        const entry = queue.register(start, (stalled) =>
          resume(
            Effect.map(failed(call, start, stalled ? stalledOut : timedOut), (d) => {
              toldAllowed = d.allowed
              return d
            })
          )
        )
        checkCallback!(
          call.id,
          call.plan,
          call.cost,
          (error, result) => {
            if (!queue.settle(entry)) return lateReply(call, result, toldAllowed)
            if (error !== undefined) return resume(failed(call, start, error))
            const decided = Effect.succeed(answered(entry, call, start, result!, true))
            if (paced === undefined) resume(decided)
            else paced(() => resume(decided))
          },
          floorOf(call)
        )
      })

    // Through the breaker: while it is open or half-open.
    const remoteGuarded = (call: Call): Effect.Effect<Q.Decision> => {
      let start = -1
      const attempt = Effect.callback<Q.Decision, QuotaStoreError>((resume) => {
        start = nowMs()
        const queue = deadlines!
        const entry = queue.register(start, (stalled) => resume(Effect.fail(stalled ? stalledOut : timedOut)))
        checkCallback!(
          call.id,
          call.plan,
          call.cost,
          (error, result) => {
            // the failure mode's verdict is not known here: a late admission is refunded unless fail-open
            if (!queue.settle(entry)) return lateReply(call, result, options.mode === "fail-open")
            if (error !== undefined) return resume(Effect.fail(error))
            resume(Effect.succeed(answered(entry, call, start, result!, false)))
          },
          floorOf(call)
        )
        return Effect.sync(() => {
          queue.settle(entry)
        })
      })
      const closing = Effect.map(breaker!.withBreaker(attempt), (decision) => {
        // back to the fast path once a success has closed the breaker
        if (breaker!.stateUnsafe(clock.currentTimeMillisUnsafe()) === "closed") {
          health.closed()
          recordBreaker()
        }
        return decision
      })
      return orFailureMode(closing, call, () => start)
    }

    const decide = (client: string, cost: number): Effect.Effect<Q.Decision> => {
      const plan = config.planFor(client)
      const id = storedId(client)
      if (checkUnsafe !== undefined) {
        // local store: one synchronous step, no deadline or breaker to pay for
        return Effect.sync(() => {
          const start = nowMs()
          return finish(client, checkUnsafe(id, plan, cost), "store", start)
        })
      }
      const call: Call = { client, id, plan, cost }
      if (checkCallback !== undefined) return remoteFast(call)
      // a remote store without the callback form: a timeout and the breaker around every call
      let start = -1
      const attempt = Effect.suspend(() => {
        start = nowMs()
        return Effect.map(
          Effect.timeoutOrElse(store.check(id, plan, cost), {
            duration: deadline,
            orElse: () => Effect.fail(timedOut)
          }),
          (result) => {
            if (lastState !== "closed") recordBreaker()
            return finish(client, result, "store", start)
          }
        )
      })
      return orFailureMode(breaker === undefined ? attempt : breaker.withBreaker(attempt), call, () => start)
    }

    const check = (
      client: string,
      checkOptions?: Q.CheckOptions
    ): Effect.Effect<Q.Decision, Options.InvalidOptions> => {
      const cost = QuotaOptions.checkCost(checkOptions?.cost)
      return typeof cost === "string" ? Effect.fail(invalid(`Quota.check: ${cost}`)) : decide(client, cost)
    }

    const adjust = (
      what: string,
      client: string,
      units: number,
      sign: 1 | -1
    ): Effect.Effect<void, Options.InvalidOptions | QuotaStoreError> => {
      const bad = QuotaOptions.unitsIssue(units)
      if (bad !== undefined) return Effect.fail(invalid(`Quota.${what}: ${bad}`))
      const plan = config.planFor(client)
      const id = storedId(client)
      return Effect.andThen(
        Effect.sync(() => fallback?.adjust(id, plan, sign * units, wholeMs())),
        store.adjust(id, plan, sign * units)
      )
    }

    const block = (
      client: string,
      duration: Duration.Input
    ): Effect.Effect<void, Options.InvalidOptions | QuotaStoreError> => {
      const ms = QuotaOptions.blockMs(toMillis(duration), duration)
      if (typeof ms === "string") return Effect.fail(invalid(`Quota.block: ${ms}`))
      const plan = config.planFor(client)
      const id = storedId(client)
      return Effect.andThen(
        Effect.sync(() => fallback?.block(id, plan, ms, wholeMs())),
        store.block(id, plan, ms)
      )
    }

    const reset = (client: string): Effect.Effect<void, QuotaStoreError> => {
      const id = storedId(client)
      return Effect.andThen(
        Effect.sync(() => fallback?.reset(id)),
        store.reset(id)
      )
    }

    const guard = dual(
      (args) => Effect.isEffect(args[0]),
      <A, E, R>(
        self: Effect.Effect<A, E, R>,
        client: string,
        checkOptions?: Q.CheckOptions
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
        waitOptions?: Q.WaitOptions
      ): Effect.Effect<A, E | QuotaExceeded | Options.InvalidOptions, R> => {
        const maxWaitMs =
          waitOptions?.maxWait === undefined
            ? 0
            : QuotaOptions.maxWaitMs(toMillis(waitOptions.maxWait), waitOptions.maxWait)
        if (typeof maxWaitMs === "string") return Effect.fail(invalid(`Quota.withQuota: ${maxWaitMs}`))
        const cost = waitOptions?.cost
        const attempt = (
          deadlineAt: number,
          waited: boolean
        ): Effect.Effect<A, E | QuotaExceeded | Options.InvalidOptions, R> =>
          Effect.flatMap(check(client, cost === undefined ? undefined : { cost }), (decision) => {
            if (decision.allowed) {
              if (waited) waitedTotal.updateUnsafe(1, services)
              return self
            }
            const wait = QuotaDecision.waitMs(
              clock.currentTimeMillisUnsafe(),
              deadlineAt,
              decision.retryAfterMs
            )
            return wait === undefined
              ? Effect.fail(toQuotaExceeded(decision))
              : Effect.andThen(Effect.sleep(Duration.millis(wait)), attempt(deadlineAt, true))
          })
        return Effect.suspend(() => attempt(clock.currentTimeMillisUnsafe() + maxWaitMs, false))
      }
    )

    return {
      check,
      get: (client) => decide(client, 0),
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
      maxDeadline: Duration.millis(options.maxDeadlineMs),
      events: Stream.fromPubSub(pubsub)
    } satisfies Q.Service
  })

/** @internal */
export const toQuotaExceeded = (decision: Q.Decision): QuotaExceeded => {
  const { retryAfterMs, ...fields } = QuotaDecision.refusal(decision)
  return new QuotaExceeded({
    ...fields,
    retryAfter: Number.isFinite(retryAfterMs) ? Duration.millis(retryAfterMs) : Duration.infinity
  })
}

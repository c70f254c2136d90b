/**
 * The `throttle` scenario: one client against a backend that can accept only a
 * share `a` (default 30%) of what the client offers, with and without
 * `AdaptiveThrottle`.
 *
 * The client offers `N` requests per second, evenly spaced (open loop: arrivals
 * do not wait for answers). Each request travels `travel` to the backend, which
 * accepts the first `a·N` requests of every virtual second and rejects the rest
 * with `Overloaded`.
 *
 * Without the throttle, a share `1 − a` of all requests reaches the backend and
 * is rejected. With it, the throttle's formula
 * `p = max(0, (requests − K·accepts) / (requests + 1))` settles where
 * `requests = N·W` and `accepts = a·N·W` over its window `W`, i.e.
 *
 * ```text
 * p* = min(cap, max(0, 1 − K·a))          (the +1 moves it by < 1/(N·W))
 * share of requests rejected by the backend = (1 − p*) − a = (K − 1)·a   (uncapped)
 * ```
 *
 * for `a = 0.3`, `K = 2`: 40% throttled locally, 30% reach the backend and are
 * rejected (down from 70%), 30% accepted. The report compares the shares measured
 * after `warmupSeconds` (two windows by default) with these predictions;
 * `steadyErrorPct` is the relative error of the measured backend-rejected share.
 */
import { AdaptiveThrottle } from "@sluice/adaptive"
import { Criticality, Errors } from "@sluice/core"
import { Simulation } from "@sluice/simulation"
import type { Options } from "@sluice/core"
import { Cause, Clock, Duration, Effect, Exit, Option } from "effect"
import type { Scenario } from "../scenarios.js"
import type { Strategy } from "@sluice/simulation/Strategy"

export interface ThrottleScenarioOptions {
  /** Requests offered per second (default 100). */
  readonly offeredPerSecond?: number
  /** Share of the offered requests the backend can accept (default 0.3). */
  readonly acceptShare?: number
  /** The throttle's base K (default 2). */
  readonly k?: number
  /** Criticality of the client's requests (default CRITICAL: K = k). */
  readonly criticality?: Criticality.Criticality
  /** Whether the client uses the throttle (default true); `false` gives the baseline. */
  readonly throttle?: boolean
  /** Virtual length of the run (default 600 s). */
  readonly durationSeconds?: number
  /** Requests arriving before this are not measured (default 240 s: two 2-minute windows). */
  readonly warmupSeconds?: number
  /** Time for a request to reach the backend and for the answer to come back (default 20 ms). */
  readonly travelMillis?: number
  readonly seed?: number
  readonly onProgress?: (elapsedMillis: number) => void
}

export interface Shares {
  readonly throttled: number
  readonly rejected: number
  readonly accepted: number
}

export interface ThrottleScenarioReport {
  readonly offered: number
  readonly throttled: number
  readonly rejected: number
  readonly accepted: number
  /** Requests measured after the warm-up. */
  readonly steadyRequests: number
  /** Shares of the measured requests: failed locally, reached the backend and rejected, accepted. */
  readonly steady: Shares
  /** What the formula predicts at steady state (with the throttle), or the plain 1 − a split without it. */
  readonly predicted: Shares
  /** The backend-rejected share without any throttle: 1 − a. */
  readonly baselineRejectedShare: number
  /** 100 · |measured − predicted| / predicted for the backend-rejected share. */
  readonly steadyErrorPct: number
  /** The throttle's probability for the client's level when the run ends (0 without throttle). */
  readonly finalProbability: number
  /** K for the client's level. */
  readonly k: number
  readonly elapsedMillis: number
  readonly timeSeries: Simulation.TimeSeries
}

const KEY = "backend"

/** The formula's steady state for a backend that can accept `a` of the offered load. */
export const predictedShares = (a: number, k: number, maxProbability: number): Shares => {
  const p = Math.min(maxProbability, Math.max(0, 1 - k * a))
  // K ≥ 1 keeps 1 − p ≥ a, so the backend is still offered at least what it can accept.
  return { throttled: p, rejected: Math.max(0, 1 - p - a), accepted: Math.min(a, 1 - p) }
}

export const runThrottleScenario = (
  options: ThrottleScenarioOptions = {}
): Effect.Effect<ThrottleScenarioReport, Options.InvalidOptions> =>
  Effect.gen(function* () {
    const offered = options.offeredPerSecond ?? 100
    const acceptShare = options.acceptShare ?? 0.3
    const level = options.criticality ?? "CRITICAL"
    const useThrottle = options.throttle ?? true
    const durationSeconds = options.durationSeconds ?? 600
    const warmupSeconds = options.warmupSeconds ?? 240
    const travel = Duration.millis(options.travelMillis ?? 20)
    const capacityPerSecond = acceptShare * offered

    const total = Math.round(offered * durationSeconds)
    const firstMeasured = Math.round(offered * warmupSeconds)
    const gap = Duration.millis(1000 / offered)
    const counts = { throttled: 0, rejected: 0, accepted: 0 }
    const steadyCounts = { throttled: 0, rejected: 0, accepted: 0 }

    const program = Effect.gen(function* () {
      // Built inside the run, so its peek reads the virtual Clock.
      const throttle = yield* AdaptiveThrottle.make({ k: options.k ?? 2 })
      const recorder = yield* Simulation.Recorder
      const record = {
        throttled: recorder.counterUnsafe("throttled"),
        rejected: recorder.counterUnsafe("rejected"),
        accepted: recorder.counterUnsafe("accepted")
      }
      recorder.gaugeUnsafe("probability", () => (useThrottle ? throttle.probabilityUnsafe(KEY, level) : 0))

      let second = Number.NaN
      let used = 0
      const backend = Effect.andThen(
        Effect.sleep(travel),
        Effect.flatMap(Clock.currentTimeMillis, (now) => {
          const s = Math.floor(now / 1000)
          if (s !== second) {
            second = s
            used = 0
          }
          if (used < capacityPerSecond) {
            used++
            return Effect.void
          }
          return Effect.fail(new Errors.Overloaded({ reason: "capacity" }))
        })
      )
      const call = useThrottle ? throttle.withThrottle(backend, KEY) : backend

      let inFlight = 0
      const one = (measured: boolean) =>
        Effect.map(Effect.exit(call), (exit) => {
          inFlight--
          const outcome: keyof typeof counts = Exit.isSuccess(exit)
            ? "accepted"
            : Cause.findErrorOption(exit.cause).pipe(Option.exists((error) => error._tag === "Throttled"))
              ? "throttled"
              : "rejected"
          counts[outcome]++
          record[outcome]()
          if (measured) steadyCounts[outcome]++
        })

      for (let i = 0; i < total; i++) {
        inFlight++
        yield* Effect.forkDetach(one(i >= firstMeasured))
        yield* Effect.sleep(gap)
      }
      while (inFlight > 0) yield* Effect.sleep(travel)
      return {
        k: throttle.k(level),
        maxProbability: throttle.maxProbability,
        finalProbability: useThrottle ? throttle.probabilityUnsafe(KEY, level) : 0
      }
    }).pipe(Criticality.withCriticality(level))

    const result = yield* Simulation.run(program, {
      seed: options.seed ?? 1,
      resolution: "1 second",
      onProgress: options.onProgress
    })
    if (Exit.isFailure(result.exit)) return yield* Effect.failCause(result.exit.cause)
    const { finalProbability, k, maxProbability } = result.exit.value

    const steadyRequests = total - firstMeasured
    const steady: Shares = {
      throttled: steadyCounts.throttled / steadyRequests,
      rejected: steadyCounts.rejected / steadyRequests,
      accepted: steadyCounts.accepted / steadyRequests
    }
    const predicted = useThrottle
      ? predictedShares(acceptShare, k, maxProbability)
      : { throttled: 0, rejected: 1 - acceptShare, accepted: acceptShare }
    return {
      offered: total,
      ...counts,
      steadyRequests,
      steady,
      predicted,
      baselineRejectedShare: 1 - acceptShare,
      steadyErrorPct:
        predicted.rejected > 0
          ? (100 * Math.abs(steady.rejected - predicted.rejected)) / predicted.rejected
          : 100 * steady.rejected,
      finalProbability,
      k,
      elapsedMillis: result.elapsedMillis,
      timeSeries: result.timeSeries
    }
  })

/**
 * The client of the `throttle` scenario is built in: requests go through
 * `AdaptiveThrottle` (K = 2, window 2 minutes, cap 0.9) straight to the backend,
 * with no retries, so what is measured is the formula alone.
 */
export const throttleStrategy: Strategy = {
  name: "adaptive-throttle",
  description: "AdaptiveThrottle (K = 2, 2-minute window, cap 0.9) in front of the backend, no retries",
  make: () => Effect.die(new Error("the throttle scenario builds its own client"))
}

/** `npm run sim -- --scenario throttle --json` */
export const throttleScenario: Scenario = {
  name: "throttle",
  description:
    "100 requests/s to a backend that accepts 30% of them, through AdaptiveThrottle; steady state measured after 240 s of 600 s",
  builtInStrategy: throttleStrategy,
  run: (_strategy, options) =>
    Effect.map(
      runThrottleScenario({
        ...(typeof options.seed === "number" ? { seed: options.seed } : {}),
        ...(options.onProgress !== undefined ? { onProgress: options.onProgress } : {})
      }),
      (r) => ({
        operations: r.offered,
        succeeded: r.accepted,
        // attempts are the requests that reached the backend; throttled ones never left the client
        attempts: r.accepted + r.rejected,
        failedAttempts: r.rejected,
        // an open-loop, fixed-length run has no optimal completion: both are its length
        completionMillis: r.elapsedMillis,
        optimalMillis: r.elapsedMillis,
        steadyErrorPct: r.steadyErrorPct,
        timeSeries: r.timeSeries,
        detail: { ...r, timeSeries: undefined }
      })
    )
}

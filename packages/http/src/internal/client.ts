import { AdaptiveThrottle, ConcurrencyLimiter } from "@sluice/adaptive"
import { Admission, Criticality, Errors, Options } from "@sluice/core"
import * as BoundedMap from "@sluice/core/shared/BoundedMap"
import * as Meters from "@sluice/core/shared/Meters"
import { Hedge, Retry, RetryBudget } from "@sluice/retry"
import * as AttemptBound from "@sluice/kernel/deadline/AttemptBound"
import * as Propagation from "@sluice/kernel/deadline/Propagation"
import * as Stall from "@sluice/kernel/deadline/Stall"
import * as Headers from "@sluice/kernel/wire/Headers"
import * as Outgoing from "@sluice/kernel/wire/Outgoing"
import * as Verdict from "@sluice/kernel/wire/Verdict"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as HttpClient from "effect/http/HttpClient"
import type * as HttpClientError from "effect/http/HttpClientError"
import * as HttpClientRequest from "effect/http/HttpClientRequest"
import type * as HttpClientResponse from "effect/http/HttpClientResponse"
import type * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { WireProtocol, type WireProtocolSettings } from "../Protocol.js"
import type { DecodeError } from "../ResponseDecoder.js"
import type * as C from "../SluiceHttpClient.js"
import { ThrottleSignal } from "../ThrottleSignal.js"
import * as decoder from "./responseDecoder.js"

const StatusCode = Schema.Int.check(Schema.isBetween({ minimum: 400, maximum: 599 }))

/** @internal */
export const ClientOptionsSchema = Schema.Struct({
  maxAttempts: Options.PositiveInt.pipe(Schema.withDecodingDefaultType(Effect.succeed(3))),
  maxRetryAfter: Options.NonNegativeDuration.pipe(
    Schema.withDecodingDefaultType(Effect.succeed(Duration.seconds(10)))
  ),
  timeout: Schema.optional(Options.PositiveDuration),
  attemptTimeout: Schema.optional(Options.PositiveDuration),
  retryNonIdempotent: Schema.Boolean.pipe(Schema.withDecodingDefaultType(Effect.succeed(false))),
  throttleFromJson: Schema.Boolean.pipe(Schema.withDecodingDefaultType(Effect.succeed(false))),
  name: Schema.String.pipe(Schema.withDecodingDefaultType(Effect.succeed("sluice-http"))),
  retryableStatuses: Schema.Array(StatusCode).pipe(
    Schema.withDecodingDefaultType(Effect.succeed(Verdict.DEFAULT_RETRYABLE_STATUSES))
  ),
  errorBodyTimeout: Options.PositiveDuration.pipe(
    Schema.withDecodingDefaultType(Effect.succeed(Duration.seconds(1)))
  ),
  limitPerCriticality: Schema.Boolean.pipe(Schema.withDecodingDefaultType(Effect.succeed(true)))
})

/** @internal */
export const allowRetries: Context.Reference<boolean | undefined> = Context.Reference<boolean | undefined>(
  "@sluice/http/SluiceHttpClient/allowRetries",
  { defaultValue: () => undefined }
)

/** Hosts whose composed guards are kept (as many as the throttle's and limiter's default `maxKeys`). */
const MAX_HOSTS = 1024

const degradedTotal = Meters.counter(
  "sluice_http_client_degraded",
  "responses a server marked as degraded answers (x-sluice-degraded), by host"
)

const throttleSignalsTotal = Meters.counter(
  "sluice_http_client_throttle_signals",
  "responses carrying the throttle flag, by host"
)

/**
 * The current call's start: the Clock time it began, as long as it has not waited for a
 * limiter permit (`Infinity` once it has). A cell per call, so that a wait noted inside the
 * policies' own scopes (which restore the context they were given when they end) is still
 * seen by the exchange that follows it.
 */
interface CallStart {
  unwaitedSince: number
}

const currentCall = Context.Reference<CallStart | undefined>("@sluice/http/SluiceHttpClient/currentCall", {
  defaultValue: () => undefined
})

const noteWait = Effect.withFiber((fiber) => {
  const call = fiber.getRef(currentCall)
  if (call !== undefined) call.unwaitedSince = Infinity
  return Effect.void
})

/**
 * A limiter's gate that notes on the calling fiber when the call queues for its permit
 * (the waiting path only: the uncontended path is the gate's own).
 */
const noticingWaits = <T, E>(gate: Admission.Gate<T, E>): Admission.Gate<T, E> => ({
  tryEnter: gate.tryEnter,
  enter: (entry) => Effect.andThen(noteWait, gate.enter(entry)),
  settle: gate.settle,
  isDrop: gate.isDrop
})

/**
 * One turn of the event loop's I/O: a `setImmediate` callback runs after the poll phase, so an
 * answer already in the socket has been read (and its exchange settled) when it resumes. Not a
 * timer and not time: `Clock.sleep(0)` only yields to other fibers.
 */
const ioTurn: Effect.Effect<void> = Effect.callback<void>((resume) => {
  const handle = setImmediate(() => resume(Effect.void))
  return Effect.sync(() => clearImmediate(handle))
})

/** The Clock's monotonic time in fractional milliseconds: a deadline is elapsed time. */
const monotonicMillis = (clock: Clock.Clock): number => Number(clock.monotonicTimeNanosUnsafe()) / 1e6

/** A request through its host's gates, under the retry policy or the one-try policy. */
type Guard = (
  self: Effect.Effect<HttpClientResponse.HttpClientResponse, AttemptError>
) => Effect.Effect<HttpClientResponse.HttpClientResponse, C.ClientError>

/** What the client keeps per host: its two guards (retried requests, requests tried once) and how it decodes. */
interface Host {
  readonly retried: Guard
  readonly once: Guard
  /** Retried requests of the hedged methods, when the client hedges. */
  readonly hedged: Guard | undefined
  /** When an attempt to the host last failed (Clock epoch ms): hedging pauses after it. */
  readonly failedAt: { at: number }
  readonly decoding: decoder.DecodeOptions
  readonly degraded: Metric.Counter<number>
}

/** @internal */
export const hostOf = (request: HttpClientRequest.HttpClientRequest): string => Outgoing.hostOf(request.url)

const markTransport = (error: HttpClientError.HttpClientError): HttpClientError.HttpClientError =>
  error.reason._tag === "TransportError" ? Errors.markRetryable(error) : error

type AttemptError =
  HttpClientError.HttpClientError | DecodeError | Errors.Overloaded | Errors.Throttled | Cause.TimeoutError

type ResolvedOptions = typeof ClientOptionsSchema.Type

/** The policy instances one client runs its requests through (`undefined`: off). */
interface Policies {
  readonly throttle: AdaptiveThrottle.Service | undefined
  readonly limiters: ConcurrencyLimiter.Service | undefined
  readonly budgets: RetryBudget.Service | undefined
}

// The functions (`key`, `schedule`), the hedging options (`Hedge.make`) and the private policies'
// options (`makeDefault`) are checked where they are used: declared here so that they are options
// and any other key is not.
const byHand = {
  key: Schema.optional(Schema.Unknown),
  schedule: Schema.optional(Schema.Unknown),
  hedge: Schema.optional(Schema.Unknown)
}
const decodeClient = Options.decode(
  "SluiceHttpClient",
  Schema.Struct({ ...ClientOptionsSchema.fields, ...byHand })
)
const decodeDefault = Options.decode(
  "SluiceHttpClient",
  Schema.Struct({
    ...ClientOptionsSchema.fields,
    ...byHand,
    budget: Schema.optional(Schema.Unknown),
    throttle: Schema.optional(Schema.Unknown),
    limiter: Schema.optional(Schema.Unknown)
  })
)
const decodeOptions = (
  options: C.ClientOptions,
  withPolicies = false
): Effect.Effect<ResolvedOptions, Options.InvalidOptions> =>
  (withPolicies ? decodeDefault : decodeClient)(options) as Effect.Effect<
    ResolvedOptions,
    Options.InvalidOptions
  >

/** Options of `makeDefault` that configure private policy instances. */
const POLICY_FIELDS = ["budget", "throttle", "limiter"] as const

/**
 * A client built from the policy services in context: the app's own `RetryBudget`,
 * `AdaptiveThrottle` and `ConcurrencyLimiter`, shared with whatever else uses them.
 *
 * @internal
 */
export const make = (
  options: C.ClientOptions = {}
): Effect.Effect<
  C.Client,
  Options.InvalidOptions,
  | HttpClient.HttpClient
  | AdaptiveThrottle.AdaptiveThrottle
  | ConcurrencyLimiter.ConcurrencyLimiter
  | RetryBudget.RetryBudget
> =>
  Effect.gen(function* () {
    // Policy options given here would be silently ignored (they configure the services
    // in context, or private ones in `makeDefault`): say so instead.
    const misplaced = POLICY_FIELDS.find((field) => (options as Record<string, unknown>)[field] !== undefined)
    if (misplaced !== undefined) {
      return yield* Options.invalid("SluiceHttpClient", [
        {
          path: [misplaced],
          message:
            `the policies come from context here: configure the ${misplaced} service's own layer, ` +
            `or use layerDefault / makeDefault for private ones`
        }
      ])
    }
    const config = yield* decodeOptions(options)
    return yield* build(options, config, {
      throttle: yield* AdaptiveThrottle.AdaptiveThrottle,
      limiters: yield* ConcurrencyLimiter.ConcurrencyLimiter,
      budgets: yield* RetryBudget.RetryBudget
    })
  })

/**
 * A client with its own private policy instances, built from `options`.
 *
 * @internal
 */
export const makeDefault = (
  options: C.DefaultOptions = {}
): Effect.Effect<C.Client, Options.InvalidOptions, HttpClient.HttpClient> =>
  Effect.gen(function* () {
    const config = yield* decodeOptions(options, true)
    return yield* build(options, config, {
      throttle: options.throttle === false ? undefined : yield* AdaptiveThrottle.make(options.throttle ?? {}),
      // Newest first: under overload the waiters that have waited longest have the least of
      // their callers' time left, and one sent late holds a server's slot for an answer its
      // caller stops waiting for; the newest still has its whole deadline.
      limiters:
        options.limiter === false
          ? undefined
          : yield* ConcurrencyLimiter.makeService({ order: "lifo", ...options.limiter }),
      budgets: options.budget === false ? undefined : yield* RetryBudget.make(options.budget ?? {})
    })
  })

/** How long hedging to a host pauses after an attempt to it failed. */
const HEDGE_PAUSE_AFTER_FAILURE_MS = 5_000

/** The methods hedged by default: reads, whose second copy costs the backend nothing but work. */
const HEDGED_METHODS: ReadonlyArray<string> = ["GET", "HEAD"]

const build = (
  options: C.ClientOptions,
  config: ResolvedOptions,
  policies: Policies
): Effect.Effect<C.Client, Options.InvalidOptions, HttpClient.HttpClient> =>
  Effect.gen(function* () {
    const platform = yield* HttpClient.HttpClient
    const settings: WireProtocolSettings = yield* WireProtocol
    const signals = Option.getOrUndefined(yield* Effect.serviceOption(ThrottleSignal))
    const { throttle, limiters } = policies
    const budget = policies.budgets?.forKey(config.name)
    const keyOf = options.key ?? hostOf
    const names = settings.headers
    const timeout = config.timeout === undefined ? undefined : Duration.toMillis(config.timeout)
    const attemptTimeout = AttemptBound.attemptTimeout(
      config.attemptTimeout === undefined ? undefined : Duration.toMillis(config.attemptTimeout),
      timeout
    )
    // The throttle counts a request before its call and files the outcome with it: an attempt
    // that may outlast the window would settle after its request had left it (go-zero #5011).
    if (
      throttle !== undefined &&
      Number.isFinite(attemptTimeout) &&
      attemptTimeout > Duration.toMillis(throttle.window)
    )
      return yield* Effect.fail(
        new Options.InvalidOptions({
          module: "SluiceHttpClient",
          message: `SluiceHttpClient: attemptTimeout (${attemptTimeout} ms) must not exceed the throttle's window (${Duration.toMillis(throttle.window)} ms), or an attempt's outcome could come after its request left the window`
        })
      )
    const retryable: ReadonlySet<number> = new Set(config.retryableStatuses)
    const errorBodyTimeout = config.errorBodyTimeout
    const json = config.throttleFromJson
    const policyOptions = {
      maxAttempts: config.maxAttempts,
      maxRetryAfter: config.maxRetryAfter,
      name: config.name,
      ...(options.schedule !== undefined ? { schedule: options.schedule } : {}),
      ...(budget !== undefined ? { budget } : {})
    }
    const retrying = Retry.makeUnsafe(policyOptions)
    const { methods: hedgedMethods, ...hedgeOptions } = options.hedge ?? {}
    const hedging =
      options.hedge === undefined
        ? undefined
        : yield* Hedge.make({ ...hedgeOptions, policy: retrying, name: config.name })
    const hedgedSet: ReadonlySet<string> = new Set(
      (hedgedMethods ?? HEDGED_METHODS).map((m) => m.toUpperCase())
    )
    // Requests that are not retried go through the same gates and still count as
    // requests in the budget's ratio.
    const once = Retry.makeUnsafe({
      maxAttempts: 1,
      isRetryable: () => false,
      name: config.name,
      ...(budget !== undefined ? { budget } : {})
    })
    // Every request is `policy.around(gates)`: the host's throttle gate, then its limiter
    // gate (each when configured); the limiter's gate notes a wait for a permit, which the
    // exchange's bound depends on. A host's composed guards, and the series of its throttle
    // signals, are kept (bounded) because building them allocates closures, handlers and
    // attribute sets the success path would otherwise pay for on every request.
    //
    // With `limitPerCriticality` a host's guards are kept per level, the throttle and the
    // limiter each keyed `host/LEVEL`: a server that sheds by priority refuses the least
    // critical work while it still admits the rest, so a shed of one level says nothing
    // about the room left for a more critical one. Shared, those sheds shrink the window
    // and raise the throttle's refusals for every level, and the critical work waits
    // behind them until its deadline.
    const perLevel = config.limitPerCriticality
    const hosts = BoundedMap.make<string, Host>({ capacity: MAX_HOSTS })
    const hostFor = (entry: string): Host => {
      const cut = perLevel ? entry.lastIndexOf("/") : -1
      const key = cut < 0 ? entry : entry.slice(0, cut)
      const gates: Array<Admission.Gate<any, Errors.Throttled | Errors.Overloaded>> = []
      if (throttle !== undefined) gates.push(throttle.gate(entry))
      if (limiters !== undefined) gates.push(noticingWaits(limiters.gate(entry)))
      const throttleSignals = throttleSignalsTotal.of({ host: key })
      // No hedge while the backend's last answer carried the throttle signal, for a while after
      // any attempt to it failed, or while the client's own throttle rejects any of its
      // requests: a hedge is for a healthy backend, and overload shows first as failures.
      let signalled = false
      const failedAt = { at: Number.NEGATIVE_INFINITY }
      const paused = (now: number): boolean =>
        signalled ||
        now - failedAt.at < HEDGE_PAUSE_AFTER_FAILURE_MS ||
        (throttle !== undefined && throttle.probabilityUnsafe(entry) > 0)
      return {
        retried: retrying.around(gates),
        once: once.around(gates),
        degraded: degradedTotal.of({ host: key }),
        hedged: hedging?.around(gates, paused),
        failedAt,
        decoding: {
          retryableStatuses: retryable,
          bodyTimeout: errorBodyTimeout,
          onThrottle: (throttled) => {
            signalled = throttled
            // Called while the exchange's fiber decodes: its registry holds the series.
            if (throttled) throttleSignals.updateUnsafe(1, Fiber.getCurrent()?.context ?? Context.empty())
            if (signals !== undefined) signals.publishUnsafe(key, throttled)
          }
        }
      }
    }

    // The last time this client read an answer (monotonic ms): the process was running then, so
    // a timer that fires late after it has not stalled that long (`Stall.stalledFor`).
    let answeredAt = -Infinity

    /**
     * `self`, failed with `expire(stalledMs)` if it has not ended `millis` from now. A timer
     * that fires late because this process did not run (`Stall`) may find the answer unread in
     * the socket: one I/O turn lets the exchange read it and win first. A miss still left after
     * a stall at least as long as `millis` (`Stall.isOwnMiss`) is `expire`d with how long the process
     * stalled, for the caller to decide as its own (never a backend's drop); `stalledMs` is 0
     * for the remote side's miss.
     */
    const expireAfter = <A, E, R, E2>(
      self: Effect.Effect<A, E, R>,
      clock: Clock.Clock,
      millis: number,
      expire: (stalledMs: number) => E2
    ): Effect.Effect<A, E | E2, R> => {
      const dueAt = monotonicMillis(clock) + millis
      const timer = Effect.flatMap(clock.sleep(Duration.millis(millis)), () => {
        const stalled = Stall.stalledFor(monotonicMillis(clock), dueAt, answeredAt)
        if (!Stall.isStall(stalled)) return Effect.fail(expire(0))
        return Effect.andThen(ioTurn, Effect.fail(expire(Stall.isOwnMiss(stalled, millis) ? stalled : 0)))
      })
      return Effect.raceFirst(self, timer)
    }

    const attemptExpired = (bound: number) => (stalledMs: number) =>
      stalledMs === 0
        ? new Cause.TimeoutError(`attempt timed out after ${bound} ms`)
        : new Errors.Overloaded({
            reason: `attempt timed out after ${bound} ms while this process stalled for ${Math.round(stalledMs)} ms`,
            origin: "local"
          })

    const exchange = (
      request: HttpClientRequest.HttpClientRequest,
      host: Host
    ): Effect.Effect<HttpClientResponse.HttpClientResponse, AttemptError> =>
      Effect.withFiber((fiber) => {
        // Inside the retry loop: the attempt number is the policy's, the level the caller's.
        const attempt = fiber.getRef(Retry.currentAttempt)
        const deadline = fiber.getRef(Retry.currentDeadline)
        const clock = fiber.getRef(Clock.Clock)
        const now = clock.currentTimeMillisUnsafe()
        const headers: Record<string, string> = {
          [names.criticality]: fiber.getRef(Criticality.currentCriticality),
          [names.attempt]: String(attempt)
        }
        // The time left of the call's deadline travels with the attempt, relative so that the
        // server's clock need not agree with ours: the server stops working for us once we
        // have given up.
        const timed = deadline !== Infinity || attemptTimeout !== Infinity
        const left = Propagation.outgoing(deadline, now)
        if (left !== undefined) headers[names.deadline] = left
        const outgoing = HttpClientRequest.setHeaders(request, headers)
        const send: Effect.Effect<HttpClientResponse.HttpClientResponse, AttemptError> = Effect.flatMap(
          Effect.mapError(platform.execute(outgoing), markTransport),
          (response) => {
            // Only a timer judges stalls by it: the attempt's own bound, or the call's deadline
            // (its timeout's, or an enclosing caller's that a client without a timeout inherits).
            if (timed) answeredAt = monotonicMillis(clock)
            if (names.degraded in response.headers && Headers.parseFlag(response.headers[names.degraded]))
              host.degraded.updateUnsafe(1, fiber.context)
            return Effect.as(decoder.decode(response, settings, json, host.decoding), response)
          }
        )
        // The attempt's own bound, or none under a deadline that was partly spent waiting
        // (`AttemptBound.attempt`): then the deadline's timer interrupts the exchange.
        const bound = AttemptBound.attempt({
          attemptTimeout,
          deadline,
          now,
          unwaitedSince: fiber.getRef(currentCall)?.unwaitedSince ?? Infinity,
          attempt
        })
        // A miss of the attempt's bound is a drop (`Cause.TimeoutError`), unless the timer found
        // this process stalled: then it is a local refusal, which teaches no policy.
        const sent = bound === undefined ? send : expireAfter(send, clock, bound, attemptExpired(bound))
        return host.hedged === undefined
          ? sent
          : Effect.tapError(sent, () =>
              Effect.sync(() => {
                host.failedAt.at = clock.currentTimeMillisUnsafe()
              })
            )
      })

    const execute = (request: HttpClientRequest.HttpClientRequest) =>
      Effect.withFiber<HttpClientResponse.HttpClientResponse, C.ClientError>((fiber) => {
        const retry = Outgoing.isRetried(
          request.method,
          fiber.getRef(allowRetries),
          config.retryNonIdempotent
        )
        const host = hosts.getOrCreate(
          perLevel ? `${keyOf(request)}/${fiber.getRef(Criticality.currentCriticality)}` : keyOf(request),
          hostFor
        )
        const guard = retry
          ? host.hedged !== undefined && hedgedSet.has(request.method)
            ? host.hedged
            : host.retried
          : host.once
        const call = guard(exchange(request, host))
        // Without a timeout of its own, a call still lives under an enclosing deadline (a
        // caller's, or the one a Sluice server read from its request): nothing is sent for a
        // caller that has given up.
        const enclosing = fiber.getRef(Retry.currentDeadline)
        if (timeout === undefined && enclosing === Infinity) return call
        // `timeout` bounds the whole call: the wait for a permit, every attempt, the backoff
        // between them and any error body. An exchange given its whole attempt bound times
        // out at the deadline itself; this timer, a little later, interrupts whatever is
        // still waiting or was sent with less time than that. The deadline is also the
        // retry policy's: no retry is scheduled that could not start before it. An
        // enclosing caller's earlier deadline stays the one that counts.
        const clock = fiber.getRef(Clock.Clock)
        const now = clock.currentTimeMillisUnsafe()
        const { deadline, left, timer } = AttemptBound.call(now, timeout ?? Infinity, enclosing)
        const bounded = call.pipe(
          Effect.provideService(currentCall, { unwaitedSince: now }),
          Effect.provideService(Retry.currentDeadline, deadline)
        )
        // A deadline already spent (an enclosing caller's) sends nothing.
        if (left === 0)
          return Effect.fail(
            new Errors.DontRetry({
              reason: "timeout",
              cause: new Errors.Overloaded({ reason: `deadline of ${left} ms`, origin: "local" })
            })
          )
        return expireAfter(
          bounded,
          clock,
          timer,
          (stalledMs) =>
            new Errors.DontRetry({
              reason: "timeout",
              cause: new Errors.Overloaded({
                reason:
                  stalledMs === 0
                    ? `deadline of ${left} ms`
                    : `deadline of ${left} ms, missed while this process stalled for ${Math.round(stalledMs)} ms`,
                origin: "local"
              })
            })
        )
      })

    return HttpClient.makeWith<never, never, C.ClientError, never>(
      (effect) => Effect.flatMap(effect, execute),
      Effect.succeed
    )
  })

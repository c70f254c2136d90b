import { AdaptiveThrottle, ConcurrencyLimiter } from "@sluice/adaptive"
import { Admission, BoundedMap, Criticality, Errors, Meters, Options } from "@sluice/core"
import { Hedge, Retry, RetryBudget } from "@sluice/retry"
import * as AttemptBound from "@sluice/kernel/deadline/AttemptBound"
import * as Outgoing from "@sluice/kernel/wire/Outgoing"
import * as Verdict from "@sluice/kernel/wire/Verdict"
import type * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as HttpClient from "effect/http/HttpClient"
import type * as HttpClientError from "effect/http/HttpClientError"
import * as HttpClientRequest from "effect/http/HttpClientRequest"
import type * as HttpClientResponse from "effect/http/HttpClientResponse"
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
  )
})

/** @internal */
export const allowRetries: Context.Reference<boolean | undefined> = Context.Reference<boolean | undefined>(
  "@sluice/http/SluiceHttpClient/allowRetries",
  { defaultValue: () => undefined }
)

/** Hosts whose composed guards are kept (as many as the throttle's and limiter's default `maxKeys`). */
const MAX_HOSTS = 1024

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

// The policies' options and the functions (`key`, `schedule`) are not the schema's: decoding
// leaves them out.
const decodeOptions = (options: C.ClientOptions): Effect.Effect<ResolvedOptions, Options.InvalidOptions> =>
  Options.decode("SluiceHttpClient", ClientOptionsSchema)(options)

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
      return yield* new Options.InvalidOptions({
        module: "SluiceHttpClient",
        message:
          `SluiceHttpClient: invalid options\n└─ ["${misplaced}"]\n   └─ the policies come from context here: ` +
          `configure the ${misplaced} service's own layer, or use layerDefault / makeDefault for private ones`
      })
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
    const config = yield* decodeOptions(options)
    return yield* build(options, config, {
      throttle: options.throttle === false ? undefined : yield* AdaptiveThrottle.make(options.throttle ?? {}),
      limiters:
        options.limiter === false ? undefined : yield* ConcurrencyLimiter.makeService(options.limiter ?? {}),
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
    const retrying = Retry.unsafeMake(policyOptions)
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
    const once = Retry.unsafeMake({
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
    const hosts = BoundedMap.make<string, Host>({ capacity: MAX_HOSTS })
    const hostFor = (key: string): Host => {
      const gates: Array<Admission.Gate<any, Errors.Throttled | Errors.Overloaded>> = []
      if (throttle !== undefined) gates.push(throttle.gate(key))
      if (limiters !== undefined) gates.push(noticingWaits(limiters.gate(key)))
      const throttleSignals = throttleSignalsTotal.of({ host: key })
      // No hedge while the backend's last answer carried the throttle signal, for a while after
      // any attempt to it failed, or while the client's own throttle rejects any of its
      // requests: a hedge is for a healthy backend, and overload shows first as failures.
      let signalled = false
      const failedAt = { at: Number.NEGATIVE_INFINITY }
      const paused = (now: number): boolean =>
        signalled ||
        now - failedAt.at < HEDGE_PAUSE_AFTER_FAILURE_MS ||
        (throttle !== undefined && throttle.unsafeProbability(key) > 0)
      return {
        retried: retrying.around(gates),
        once: once.around(gates),
        hedged: hedging?.around(gates, paused),
        failedAt,
        decoding: {
          retryableStatuses: retryable,
          bodyTimeout: errorBodyTimeout,
          onThrottle: (throttled) => {
            signalled = throttled
            // Called while the exchange's fiber decodes: its registry holds the series.
            if (throttled) throttleSignals.updateUnsafe(1, Fiber.getCurrent()?.context ?? Context.empty())
            if (signals !== undefined) signals.unsafePublish(key, throttled)
          }
        }
      }
    }

    const exchange = (
      request: HttpClientRequest.HttpClientRequest,
      host: Host
    ): Effect.Effect<HttpClientResponse.HttpClientResponse, AttemptError> =>
      Effect.withFiber((fiber) => {
        // Inside the retry loop: the attempt number is the policy's, the level the caller's.
        const attempt = fiber.getRef(Retry.currentAttempt)
        const outgoing = HttpClientRequest.setHeaders(request, {
          [names.criticality]: fiber.getRef(Criticality.currentCriticality),
          [names.attempt]: String(attempt)
        })
        const send: Effect.Effect<HttpClientResponse.HttpClientResponse, AttemptError> = Effect.flatMap(
          Effect.mapError(platform.execute(outgoing), markTransport),
          (response) => Effect.as(decoder.decode(response, settings, json, host.decoding), response)
        )
        // The attempt's own bound, or none under a deadline that was partly spent waiting
        // (`AttemptBound.attempt`): then the deadline's timer interrupts the exchange.
        const bound = AttemptBound.attempt({
          attemptTimeout,
          deadline: fiber.getRef(Retry.currentDeadline),
          now: fiber.getRef(Clock.Clock).currentTimeMillisUnsafe(),
          unwaitedSince: fiber.getRef(currentCall)?.unwaitedSince ?? Infinity,
          attempt
        })
        const sent = bound === undefined ? send : Effect.timeout(send, Duration.millis(bound))
        return host.hedged === undefined
          ? sent
          : Effect.tapError(sent, () =>
              Effect.sync(() => {
                host.failedAt.at = fiber.getRef(Clock.Clock).currentTimeMillisUnsafe()
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
        const host = hosts.getOrCreate(keyOf(request), hostFor)
        const guard = retry
          ? host.hedged !== undefined && hedgedSet.has(request.method)
            ? host.hedged
            : host.retried
          : host.once
        const call = guard(exchange(request, host))
        if (timeout === undefined) return call
        // `timeout` bounds the whole call: the wait for a permit, every attempt, the backoff
        // between them and any error body. An exchange given its whole attempt bound times
        // out at the deadline itself; this timer, a little later, interrupts whatever is
        // still waiting or was sent with less time than that. The deadline is also the
        // retry policy's: no retry is scheduled that could not start before it. An
        // enclosing caller's earlier deadline stays the one that counts.
        const now = fiber.getRef(Clock.Clock).currentTimeMillisUnsafe()
        const { deadline, left, timer } = AttemptBound.call(now, timeout, fiber.getRef(Retry.currentDeadline))
        const bounded = call.pipe(
          Effect.provideService(currentCall, { unwaitedSince: now }),
          Effect.provideService(Retry.currentDeadline, deadline)
        )
        return Effect.timeoutOrElse(bounded, {
          duration: Duration.millis(timer),
          orElse: () =>
            Effect.fail(
              new Errors.DontRetry({
                reason: "timeout",
                cause: new Errors.Overloaded({ reason: `deadline of ${left} ms`, origin: "local" })
              })
            )
        })
      })

    return HttpClient.makeWith<never, never, C.ClientError, never>(
      (effect) => Effect.flatMap(effect, execute),
      Effect.succeed
    )
  })

import * as HttpClient from "@effect/platform/HttpClient"
import type * as HttpClientError from "@effect/platform/HttpClientError"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import type * as HttpClientResponse from "@effect/platform/HttpClientResponse"
import { AdaptiveThrottle, ConcurrencyLimiter } from "@sluice/adaptive"
import { Admission, BoundedMap, Criticality, Errors, Options } from "@sluice/core"
import { Retry, RetryBudget } from "@sluice/retry"
import * as AttemptBound from "@sluice/kernel/deadline/AttemptBound"
import * as Outgoing from "@sluice/kernel/wire/Outgoing"
import * as Verdict from "@sluice/kernel/wire/Verdict"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import * as Layer from "effect/Layer"
import * as Metric from "effect/Metric"
import * as MetricLabel from "effect/MetricLabel"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { WireProtocol, type WireProtocolSettings } from "../Protocol.js"
import type { DecodeError } from "../ResponseDecoder.js"
import type * as C from "../SluiceHttpClient.js"
import { ThrottleSignal } from "../ThrottleSignal.js"
import * as decoder from "./responseDecoder.js"

/** @internal */
export const ClientOptionsSchema = Schema.Struct({
  maxAttempts: Schema.optionalWith(Options.PositiveInt, { default: () => 3 }),
  maxRetryAfter: Schema.optionalWith(Options.NonNegativeDuration, { default: () => Duration.seconds(10) }),
  timeout: Schema.optional(Options.PositiveDuration),
  attemptTimeout: Schema.optional(Options.PositiveDuration),
  retryNonIdempotent: Schema.optionalWith(Schema.Boolean, { default: () => false }),
  throttleFromJson: Schema.optionalWith(Schema.Boolean, { default: () => false }),
  name: Schema.optionalWith(Schema.String, { default: () => "sluice-http" }),
  retryableStatuses: Schema.optionalWith(Schema.Array(Schema.Int.pipe(Schema.between(400, 599))), {
    default: () => Verdict.DEFAULT_RETRYABLE_STATUSES
  }),
  errorBodyTimeout: Schema.optionalWith(Options.PositiveDuration, { default: () => Duration.seconds(1) })
})

/** @internal */
export const allowRetries: FiberRef.FiberRef<boolean | undefined> = FiberRef.unsafeMake<boolean | undefined>(
  undefined
)

/** Hosts whose composed guards are kept (as many as the throttle's and limiter's default `maxKeys`). */
const MAX_HOSTS = 1024

/**
 * The Clock time the current call began, as long as it has not waited for a limiter
 * permit; `Infinity` once it has, and outside a call with a deadline.
 */
const unwaitedSince: FiberRef.FiberRef<number> = FiberRef.unsafeMake(Infinity)

const noteWait = FiberRef.set(unwaitedSince, Infinity)

/**
 * A limiter's gate that notes on the calling fiber when the call queues for its permit
 * (the waiting path only: the uncontended path is the gate's own).
 */
const noticingWaits = <T, E>(gate: Admission.Gate<T, E>): Admission.Gate<T, E> => ({
  tryEnter: gate.tryEnter,
  enter: (entry) => Effect.zipRight(noteWait, gate.enter(entry)),
  settle: gate.settle,
  isDrop: gate.isDrop
})

/** A request through its host's gates, under the retry policy or the one-try policy. */
type Guard = (
  self: Effect.Effect<HttpClientResponse.HttpClientResponse, AttemptError>
) => Effect.Effect<HttpClientResponse.HttpClientResponse, C.ClientError>

/** The two guards of one host: retried requests and requests tried once. */
interface HostGuards {
  readonly retried: Guard
  readonly once: Guard
}

/** @internal */
export const hostOf = (request: HttpClientRequest.HttpClientRequest): string => Outgoing.hostOf(request.url)

const signalsCounter = Metric.counter("sluice_http_client_throttle_signals", {
  description: "responses carrying the throttle flag, by host",
  incremental: true
})

const markTransport = (error: HttpClientError.HttpClientError): HttpClientError.HttpClientError =>
  error._tag === "RequestError" && error.reason === "Transport" ? Errors.markRetryable(error) : error

type AttemptError =
  | HttpClientError.HttpClientError
  | DecodeError
  | Errors.Overloaded
  | Errors.Throttled
  | import("effect/Cause").TimeoutException

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

const build = (
  options: C.ClientOptions,
  config: ResolvedOptions,
  policies: Policies
): Effect.Effect<C.Client, never, HttpClient.HttpClient> =>
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
    // exchange's bound depends on. A host's composed guards are kept (bounded) because
    // composing them allocates closures and handlers the success path would otherwise pay
    // for on every request.
    const hosts = BoundedMap.make<string, HostGuards>({ capacity: MAX_HOSTS })
    const guardsOf = (key: string): HostGuards => {
      const gates: Array<Admission.Gate<any, Errors.Throttled | Errors.Overloaded>> = []
      if (throttle !== undefined) gates.push(throttle.gate(key))
      if (limiters !== undefined) gates.push(noticingWaits(limiters.gate(key)))
      return { retried: retrying.around(gates), once: once.around(gates) }
    }

    const decoding = (key: string): decoder.DecodeOptions => ({
      retryableStatuses: retryable,
      bodyTimeout: errorBodyTimeout,
      onThrottle: (throttled) => {
        if (throttled) signalsCounter.unsafeUpdate(1, [MetricLabel.make("host", key)])
        if (signals !== undefined) signals.unsafePublish(key, throttled)
      }
    })

    const exchange = (
      request: HttpClientRequest.HttpClientRequest,
      key: string
    ): Effect.Effect<HttpClientResponse.HttpClientResponse, AttemptError> =>
      Effect.withFiberRuntime((fiber) => {
        // Inside the retry loop: the attempt number is the policy's, the level the caller's.
        const outgoing = HttpClientRequest.setHeaders(request, {
          [names.criticality]: fiber.getFiberRef(Criticality.currentCriticality),
          [names.attempt]: String(fiber.getFiberRef(Retry.currentAttempt))
        })
        const send: Effect.Effect<HttpClientResponse.HttpClientResponse, AttemptError> = Effect.flatMap(
          Effect.mapError(platform.execute(outgoing), markTransport),
          (response) => Effect.as(decoder.decode(response, settings, json, decoding(key)), response)
        )
        // The attempt's own bound, or none under a deadline that was partly spent waiting
        // (`AttemptBound.attempt`): then the deadline's timer interrupts the exchange.
        const bound = AttemptBound.attempt({
          attemptTimeout,
          deadline: fiber.getFiberRef(Retry.currentDeadline),
          now: Context.get(fiber.currentDefaultServices, Clock.Clock).unsafeCurrentTimeMillis(),
          unwaitedSince: fiber.getFiberRef(unwaitedSince),
          attempt: fiber.getFiberRef(Retry.currentAttempt)
        })
        return bound === undefined ? send : Effect.timeout(send, Duration.millis(bound))
      })

    const guarded = (request: HttpClientRequest.HttpClientRequest, retry: boolean, key: string) => {
      const host = hosts.getOrCreate(key, guardsOf)
      return (retry ? host.retried : host.once)(exchange(request, key))
    }

    const execute = (request: HttpClientRequest.HttpClientRequest) =>
      Effect.withFiberRuntime<HttpClientResponse.HttpClientResponse, C.ClientError>((fiber) => {
        const retry = Outgoing.isRetried(
          request.method,
          fiber.getFiberRef(allowRetries),
          config.retryNonIdempotent
        )
        const key = keyOf(request)
        const call = guarded(request, retry, key)
        if (timeout === undefined) return call
        // `timeout` bounds the whole call: the wait for a permit, every attempt, the backoff
        // between them and any error body. An exchange given its whole attempt bound times
        // out at the deadline itself; this timer, a little later, interrupts whatever is
        // still waiting or was sent with less time than that. The deadline is also the
        // retry policy's: no retry is scheduled that could not start before it. An
        // enclosing caller's earlier deadline stays the one that counts.
        const now = Context.get(fiber.currentDefaultServices, Clock.Clock).unsafeCurrentTimeMillis()
        const { deadline, left, timer } = AttemptBound.call(
          now,
          timeout,
          fiber.getFiberRef(Retry.currentDeadline)
        )
        const bounded = Effect.locally(
          Effect.locally(call, unwaitedSince, now),
          Retry.currentDeadline,
          deadline
        )
        return Effect.timeoutFail(bounded, {
          duration: Duration.millis(timer),
          onTimeout: () =>
            new Errors.DontRetry({
              reason: "timeout",
              cause: new Errors.Overloaded({ reason: `deadline of ${left} ms`, origin: "local" })
            })
        })
      })

    return HttpClient.makeWith<never, never, C.ClientError, never>(
      (effect) => Effect.flatMap(effect, execute),
      Effect.succeed
    )
  })

/** @internal */
export const SluiceHttpClient = Context.GenericTag<C.SluiceHttpClient, C.Client>(
  "@sluice/http/SluiceHttpClient"
)

/** @internal */
export const layer = (
  options?: C.ClientOptions
): Layer.Layer<
  C.SluiceHttpClient,
  Options.InvalidOptions,
  | HttpClient.HttpClient
  | AdaptiveThrottle.AdaptiveThrottle
  | ConcurrencyLimiter.ConcurrencyLimiter
  | RetryBudget.RetryBudget
> => Layer.effect(SluiceHttpClient, make(options))

/** @internal */
export const layerDefault = (
  options?: C.DefaultOptions
): Layer.Layer<C.SluiceHttpClient, Options.InvalidOptions, HttpClient.HttpClient> =>
  Layer.effect(SluiceHttpClient, makeDefault(options))

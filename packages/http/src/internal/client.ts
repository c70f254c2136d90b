import * as HttpClient from "@effect/platform/HttpClient"
import type * as HttpClientError from "@effect/platform/HttpClientError"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import type * as HttpClientResponse from "@effect/platform/HttpClientResponse"
import { AdaptiveThrottle, ConcurrencyLimiter } from "@sluice/adaptive"
import { Criticality, Errors, Options } from "@sluice/core"
import { Retry, RetryBudget } from "@sluice/retry"
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
import * as ClientStack from "../ClientStack.js"
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
    default: () => decoder.DEFAULT_RETRYABLE_STATUSES
  }),
  errorBodyTimeout: Schema.optionalWith(Options.PositiveDuration, { default: () => Duration.seconds(1) })
})

/** @internal */
export const allowRetries: FiberRef.FiberRef<boolean | undefined> = FiberRef.unsafeMake<boolean | undefined>(
  undefined
)

const MAX_STACKS = 1024

/** The epoch millisecond by which the current call must end (set when `timeout` is). */
const callDeadline: FiberRef.FiberRef<number> = FiberRef.unsafeMake(Infinity)

/** How much later than the exchange's own timer the whole call's timer fires. */
const DEADLINE_GRACE_MILLIS = 2

/** @internal */
export const IDEMPOTENT: ReadonlySet<string> = new Set(["GET", "HEAD", "OPTIONS", "PUT", "DELETE", "TRACE"])

const HOST = /^[a-z][a-z0-9+.-]*:\/\/([^/?#]+)/i

/** @internal */
export const hostOf = (request: HttpClientRequest.HttpClientRequest): string => {
  const match = HOST.exec(request.url)
  return match === null ? "default" : match[1]!.toLowerCase()
}

const signalsCounter = Metric.counter("sluice_http_client_throttle_signals", {
  description: "responses carrying the throttle flag, by host",
  incremental: true
})

const markTransport = (error: HttpClientError.HttpClientError): HttpClientError.HttpClientError =>
  error._tag === "RequestError" && error.reason === "Transport" ? Errors.markRetryable(error) : error

type AttemptError =
  | HttpClientError.HttpClientError
  | decoder.DecodeError
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

const decodeOptions = (options: C.ClientOptions): Effect.Effect<ResolvedOptions, Options.InvalidOptions> =>
  Options.decode(
    "SluiceHttpClient",
    ClientOptionsSchema
  )({
    ...(options.maxAttempts !== undefined ? { maxAttempts: options.maxAttempts } : {}),
    ...(options.maxRetryAfter !== undefined ? { maxRetryAfter: options.maxRetryAfter } : {}),
    ...(options.timeout !== undefined ? { timeout: options.timeout } : {}),
    ...(options.attemptTimeout !== undefined ? { attemptTimeout: options.attemptTimeout } : {}),
    ...(options.retryNonIdempotent !== undefined ? { retryNonIdempotent: options.retryNonIdempotent } : {}),
    ...(options.throttleFromJson !== undefined ? { throttleFromJson: options.throttleFromJson } : {}),
    ...(options.name !== undefined ? { name: options.name } : {}),
    ...(options.retryableStatuses !== undefined ? { retryableStatuses: options.retryableStatuses } : {}),
    ...(options.errorBodyTimeout !== undefined ? { errorBodyTimeout: options.errorBodyTimeout } : {})
  })

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
    const attemptTimeout =
      config.attemptTimeout === undefined ? Infinity : Duration.toMillis(config.attemptTimeout)
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
    const retrying = Retry.policy(policyOptions)
    // With both the throttle and the limiter, a retried request runs through the fused
    // ClientStack of its host: the same composition (retry ∘ throttle ∘ limiter, same
    // service instances), with a first try that does its bookkeeping in one step.
    const stacks = new Map<string, ClientStack.ClientStack>()
    const stackFor = (key: string): ClientStack.ClientStack | undefined => {
      if (throttle === undefined || limiters === undefined) return undefined
      let stack = stacks.get(key)
      if (stack !== undefined) {
        // least recently used first: re-insert on use
        stacks.delete(key)
        stacks.set(key, stack)
        return stack
      }
      stack = ClientStack.make({ key, retry: policyOptions, throttle, limiter: limiters })
      if (stacks.size >= MAX_STACKS) stacks.delete(stacks.keys().next().value!)
      stacks.set(key, stack)
      return stack
    }
    // Requests that are not retried still count as requests in the budget's ratio.
    const notRetrying = Retry.policy({
      maxAttempts: 1,
      isRetryable: () => false,
      name: config.name,
      ...(budget !== undefined ? { budget } : {})
    })

    const publish = (key: string, throttled: boolean) => {
      if (throttled) signalsCounter.unsafeUpdate(1, [MetricLabel.make("host", key)])
      if (signals !== undefined) signals.unsafePublish(key, throttled)
    }

    // The error body is read for the server's error, bounded in time (a body that
    // never comes must not hold the permit), then the connection can be reused.
    const readBody = (response: HttpClientResponse.HttpClientResponse) =>
      Effect.timeoutTo(
        Effect.orElseSucceed(response.text, () => ""),
        {
          duration: errorBodyTimeout,
          onTimeout: () => "",
          onSuccess: (text) => text
        }
      )

    const decode = (
      key: string,
      response: HttpClientResponse.HttpClientResponse
    ): Effect.Effect<HttpClientResponse.HttpClientResponse, decoder.DecodeError> =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => {
        const v = decoder.verdict(response, now, settings, retryable)
        if (v.error !== undefined) {
          publish(key, v.throttled)
          const error = v.error
          return Effect.flatMap(readBody(response), (body) =>
            Effect.fail(decoder.withBody(error, body, settings))
          )
        }
        if (v.throttled || !json) {
          publish(key, v.throttled)
          return Effect.succeed(response)
        }
        return Effect.map(decoder.jsonThrottle(response, settings.throttleAttribute), (t) => {
          publish(key, t)
          return response
        })
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
          (response) => decode(key, response)
        )
        // The attempt's own bound, and what is left of the call's deadline, bound this
        // exchange, error body included: a backend too slow to answer in time is a
        // timeout (dropped) the limiter and the throttle learn from, not an interruption
        // they would ignore.
        const deadline = fiber.getFiberRef(callDeadline)
        if (deadline === Infinity && attemptTimeout === Infinity) return send
        const now = Context.get(fiber.currentDefaultServices, Clock.Clock).unsafeCurrentTimeMillis()
        return Effect.timeout(send, Duration.millis(Math.max(1, Math.min(attemptTimeout, deadline - now))))
      })

    const attempt = (
      request: HttpClientRequest.HttpClientRequest,
      key: string
    ): Effect.Effect<HttpClientResponse.HttpClientResponse, AttemptError> => {
      let guarded = exchange(request, key)
      if (limiters !== undefined) guarded = limiters.run(key, guarded)
      if (throttle !== undefined) guarded = throttle.run(key, guarded)
      return guarded
    }

    const guarded = (request: HttpClientRequest.HttpClientRequest, retry: boolean, key: string) => {
      if (!retry) return notRetrying(attempt(request, key))
      const stack = stackFor(key)
      return stack !== undefined ? stack.run(exchange(request, key)) : retrying(attempt(request, key))
    }

    const execute = (request: HttpClientRequest.HttpClientRequest) =>
      Effect.withFiberRuntime<HttpClientResponse.HttpClientResponse, C.ClientError>((fiber) => {
        const optIn = fiber.getFiberRef(allowRetries)
        const retry = optIn ?? (config.retryNonIdempotent || IDEMPOTENT.has(request.method))
        const key = keyOf(request)
        const call = guarded(request, retry, key)
        if (timeout === undefined) return call
        // `timeout` bounds the whole call: the wait for a permit, every attempt, the backoff
        // between them and any error body. The exchange's own timer fires at the deadline;
        // this one, a little later, ends whatever is still waiting then.
        const now = Context.get(fiber.currentDefaultServices, Clock.Clock).unsafeCurrentTimeMillis()
        return Effect.timeoutFail(Effect.locally(call, callDeadline, now + timeout), {
          duration: Duration.millis(timeout + DEADLINE_GRACE_MILLIS),
          onTimeout: () =>
            new Errors.DontRetry({
              reason: "timeout",
              cause: new Errors.Overloaded({ reason: `deadline of ${timeout} ms`, origin: "local" })
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

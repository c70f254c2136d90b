import type * as HttpApp from "@effect/platform/HttpApp"
import * as HttpBody from "@effect/platform/HttpBody"
import * as HttpServerError from "@effect/platform/HttpServerError"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as LoadShedder from "@sluice/adaptive/LoadShedder"
import * as ProportionalSampler from "@sluice/adaptive/ProportionalSampler"
import * as ThresholdMonitor from "@sluice/adaptive/ThresholdMonitor"
import { Admission, Criticality, Errors } from "@sluice/core"
import { Quota } from "@sluice/quota"
import { RetryHistogram } from "@sluice/retry"
import * as ErrorBody from "@sluice/kernel/wire/ErrorBody"
import * as ErrorResponse from "@sluice/kernel/wire/ErrorResponse"
import * as Headers from "@sluice/kernel/wire/Headers"
import * as QuotaHeaders from "@sluice/kernel/wire/QuotaHeaders"
import * as Trust from "@sluice/kernel/wire/Trust"
import * as Verdict from "@sluice/kernel/wire/Verdict"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import * as MetricLabel from "effect/MetricLabel"
import { WireProtocol, type WireProtocolSettings } from "../Protocol.js"
import * as protocol from "./protocol.js"
import * as trustPolicy from "./trust.js"
import type {
  BackpressureOptions,
  CriticalityOptions,
  LoadShedOptions,
  QuotaOptions,
  RetryGuardOptions
} from "../Middleware.js"

/** @internal */
export const isSluiceError = protocol.isSluiceError

const rejected = Metric.counter("sluice_http_server_rejected", {
  description: "requests the Sluice middleware answered with a refusal, by reason",
  incremental: true
})
type Reason = Errors.SluiceError["_tag"] | "Sampled"
const reasonTags = Object.fromEntries(
  (["Overloaded", "QuotaExceeded", "Throttled", "CircuitOpen", "DontRetry", "Sampled"] as const).map((r) => [
    r,
    [MetricLabel.make("reason", r)]
  ])
) as unknown as Record<Reason, ReadonlyArray<MetricLabel.MetricLabel>>

/** @internal */
export const countRejection = (reason: Reason): void => rejected.unsafeUpdate(1, reasonTags[reason])

/** @internal */
export const errorResponse = (
  error: Errors.SluiceError,
  settings: WireProtocolSettings
): HttpServerResponse.HttpServerResponse => {
  countRejection(error._tag)
  const decoded = protocol.toDecoded(error)
  // The body names what a DontRetry of a DontRetry gave up on; its status says no more than
  // "don't retry".
  const answered =
    error._tag === "DontRetry" && error.cause instanceof Errors.DontRetry
      ? { _tag: "DontRetry" as const, reason: error.reason }
      : decoded
  const { status, headers } = ErrorResponse.answer(answered, settings.headers)
  return HttpServerResponse.unsafeJson(ErrorBody.encode(decoded), { status, headers })
}

/** @internal */
export const mapErrors = <E, R>(
  app: HttpApp.Default<E, R>
): HttpApp.Default<Exclude<E, Errors.SluiceError>, R> =>
  Effect.catchIf(
    app,
    (e): e is Extract<E, Errors.SluiceError> => isSluiceError(e),
    (e) =>
      Effect.map(WireProtocol, (settings) => errorResponse(e, settings)).pipe(
        Effect.withSpan("sluice.http.map_error", { captureStackTrace: false, attributes: { error: e._tag } })
      )
  ) as any

/** @internal */
export const criticality =
  (options: CriticalityOptions = {}) =>
  <E, R>(app: HttpApp.Default<E, R>): HttpApp.Default<E, R> => {
    const trust = options.trust ?? Trust.none
    const ceiling = options.ceiling ?? "CRITICAL"
    const fallback = options.default ?? "CRITICAL"
    const trustedApp = Effect.locally(app, trustPolicy.currentCallerTrusted, true)
    const untrustedApp = Effect.locally(app, trustPolicy.currentCallerTrusted, false)
    return Effect.flatMap(
      Effect.zip(HttpServerRequest.HttpServerRequest, WireProtocol),
      ([request, settings]) => {
        const trusted = Trust.evaluate(trust, request)
        const header = Headers.headerValue(request.headers[settings.headers.criticality])
        const level = Trust.level(header, trusted, ceiling, fallback)
        return Effect.locally(trusted ? trustedApp : untrustedApp, Criticality.currentCriticality, level)
      }
    )
  }

// ---- quota -----------------------------------------------------------------

/**
 * The answer to a request whose quota cannot be decided: its `client` or `cost` function
 * threw, or its cost is not a whole number of units. The body names which, never what was
 * thrown (that may quote the credential).
 *
 * @internal
 */
export const invalidQuotaRequest = (field: "client" | "cost"): HttpServerResponse.HttpServerResponse =>
  HttpServerResponse.unsafeJson(
    {
      error: {
        _tag: "InvalidRequest",
        field,
        message: `Middleware.quota: the request's ${field} cannot be read`
      }
    },
    { status: 400 }
  )

/** @internal */
export const quota =
  (options: QuotaOptions) =>
  <E, R>(app: HttpApp.Default<E, R>): HttpApp.Default<E, R | Quota.Quota> => {
    const withHeaders = options.headers !== false
    return Effect.flatMap(
      Effect.zip(HttpServerRequest.HttpServerRequest, Effect.context<Quota.Quota>()),
      ([request, context]) => {
        // A function that throws admits nobody: only a client of `undefined` skips the check.
        let client: string | undefined
        let cost = 1
        try {
          client = options.client(request)
        } catch {
          return Effect.succeed(invalidQuotaRequest("client"))
        }
        if (client === undefined) return app
        try {
          if (options.cost !== undefined) cost = options.cost(request)
        } catch {
          return Effect.succeed(invalidQuotaRequest("cost"))
        }
        const service = Context.get(context, Quota.Quota)
        // check refuses a negative, fractional or non-finite cost (the rule lives in the quota)
        const checked = Effect.catchTag(service.check(client, { cost }), "InvalidOptions", () =>
          Effect.succeed(undefined)
        )
        return Effect.flatMap(Effect.zip(checked, WireProtocol), ([decision, settings]) => {
          if (decision === undefined) return Effect.succeed(invalidQuotaRequest("cost"))
          const headers = withHeaders ? QuotaHeaders.of(decision, settings.headers) : {}
          if (!decision.allowed) {
            const error = Quota.toQuotaExceeded(decision)
            // a cost no tier can ever hold has an infinite retryAfter: no Retry-After, "don't retry"
            const denied = HttpServerResponse.setHeaders(errorResponse(error, settings), headers)
            return Effect.succeed(denied).pipe(
              Effect.withSpan("sluice.http.quota_denied", {
                captureStackTrace: false,
                attributes: { client, tier: error.tier }
              })
            )
          }
          return withHeaders
            ? Effect.map(app, (response) => HttpServerResponse.setHeaders(response, headers))
            : app
        })
      }
    )
  }

// ---- backpressure ------------------------------------------------------------

const decoder = new TextDecoder()

/** @internal */
export const addJsonAttribute = (
  response: HttpServerResponse.HttpServerResponse,
  attribute: string
): HttpServerResponse.HttpServerResponse => {
  const body = response.body
  if (body._tag !== "Uint8Array" || !body.contentType.toLowerCase().includes("json")) return response
  const marked = Verdict.markBodyThrottle(decoder.decode(body.body), attribute)
  return marked === undefined
    ? response
    : HttpServerResponse.setBody(response, HttpBody.unsafeJson(marked, body.contentType))
}

/** @internal */
export const backpressure =
  (options: BackpressureOptions) =>
  <E, R>(app: HttpApp.Default<E, R>): HttpApp.Default<E, R | ThresholdMonitor.ThresholdMonitor> => {
    const operationOf =
      typeof options.operation === "string" ? () => options.operation as string : options.operation
    const withMonitor = (monitor: ThresholdMonitor.Service) =>
      Effect.flatMap(Effect.zip(HttpServerRequest.HttpServerRequest, WireProtocol), ([request, settings]) => {
        let operation: string
        try {
          operation = operationOf(request)
        } catch {
          operation = "default"
        }
        return Effect.flatMap(Clock.currentTimeMillis, (start) =>
          Effect.flatMap(app, (response) =>
            Effect.map(Clock.currentTimeMillis, (now) => {
              // Only successes are recorded: failures are fast and would hide overload.
              if (response.status < 400) monitor.unsafeRecord(operation, now, now - start)
              if (!monitor.unsafeExceeded(operation, now)) return response
              const flagged = HttpServerResponse.setHeader(response, settings.headers.throttle, "1")
              return options.json === true ? addJsonAttribute(flagged, settings.throttleAttribute) : flagged
            })
          )
        )
      })
    if (options.monitor !== undefined) return withMonitor(options.monitor)
    return Effect.flatMap(ThresholdMonitor.ThresholdMonitor, withMonitor)
  }

// ---- sample --------------------------------------------------------------------

const noContent = Effect.sync(() => {
  countRejection("Sampled")
  return HttpServerResponse.empty({ status: 204 })
})

/** @internal */
export const sample =
  (sampler?: ProportionalSampler.Service) =>
  <E, R>(app: HttpApp.Default<E, R>): HttpApp.Default<E, R | ProportionalSampler.ProportionalSampler> =>
    sampler !== undefined
      ? sampler.withSampler(app, noContent)
      : Effect.flatMap(ProportionalSampler.ProportionalSampler, (s) => s.withSampler(app, noContent))

// ---- loadShed -------------------------------------------------------------------

/**
 * `gate` whose wait is interruptible even where its caller is not. The HTTP server runs
 * middleware uninterruptibly (the router makes only a route's handler interruptible), so a
 * request waiting in the limiter's queue would outlive its caller's socket: hold a place in
 * the queue, then run the handler for nobody. Only the wait is: the admission, the work and
 * the settlement keep the caller's interruptibility.
 */
const interruptibleWait = <T, E>(gate: Admission.Gate<T, E>): Admission.Gate<T, E> => ({
  tryEnter: (entry) => gate.tryEnter(entry),
  enter: (entry) => Effect.interruptible(gate.enter(entry)),
  settle: (ticket, outcome, cause) => gate.settle(ticket, outcome, cause),
  isDrop: gate.isDrop
})

/** @internal */
export const loadShed =
  (options: LoadShedOptions = {}) =>
  <E, R>(app: HttpApp.Default<E, R>): HttpApp.Default<E, R | LoadShedder.LoadShedder> => {
    // The handler's own failures travel in an Either so that only the shedder's and
    // the limiter's refusals become a 503 here; an `Overloaded` from a downstream
    // call stays the handler's failure.
    const inner = Effect.either(app)
    const guarded = (shedder: LoadShedder.Service | undefined) => {
      // Shedder outside, limiter inside, entered in one step (`Admission.guard`).
      const gates: Array<Admission.Gate<unknown, Errors.Overloaded>> = []
      if (shedder !== undefined)
        gates.push(interruptibleWait(shedder.gate as Admission.Gate<unknown, Errors.Overloaded>))
      if (options.limiter !== undefined)
        gates.push(interruptibleWait(options.limiter.gate as Admission.Gate<unknown, Errors.Overloaded>))
      const effect = inner.pipe(Admission.guard(gates))
      return Effect.matchEffect(effect, {
        onFailure: (error) =>
          Effect.map(WireProtocol, (settings) => errorResponse(error, settings)).pipe(
            Effect.withSpan("sluice.http.shed", {
              captureStackTrace: false,
              attributes: { reason: error.reason }
            })
          ),
        onSuccess: (either): Effect.Effect<HttpServerResponse.HttpServerResponse, E> =>
          either._tag === "Right" ? Effect.succeed(either.right) : Effect.fail(either.left)
      })
    }
    if (options.shedder !== undefined) return guarded(options.shedder)
    // With only a limiter the shedder is optional: use one from context if there is one.
    if (options.limiter !== undefined) {
      return Effect.flatMap(Effect.serviceOption(LoadShedder.LoadShedder), (shedder) =>
        guarded(Option.getOrUndefined(shedder))
      )
    }
    return Effect.flatMap(LoadShedder.LoadShedder, guarded)
  }

// ---- retryGuard -------------------------------------------------------------------

/** @internal */
export const retryGuard =
  (options: RetryGuardOptions = {}) =>
  <E, R>(
    app: HttpApp.Default<E, R>
  ): HttpApp.Default<E | Errors.DontRetry, R | RetryHistogram.RetryHistogram> => {
    const trust = options.trust
    const guarded = (histogram: RetryHistogram.Service) =>
      Effect.withFiberRuntime<
        HttpServerResponse.HttpServerResponse,
        E | Errors.DontRetry,
        R | HttpServerRequest.HttpServerRequest
      >((fiber) => {
        const request = Context.unsafeGet(fiber.currentContext, HttpServerRequest.HttpServerRequest)
        const settings = Context.get(fiber.currentContext, WireProtocol)
        const clock = Context.get(fiber.currentDefaultServices, Clock.Clock)
        const attempt = Headers.parseAttempt(
          Headers.headerValue(request.headers[settings.headers.attempt]),
          settings.maxAttempt
        )
        // Only a trusted caller's attempt number may change answers (to anyone): an
        // untrusted one is recorded apart, where it decides nothing.
        const trusted =
          trust !== undefined
            ? Trust.evaluate(trust, request)
            : fiber.getFiberRef(trustPolicy.currentCallerTrusted)
        if (trusted) histogram.unsafeRecord(clock.unsafeCurrentTimeMillis(), attempt)
        else histogram.unsafeRecordUntrusted(clock.unsafeCurrentTimeMillis(), attempt)
        const rejecting = () => histogram.unsafeShouldRejectRetries(clock.unsafeCurrentTimeMillis())
        const dontRetry = (response: HttpServerResponse.HttpServerResponse) =>
          Effect.succeed(HttpServerResponse.setHeader(response, settings.headers.dontRetry, "1")).pipe(
            Effect.withSpan("sluice.http.dont_retry", {
              captureStackTrace: false,
              attributes: { attempt, status: response.status }
            })
          )
        return Effect.matchCauseEffect(app, {
          onSuccess: (response) =>
            // While retries dominate, every failure says "don't retry": the callers'
            // backends (us) are overloaded, so retries would only add load.
            response.status >= 500 && rejecting() ? dontRetry(response) : Effect.succeed(response),
          onFailure: (cause): Effect.Effect<HttpServerResponse.HttpServerResponse, E | Errors.DontRetry> => {
            if (Cause.isInterruptedOnly(cause)) return Effect.failCause(cause)
            const failure = Cause.failureOption(cause)
            if (failure._tag === "Some" && isSluiceError(failure.value)) {
              // Sluice errors keep their own mapping (`mapErrors`, outside); the retryable
              // ones become terminal while retries dominate.
              const error = failure.value
              // Only what is answered as a plain 503 becomes terminal (`ErrorResponse.isRetryable503`).
              if (!ErrorResponse.isRetryable503(error._tag) || !rejecting()) return Effect.failCause(cause)
              return Effect.fail(new Errors.DontRetry({ reason: "server", cause: error }))
            }
            if (!rejecting()) return Effect.failCause(cause)
            // Any other failure or defect: the response the platform would send
            // (500 for a plain error, 404 for a missing route, ...) decided here, so
            // that a 5xx carries "don't retry" too. The cause stays for the server's
            // logger; the platform sends the response it ends with.
            return Effect.flatMap(HttpServerError.causeResponse(cause), ([response, rest]) =>
              Effect.flatMap(
                response.status >= 500 ? dontRetry(response) : Effect.succeed(response),
                (final) => Effect.failCause(Cause.sequential(rest, Cause.die(final)))
              )
            )
          }
        })
      })
    if (options.histogram !== undefined) return guarded(options.histogram)
    return Effect.flatMap(RetryHistogram.RetryHistogram, guarded)
  }

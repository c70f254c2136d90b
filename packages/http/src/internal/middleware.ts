import * as LoadShedder from "@sluice/adaptive/LoadShedder"
import * as ProportionalSampler from "@sluice/adaptive/ProportionalSampler"
import * as ThresholdMonitor from "@sluice/adaptive/ThresholdMonitor"
import { Admission, Criticality, Errors, ServerLoad } from "@sluice/core"
import * as BoundedMap from "@sluice/core/shared/BoundedMap"
import * as Meters from "@sluice/core/shared/Meters"
import { Quota } from "@sluice/quota"
import { Retry, RetryHistogram } from "@sluice/retry"
import * as Propagation from "@sluice/kernel/deadline/Propagation"
import * as Field from "@sluice/kernel/options/Field"
import * as ErrorBody from "@sluice/kernel/wire/ErrorBody"
import * as ErrorResponse from "@sluice/kernel/wire/ErrorResponse"
import * as Headers from "@sluice/kernel/wire/Headers"
import * as QuotaHeaders from "@sluice/kernel/wire/QuotaHeaders"
import * as Trust from "@sluice/kernel/wire/Trust"
import * as Verdict from "@sluice/kernel/wire/Verdict"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as ErrorReporter from "effect/ErrorReporter"
import * as Fiber from "effect/Fiber"
import * as HttpBody from "effect/http/HttpBody"
import * as HttpServerError from "effect/http/HttpServerError"
import * as HttpServerRequest from "effect/http/HttpServerRequest"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import * as Tracer from "effect/Tracer"
import type { ConcurrencyLimiter } from "@sluice/adaptive"
import { WireProtocol, type WireProtocolSettings } from "../Protocol.js"
import type {
  BackpressureOptions,
  CriticalityOptions,
  DegradeOptions,
  HttpApp,
  LoadShedOptions,
  QuotaOptions,
  RetryGuardOptions
} from "../Middleware.js"
import * as protocol from "./protocol.js"
import * as trustPolicy from "./trust.js"

/** @internal */
export const isSluiceError = protocol.isSluiceError

type Reason = Errors.SluiceError["_tag"] | "Sampled"

const rejectedTotal = Meters.counter(
  "sluice_http_server_rejected",
  "requests the Sluice middleware answered with a refusal, by reason and criticality"
)

const reasons = ["Overloaded", "QuotaExceeded", "Throttled", "CircuitOpen", "DontRetry", "Sampled"] as const

// One series per reason and level, built up front: an update then costs no attribute merge
// and allocates nothing.
const rejected = Object.fromEntries(
  reasons.map((reason) => [
    reason,
    Object.fromEntries(
      Criticality.levels.map((criticality) => [criticality, rejectedTotal.of({ reason, criticality })])
    )
  ])
) as Record<Reason, Record<Criticality.Criticality, Metric.Counter<number>>>

/**
 * Counts a refusal in the registry of the fiber that answers it (`errorResponse` is a plain
 * function, called from the middleware's effects), at that fiber's criticality, or in the
 * default registry at the default level outside a fiber.
 *
 * @internal
 */
export const countRejection = (reason: Reason): void => {
  const fiber = Fiber.getCurrent()
  if (fiber === undefined) return rejected[reason].CRITICAL.updateUnsafe(1, Context.empty())
  rejected[reason][fiber.getRef(Criticality.currentCriticality)].updateUnsafe(1, fiber.context)
}

const encodeResponse = (
  error: Errors.SluiceError,
  settings: WireProtocolSettings
): HttpServerResponse.HttpServerResponse => {
  const decoded = protocol.toDecoded(error)
  // The body names what a DontRetry of a DontRetry gave up on; its status says no more than
  // "don't retry".
  const answered =
    error._tag === "DontRetry" && error.cause instanceof Errors.DontRetry
      ? { _tag: "DontRetry" as const, reason: error.reason }
      : decoded
  const { status, headers } = ErrorResponse.answer(answered, settings.headers)
  // Bytes, not text: Effect's Node server writes a text body as one UTF-8 string with the
  // headers, which Node encodes per write; a body of bytes goes out as it is beside the
  // Latin-1 headers. Under a flood of refusals that is about a tenth of what each costs
  // (`bench/README.md`, "A closed-loop flood").
  return HttpServerResponse.uint8Array(utf8.encode(JSON.stringify(ErrorBody.encode(decoded))), {
    status,
    headers,
    contentType: "application/json"
  })
}

const utf8 = new TextEncoder()

// A policy that refuses many requests refuses them with one error value (the shedder's
// shed): its answer is encoded once per error and protocol settings, not once per
// refusal. Responses are immutable, so one can answer every such refusal.
const encoded = new WeakMap<
  Errors.SluiceError,
  { readonly settings: WireProtocolSettings; readonly response: HttpServerResponse.HttpServerResponse }
>()

/** @internal */
export const errorResponse = (
  error: Errors.SluiceError,
  settings: WireProtocolSettings
): HttpServerResponse.HttpServerResponse => {
  countRejection(error._tag)
  const cached = encoded.get(error)
  if (cached !== undefined && cached.settings === settings) return cached.response
  const response = encodeResponse(error, settings)
  encoded.set(error, { settings, response })
  return response
}

/** @internal */
export const mapErrors = <E, R>(app: HttpApp<E, R>): HttpApp<Exclude<E, Errors.SluiceError>, R> =>
  Effect.catch(app, (e) =>
    isSluiceError(e)
      ? Effect.map(WireProtocol, (settings) => errorResponse(e, settings))
      : // not a Sluice error, which the compiler cannot narrow a type parameter by
        Effect.fail(e as Exclude<E, Errors.SluiceError>)
  )

const expiredTotal = Meters.counter(
  "sluice_http_server_expired",
  "requests refused because their caller's deadline had passed (arrival, queue) or could not be met (unmeetable)"
)
const expiredAt = {
  arrival: expiredTotal.of({ stage: "arrival" }),
  queue: expiredTotal.of({ stage: "queue" }),
  unmeetable: expiredTotal.of({ stage: "unmeetable" })
}

/** The refusal of work whose caller has given up: terminal, so nobody retries it. */
const expired = (
  stage: keyof typeof expiredAt,
  context: Context.Context<never>,
  cause: Errors.Overloaded = new Errors.Overloaded({
    reason: `caller's deadline passed (${stage})`,
    origin: "local"
  })
): Errors.DontRetry => {
  expiredAt[stage].updateUnsafe(1, context)
  return new Errors.DontRetry({ reason: "timeout", cause })
}

const unmeetableReason = "concurrency limit: deadline-unmeetable"

const DEFAULT_MAX_UNTRUSTED_DEADLINE = Duration.seconds(30)
const DEFAULT_DEADLINE_MARGIN = Duration.millis(5)

/** @internal */
export const criticality =
  (options: CriticalityOptions = {}) =>
  <E, R>(app: HttpApp<E, R>): HttpApp<E, R> => {
    const trust = options.trust ?? Trust.none
    const ceiling = options.ceiling ?? "CRITICAL"
    const fallback = options.default ?? "CRITICAL"
    const deadlines = options.deadline !== false
    const deadlineOptions = options.deadline === false ? {} : (options.deadline ?? {})
    const maxUntrustedMs = Duration.toMillis(
      Duration.fromInputUnsafe(deadlineOptions.maxUntrusted ?? DEFAULT_MAX_UNTRUSTED_DEADLINE)
    )
    const marginMs = Duration.toMillis(
      Duration.fromInputUnsafe(deadlineOptions.margin ?? DEFAULT_DEADLINE_MARGIN)
    )
    // The app at each level, trusted or not: made once, not per request, and entered with one
    // change of the request's context (both values in one step, where two `provideService`
    // would take two, each with its own restore on exit).
    const trustedAt: Partial<Record<Criticality.Criticality, HttpApp<E, R>>> = {}
    const untrustedAt: Partial<Record<Criticality.Criticality, HttpApp<E, R>>> = {}
    const appAt = (trusted: boolean, level: Criticality.Criticality): HttpApp<E, R> =>
      Effect.updateContext(app, (context: Context.Context<R | HttpServerRequest.HttpServerRequest>) =>
        Context.add(
          Context.add(context, trustPolicy.currentCallerTrusted, trusted),
          Criticality.currentCriticality,
          level
        )
      )
    return Effect.withFiber((fiber) => {
      const request = Context.getUnsafe(fiber.context, HttpServerRequest.HttpServerRequest)
      const settings = fiber.getRef(WireProtocol)
      const trusted = Trust.evaluate(trust, request)
      const header = Headers.headerValue(request.headers[settings.headers.criticality])
      const level = Trust.level(header, trusted, ceiling, fallback)
      const withLevel = ((trusted ? trustedAt : untrustedAt)[level] ??= appAt(trusted, level))
      const claimedMs = deadlines
        ? Propagation.parse(Headers.headerValue(request.headers[settings.headers.deadline]))
        : undefined
      if (claimedMs === undefined) return withLevel
      const now = fiber.getRef(Clock.Clock).currentTimeMillisUnsafe()
      const deadline = Propagation.incoming({ claimedMs, trusted, maxUntrustedMs, marginMs, now })
      // Nobody will read the answer: refused before any work, and never retried.
      if (Propagation.expired(deadline, now))
        return Effect.succeed(errorResponse(expired("arrival", fiber.context), settings))
      // An enclosing deadline of this server's own (a test's, an outer middleware's) stays if earlier.
      return Effect.provideService(
        withLevel,
        Retry.currentDeadline,
        Math.min(deadline, fiber.getRef(Retry.currentDeadline))
      )
    })
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
  HttpServerResponse.jsonUnsafe(
    {
      error: {
        _tag: "InvalidRequest",
        field,
        message: `Middleware.quota: the request's ${field} cannot be read`
      }
    },
    { status: 400 }
  )

/**
 * One over-quota request's cell: `loadShed` sets `shed` when it answered the request with its
 * quota's 429 instead of running it, so that `quota`, outside, charges nothing for it.
 */
interface OverQuotaCell {
  shed: boolean
}

const currentOverQuotaCell = Context.Reference<OverQuotaCell | undefined>(
  "@sluice/http/Middleware/OverQuotaCell",
  { defaultValue: () => undefined }
)

/**
 * Over quota in the `"overload"` mode: the denial is kept as the request's mark
 * (`Criticality.currentOverQuota`) and the request runs, last within its level for the
 * shedder and limiter inside. A denied request admitted is charged its cost on every tier, down
 * to empty at most (`Quota.penalty`), so longer tiers count what the customer used; one its
 * tiers admitted (`charged`, its customer over plan lately) was charged by its check. Shed, it
 * was answered with this denial by `loadShed`, and nothing more is charged.
 */
const overQuota = <E, R>(
  app: HttpApp<E, R>,
  service: Quota.Service,
  client: string,
  cost: number,
  error: Errors.QuotaExceeded,
  headers: Record<string, string>,
  charged: boolean
): HttpApp<E, R> => {
  const cell: OverQuotaCell = { shed: false }
  return app.pipe(
    Effect.provideService(Criticality.currentOverQuota, error),
    Effect.provideService(currentOverQuotaCell, cell),
    Effect.flatMap((response) => {
      const withQuotaHeaders = HttpServerResponse.setHeaders(response, headers)
      if (cell.shed) return Effect.succeed(withQuotaHeaders)
      // A charge is bookkeeping: bounded by the quota's own deadline, and never the answer's failure.
      const charge = service.penalty(client, cost).pipe(
        Effect.timeoutOrElse({ duration: service.deadline, orElse: () => Effect.void }),
        Effect.catchCause(() => Effect.void)
      )
      return cost === 0 || charged ? Effect.succeed(withQuotaHeaders) : Effect.as(charge, withQuotaHeaders)
    })
  )
}

/** @internal */
export const quota =
  (options: QuotaOptions) =>
  <E, R>(app: HttpApp<E, R>): HttpApp<E, R | Quota.Quota> => {
    const withHeaders = options.headers !== false
    const onlyInOverload = options.enforce === "overload"
    // Customers over their plan, in the overload mode: from a denial until twice its hint has
    // passed, every request of theirs is over quota, also one a tier admits (a customer at 8x its
    // plan gets 1 in 8 through its tiers; it is still a customer over its plan). Bounded: an
    // evicted customer is judged by its next decision alone.
    const overPlan = onlyInOverload
      ? BoundedMap.make<string, { readonly until: number; readonly error: Errors.QuotaExceeded }>({
          capacity: 100_000
        })
      : undefined
    return Effect.withFiber((fiber) => {
      const request = Context.getUnsafe(fiber.context, HttpServerRequest.HttpServerRequest)
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
      const service = Context.getUnsafe(fiber.context, Quota.Quota)
      const settings = fiber.getRef(WireProtocol)
      // check refuses a negative, fractional or non-finite cost (the rule lives in the quota)
      const checked = Effect.catchTag(service.check(client, { cost }), "InvalidOptions", () =>
        Effect.succeed(undefined)
      )
      return Effect.flatMap(checked, (decision) => {
        if (decision === undefined) return Effect.succeed(invalidQuotaRequest("cost"))
        const headers = withHeaders ? QuotaHeaders.of(decision, settings.headers) : {}
        if (!decision.allowed) {
          const error = Quota.toQuotaExceeded(decision)
          // Only a plain over-plan denial waits for overload: a cost no tier can ever hold, a
          // blocked client and a fail-closed decision are refused as always.
          if (
            overPlan !== undefined &&
            Number.isFinite(decision.retryAfterMs) &&
            decision.blockedMs === undefined &&
            decision.source !== "fail-closed"
          ) {
            const now = fiber.getRef(Clock.Clock).currentTimeMillisUnsafe()
            overPlan.set(client, { until: now + 2 * decision.retryAfterMs, error })
            return overQuota(app, service, client, cost, error, headers, false)
          }
          // a cost no tier can ever hold has an infinite retryAfter: no Retry-After, "don't retry"
          const denied = HttpServerResponse.setHeaders(errorResponse(error, settings), headers)
          return Effect.succeed(denied).pipe(
            Effect.withSpan(
              "sluice.http.quota_denied",
              { attributes: { client, tier: error.tier } },
              { captureStackTrace: false }
            )
          )
        }
        const over = overPlan?.peek(client)
        if (over !== undefined) {
          if (fiber.getRef(Clock.Clock).currentTimeMillisUnsafe() < over.until)
            return overQuota(app, service, client, cost, over.error, headers, true)
          overPlan!.delete(client)
        }
        return withHeaders
          ? Effect.map(app, (response) => HttpServerResponse.setHeaders(response, headers))
          : app
      })
    })
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
  const marked = Verdict.markBodyThrottle(body.text ?? decoder.decode(body.body), attribute)
  return marked === undefined
    ? response
    : HttpServerResponse.setBody(response, HttpBody.jsonUnsafe(marked, body.contentType))
}

/** @internal */
export function backpressure(
  options: BackpressureOptions & { readonly monitor: ThresholdMonitor.Service }
): <E, R>(app: HttpApp<E, R>) => HttpApp<E, R>
/** @internal */
export function backpressure(
  options: BackpressureOptions
): <E, R>(app: HttpApp<E, R>) => HttpApp<E, R | ThresholdMonitor.ThresholdMonitor>
export function backpressure(options: BackpressureOptions) {
  const operationOf =
    typeof options.operation === "string" ? () => options.operation as string : options.operation
  return <E, R>(app: HttpApp<E, R>): HttpApp<E, R | ThresholdMonitor.ThresholdMonitor> => {
    const withMonitor = (monitor: ThresholdMonitor.Service): HttpApp<E, R> =>
      Effect.withFiber((fiber) => {
        const request = Context.getUnsafe(fiber.context, HttpServerRequest.HttpServerRequest)
        const settings = fiber.getRef(WireProtocol)
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
              if (response.status < 400) monitor.recordUnsafe(operation, now, now - start)
              if (!monitor.exceededUnsafe(operation, now)) return response
              const flagged = HttpServerResponse.setHeader(response, settings.headers.throttle, "1")
              return options.json === true ? addJsonAttribute(flagged, settings.throttleAttribute) : flagged
            })
          )
        )
      })
    if (options.monitor !== undefined) return withMonitor(options.monitor)
    return Effect.flatMap(ThresholdMonitor.ThresholdMonitor, withMonitor)
  }
}

// ---- sample --------------------------------------------------------------------

const noContent = Effect.sync(() => {
  countRejection("Sampled")
  return HttpServerResponse.empty({ status: 204 })
})

/** @internal */
export function sample(sampler: ProportionalSampler.Service): <E, R>(app: HttpApp<E, R>) => HttpApp<E, R>
/** @internal */
export function sample(): <E, R>(
  app: HttpApp<E, R>
) => HttpApp<E, R | ProportionalSampler.ProportionalSampler>
export function sample(sampler?: ProportionalSampler.Service) {
  return <E, R>(app: HttpApp<E, R>): HttpApp<E, R | ProportionalSampler.ProportionalSampler> =>
    sampler !== undefined
      ? sampler.withSampler(app, noContent)
      : Effect.flatMap(ProportionalSampler.ProportionalSampler, (s) => s.withSampler(app, noContent))
}

// ---- degrade ---------------------------------------------------------------------

/**
 * What `loadShed` calls instead of answering a refusal, when `degrade` is outside it: a
 * degraded answer, or `undefined` when the request cannot be degraded (then it is refused as
 * before). `capacity` is the full path's bound, the default bound of the degraded one.
 */
type Degrader = (
  refusal: Errors.Overloaded,
  capacity: number,
  fiber: Fiber.Fiber<unknown, unknown>
) => Effect.Effect<HttpServerResponse.HttpServerResponse, unknown> | undefined

const currentDegrader = Context.Reference<Degrader | undefined>("@sluice/http/Middleware/degrade", {
  defaultValue: () => undefined
})

const degradedTotal = Meters.counter(
  "sluice_http_server_degraded",
  "requests answered by a degraded handler instead of being refused, by criticality"
)
const degradedAt = Object.fromEntries(
  Criticality.levels.map((criticality) => [criticality, degradedTotal.of({ criticality })])
) as Record<Criticality.Criticality, Metric.Counter<number>>

/** @internal */
export const degrade = <E2, R2>(options: DegradeOptions<E2, R2>) => {
  // A middleware is built where the server is assembled: a bad option is a programming error
  // there, thrown at once with every field named (as the `unsafe` constructors do).
  const issues = [
    ...Field.unknownKeys(options, ["handler", "when", "concurrency"]),
    ...Field.fields([
      [
        "handler",
        options.handler ?? null,
        Field.expecting(Effect.isEffect, "an Effect (the degraded handler)")
      ],
      ["when", options.when, Field.func("a function of the request")],
      ["concurrency", options.concurrency, Field.positiveInt]
    ])
  ]
  if (issues.length > 0) throw new RangeError(Field.describe("Middleware.degrade", issues))
  const { concurrency, handler, when } = options
  return <E, R>(app: HttpApp<E, R>): HttpApp<E | E2, R | R2> => {
    // Degraded answers in flight: the degraded path's own bound.
    let active = 0
    const release = Effect.sync(() => {
      active--
    })
    const degrader: Degrader = (refusal, capacity, fiber) => {
      if (when !== undefined) {
        const request = Context.getUnsafe(fiber.context, HttpServerRequest.HttpServerRequest)
        let degradable: boolean
        try {
          degradable = when(request)
        } catch {
          degradable = false
        }
        if (!degradable) return undefined
      }
      if (active >= (concurrency ?? Math.max(1, Math.round(capacity)))) return undefined
      active++
      const level = fiber.getRef(Criticality.currentCriticality)
      degradedAt[level].updateUnsafe(1, fiber.context)
      const span = Context.getOrUndefined(fiber.context, Tracer.ParentSpan)
      if (span !== undefined && span._tag === "Span" && span.sampled) {
        span.attribute("sluice.degraded", refusal.reason)
        span.attribute("sluice.criticality", level)
      }
      const header = fiber.getRef(WireProtocol).headers.degraded
      // The slot is given back however the handler ends; it runs interruptibly, as the router
      // runs a route's handler, so a caller that hangs up ends it.
      return Effect.ensuring(
        Effect.map(Effect.interruptible(handler), (response) =>
          HttpServerResponse.setHeader(response, header, "1")
        ),
        release
      ) as Effect.Effect<HttpServerResponse.HttpServerResponse, unknown>
    }
    return Effect.provideService(app, currentDegrader, degrader)
  }
}

// ---- loadShed -------------------------------------------------------------------

/**
 * The limiter's gate whose wait is bounded by the request's deadline (`criticality` reads it
 * from the request): a waiter leaves once the deadline has passed or cannot be met (its time
 * left is below the limiter's expected service time, `ConcurrencyLimiter.Limiter.enterBy`),
 * so no request waits for an answer its caller will not read. Either refusal is terminal
 * (`DontRetry` around the limiter's `Overloaded`). The wait itself is interruptible (the
 * limiter's own), so its timer can end it although Effect's server runs middleware
 * uninterruptibly.
 */
const boundedByDeadline = (
  limiter: ConcurrencyLimiter.Limiter
): Admission.Gate<unknown, Errors.Overloaded | Errors.DontRetry> => ({
  tryEnter: limiter.gate.tryEnter,
  enter: (entry) => {
    const deadline = entry.getRef(Retry.currentDeadline)
    if (deadline === Infinity) return limiter.gate.enter(entry)
    return Effect.catchIf(
      limiter.enterBy(entry, deadline),
      (error) => error.reason === unmeetableReason || error.reason === "concurrency limit: deadline",
      (error) =>
        Effect.fail(
          error.reason === unmeetableReason
            ? expired("unmeetable", entry.context, error)
            : expired("queue", entry.context)
        )
    )
  },
  settle: limiter.gate.settle as Admission.Gate<unknown, Errors.Overloaded>["settle"],
  isDrop: limiter.gate.isDrop
})

/**
 * A limiter alone as a `ServerLoad`: its work (running and queued) against its limit; it admits
 * every level while a permit is free, none at once when it is full.
 */
const limiterLoad = (limiter: ConcurrencyLimiter.Limiter): ServerLoad.ServerLoad => ({
  utilization: () => (limiter.inFlight + limiter.queued) / Math.max(1, limiter.limit),
  admits: () => limiter.inFlight < limiter.limit
})

/** @internal */
export function loadShed(
  options: LoadShedOptions & { readonly shedder: LoadShedder.Service }
): <E, R>(app: HttpApp<E, R>) => HttpApp<E, R>
/** @internal */
export function loadShed(
  options: LoadShedOptions & { readonly limiter: ConcurrencyLimiter.Limiter }
): <E, R>(app: HttpApp<E, R>) => HttpApp<E, R>
/** @internal */
export function loadShed(
  options?: LoadShedOptions
): <E, R>(app: HttpApp<E, R>) => HttpApp<E, R | LoadShedder.LoadShedder>
export function loadShed(options: LoadShedOptions = {}) {
  return <E, R>(app: HttpApp<E, R>): HttpApp<E, R | LoadShedder.LoadShedder> => {
    // Per shedder: the request's way through, given the fiber it runs on.
    const guarded = (
      shedder: LoadShedder.Service | undefined
    ): ((fiber: Fiber.Fiber<unknown, unknown>) => HttpApp<E, R>) => {
      // Shedder outside, limiter inside, entered in one step (`Admission.guard`).
      const gates: Array<Admission.Gate<unknown, Errors.Overloaded | Errors.DontRetry>> = []
      // Effect's HTTP server runs middleware uninterruptibly: the limiter's wait is
      // interruptible on its own, so a caller that left gives up its place in the queue.
      if (shedder !== undefined) gates.push(shedder.gate as Admission.Gate<unknown, Errors.Overloaded>)
      // A limiter given here replaces the shedder's own bound.
      const limiter = options.limiter ?? shedder?.bound
      if (limiter !== undefined) gates.push(boundedByDeadline(limiter))
      // The admitted work reads the load it was judged by.
      const load = shedder?.load ?? (limiter !== undefined ? limiterLoad(limiter) : ServerLoad.idle)
      // The handler's own failures travel in a Result so that only the shedder's and the
      // limiter's refusals become a 503 here; an `Overloaded` from a downstream call stays
      // the handler's failure.
      const inner = Effect.result(Effect.provideService(app, ServerLoad.currentServerLoad, load))
      const effect = inner.pipe(Admission.guard(gates))
      // No span of its own per refusal: under a flood it would cost more than the refusal.
      // The request's own span, where a tracer samples it, says why it was refused; the
      // counters by reason and criticality see every one.
      const refuse = (
        error: Errors.Overloaded | Errors.DontRetry,
        fiber: Fiber.Fiber<unknown, unknown>
      ): Effect.Effect<HttpServerResponse.HttpServerResponse> => {
        // A shed request is answered degraded where `degrade` is outside and has room; one
        // whose caller has given up (a `DontRetry`) is not answered at all. The degraded
        // path's default bound is the full path's bound as it is now (an adaptive limit moves).
        const degrader = error._tag === "Overloaded" ? fiber.getRef(currentDegrader) : undefined
        const degraded =
          degrader === undefined
            ? undefined
            : degrader(error as Errors.Overloaded, limiter?.limit ?? shedder?.capacity ?? 1, fiber)
        if (degraded !== undefined)
          return Effect.provideService(
            degraded as Effect.Effect<HttpServerResponse.HttpServerResponse>,
            ServerLoad.currentServerLoad,
            load
          )
        const span = Context.getOrUndefined(fiber.context, Tracer.ParentSpan)
        if (span !== undefined && span._tag === "Span" && span.sampled) {
          span.attribute("sluice.refused", error.reason)
          span.attribute("sluice.criticality", fiber.getRef(Criticality.currentCriticality))
        }
        // Work over its customer's quota, refused for want of room: its quota's 429 and
        // hint, so that its client backs off by the quota (`quota({ enforce: "overload" })`).
        const overQuota = error._tag === "Overloaded" ? fiber.getRef(Criticality.currentOverQuota) : undefined
        if (overQuota !== undefined) {
          const cell = fiber.getRef(currentOverQuotaCell)
          if (cell !== undefined) cell.shed = true
          return Effect.succeed(errorResponse(overQuota, fiber.getRef(WireProtocol)))
        }
        return Effect.succeed(errorResponse(error, fiber.getRef(WireProtocol)))
      }
      const admitted = Effect.matchEffect(effect, {
        onFailure: (error) => Effect.withFiber((fiber) => refuse(error, fiber)),
        onSuccess: (result): Effect.Effect<HttpServerResponse.HttpServerResponse, E> =>
          Result.isSuccess(result) ? Effect.succeed(result.success) : Effect.fail(result.failure)
      })
      if (shedder === undefined) return () => admitted
      // (A limiter alone keeps its pass: its refusals are few where no shedder sheds first.)
      // The refusal fast path: what the shedder sheds now, and what the bound has no room for
      // now, is refused on the spot, with no pass through the gates (no ticket is taken, so
      // there is nothing to settle). Under a flood that is nearly every request, and the
      // machinery a pass needs would be most of what one costs.
      return (fiber: Fiber.Fiber<unknown, unknown>) => {
        const level = fiber.getRef(Criticality.currentCriticality)
        const overQuota = fiber.getRef(Criticality.currentOverQuota) !== undefined
        const refusal =
          shedder.shedUnsafe(level, fiber.getRef(Clock.Clock).currentTimeMillisUnsafe(), overQuota) ??
          limiter?.refuseUnsafe(level, overQuota)
        return refusal === undefined ? admitted : refuse(refusal, fiber)
      }
    }
    if (options.shedder !== undefined) return Effect.withFiber(guarded(options.shedder))
    // The shedder from context is the same service on every request of a server: its
    // guarded app is built once per shedder, not per request.
    const cached = lastOf(guarded)
    // With only a limiter the shedder is optional: use one from context if there is one.
    if (options.limiter !== undefined) {
      return Effect.withFiber((fiber) =>
        cached(Context.getOrUndefined(fiber.context, LoadShedder.LoadShedder))(fiber)
      )
    }
    return Effect.withFiber((fiber) =>
      cached(Context.getUnsafe(fiber.context, LoadShedder.LoadShedder))(fiber)
    )
  }
}

/** `f` remembering its last argument and answer: for a service read from context per request. */
const lastOf = <A, B>(f: (a: A) => B): ((a: A) => B) => {
  let seen = false
  let last: A
  let answer: B
  return (a) => {
    if (seen && a === last) return answer
    answer = f(a)
    last = a
    seen = true
    return answer
  }
}

// ---- retryGuard -------------------------------------------------------------------

/** The attempt number a request carries (its header, malformed or missing: a first try). */
const attemptOf = (request: HttpServerRequest.HttpServerRequest, settings: WireProtocolSettings): number =>
  Headers.parseAttempt(Headers.headerValue(request.headers[settings.headers.attempt]), settings.maxAttempt)

/** @internal */
export function retryGuard(
  options: RetryGuardOptions & { readonly histogram: RetryHistogram.Service }
): <E, R>(app: HttpApp<E, R>) => HttpApp<E | Errors.DontRetry, R>
/** @internal */
export function retryGuard(
  options?: RetryGuardOptions
): <E, R>(app: HttpApp<E, R>) => HttpApp<E | Errors.DontRetry, R | RetryHistogram.RetryHistogram>
export function retryGuard(options: RetryGuardOptions = {}) {
  return <E, R>(app: HttpApp<E, R>): HttpApp<E | Errors.DontRetry, R | RetryHistogram.RetryHistogram> => {
    const trust = options.trust
    // The request's trust, as this middleware judges it: its own policy, or `criticality`'s.
    const trustedOf = (fiber: Fiber.Fiber<unknown, unknown>, request: HttpServerRequest.HttpServerRequest) =>
      trust !== undefined ? Trust.evaluate(trust, request) : fiber.getRef(trustPolicy.currentCallerTrusted)
    // Per histogram: the request's way through, given the fiber it runs on. What the answer
    // needs (the clock, the attempt number for a span) is read from the fiber that answers,
    // when it answers, so the handlers are made once per histogram, not per request.
    const guarded = (histogram: RetryHistogram.Service) => {
      const rejecting = (fiber: Fiber.Fiber<unknown, unknown>) =>
        histogram.shouldRejectRetriesUnsafe(fiber.getRef(Clock.Clock).currentTimeMillisUnsafe())
      const dontRetry = (
        response: HttpServerResponse.HttpServerResponse,
        fiber: Fiber.Fiber<unknown, unknown>
      ): Effect.Effect<HttpServerResponse.HttpServerResponse> => {
        const settings = fiber.getRef(WireProtocol)
        const attempt = attemptOf(
          Context.getUnsafe(fiber.context, HttpServerRequest.HttpServerRequest),
          settings
        )
        return Effect.succeed(HttpServerResponse.setHeader(response, settings.headers.dontRetry, "1")).pipe(
          Effect.withSpan(
            "sluice.http.dont_retry",
            { attributes: { attempt, status: response.status } },
            { captureStackTrace: false }
          )
        )
      }
      const handlers = {
        onSuccess: (
          response: HttpServerResponse.HttpServerResponse
        ): Effect.Effect<HttpServerResponse.HttpServerResponse> => {
          // While retries dominate, every failure says "don't retry": the callers'
          // backends (us) are overloaded, so retries would only add load.
          if (response.status < 500) return Effect.succeed(response)
          const fiber = Fiber.getCurrent()!
          return rejecting(fiber) ? dontRetry(response, fiber) : Effect.succeed(response)
        },
        onFailure: (
          cause: Cause.Cause<unknown>
        ): Effect.Effect<HttpServerResponse.HttpServerResponse, unknown> => {
          if (Cause.hasInterruptsOnly(cause)) return Effect.failCause(cause)
          const fiber = Fiber.getCurrent()!
          const failure = Cause.findErrorOption(cause)
          if (Option.isSome(failure) && isSluiceError(failure.value)) {
            // Sluice errors keep their own mapping (`mapErrors`, outside); the retryable
            // ones become terminal while retries dominate.
            const error = failure.value
            // Only what is answered as a plain 503 becomes terminal (`ErrorResponse.isRetryable503`).
            if (!ErrorResponse.isRetryable503(error._tag) || !rejecting(fiber)) return Effect.failCause(cause)
            return Effect.fail(new Errors.DontRetry({ reason: "server", cause: error }))
          }
          if (!rejecting(fiber)) return Effect.failCause(cause)
          // Any other failure or defect: the response the server would send (500 for a
          // plain error, 404 for a missing route, ...) decided here, so that a 5xx
          // carries "don't retry" too, and the cause reported as the server reports it.
          // The response is a success: a failure carrying it as a defect would turn every
          // typed failure beside it into a defect for the middleware outside.
          return Effect.flatMap(HttpServerError.causeResponse(cause), ([response, rest]) =>
            Effect.andThen(
              ErrorReporter.report(rest),
              response.status >= 500 ? dontRetry(response, fiber) : Effect.succeed(response)
            )
          )
        }
      }
      const answered = Effect.matchCauseEffect(app, handlers) as HttpApp<E | Errors.DontRetry, R>
      return (fiber: Fiber.Fiber<unknown, unknown>): HttpApp<E | Errors.DontRetry, R> => {
        const request = Context.getUnsafe(fiber.context, HttpServerRequest.HttpServerRequest)
        const attempt = attemptOf(request, fiber.getRef(WireProtocol))
        const now = fiber.getRef(Clock.Clock).currentTimeMillisUnsafe()
        // Only a trusted caller's attempt number may change answers (to anyone): an
        // untrusted one is recorded apart, where it decides nothing.
        if (trustedOf(fiber, request)) histogram.recordUnsafe(now, attempt)
        else histogram.recordUntrustedUnsafe(now, attempt)
        return answered
      }
    }
    if (options.histogram !== undefined) return Effect.withFiber(guarded(options.histogram))
    // The histogram from context is the same service on every request of a server.
    const cached = lastOf(guarded)
    return Effect.withFiber((fiber) =>
      cached(Context.getUnsafe(fiber.context, RetryHistogram.RetryHistogram))(fiber)
    )
  }
}

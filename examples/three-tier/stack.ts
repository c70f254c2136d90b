/**
 * A three-tier stack on loopback: frontend → middle → backend, each a real
 * `effect/http` server on Node (`@effect/platform-node`), wired with @sluice/http.
 *
 * - backend: `criticality` (trusts the tiers inside: requests carrying the
 *   demo's shared secret in `x-sluice-trust`, see `Trust.sharedSecret`) →
 *   `retryGuard` (counts only trusted attempt numbers) → `loadShed`
 *   (a `LoadShedder` with a small capacity) → a handler that takes `serviceTime`.
 *   It can be switched "down": every request then fails with `Overloaded` (503),
 *   and it can hold requests marked `x-demo-hold: 1` (background load).
 * - middle: `criticality` → `mapErrors` → a handler calling the backend through
 *   a `SluiceHttpClient` (3 attempts, retry budget, adaptive throttle, congestion
 *   window). When its retries are spent the client fails with `DontRetry`, which
 *   `mapErrors` answers with `503` + `x-sluice-dont-retry`.
 * - frontend: the tier closest to the user sets the criticality per route
 *   (`/page` is CRITICAL, `/prefetch` SHEDDABLE) and calls the middle through its
 *   own `SluiceHttpClient` (also 3 attempts): it does not retry the middle's
 *   don't-retry answer.
 */
import { createServer } from "node:http"
import { NodeHttpServer } from "@effect/platform-node"
import { CongestionWindow, LoadShedder } from "@sluice/adaptive"
import { Criticality, Errors } from "@sluice/core"
import { Middleware, SluiceHttpClient, Trust } from "@sluice/http"
import { RetryHistogram } from "@sluice/retry"
import { Context, Deferred, Duration, Effect, Layer, Redacted, Schedule, type Scope } from "effect"
import { HttpClient, HttpRouter, HttpServer, HttpServerRequest, HttpServerResponse } from "effect/http"

export type Level = Criticality.Criticality
const zero = (): Record<Level, number> => ({ CRITICAL_PLUS: 0, CRITICAL: 0, SHEDDABLE_PLUS: 0, SHEDDABLE: 0 })

/** Counters of the backend, by the criticality it saw on the wire. */
export interface BackendStats {
  hits: number
  /** Failures the backend marked "don't retry" (its RetryHistogram saw too many retries). */
  dontRetry: number
  readonly arrived: Record<Level, number>
  readonly served: Record<Level, number>
  readonly shed: Record<Level, number>
  readonly attempts: Array<number>
}

export interface StackOptions {
  /** Backend capacity, in concurrent requests, for its LoadShedder. */
  readonly capacity?: number
  /** How long the backend works on one request. */
  readonly serviceTime?: Duration.Input
  /** The longest Retry-After the middle tier honours. */
  readonly maxRetryAfter?: Duration.Input
  /**
   * For comparison: the middle and frontend call downstream with the plain platform
   * client and retry every failure 3 times in all, as each layer of a naive stack
   * would (no typed errors, no don't-retry, no budget).
   */
  readonly naive?: boolean
  /** The secret the tiers inside send in `x-sluice-trust` (at least 16 characters). */
  readonly trustSecret?: string
}

export interface Stack {
  readonly frontend: string
  readonly middle: string
  readonly backend: string
  /** The header that makes a request one of the tiers' own (`x-sluice-trust`). */
  readonly trustHeaders: Readonly<Record<string, string>>
  readonly stats: BackendStats
  /** Middle-tier request count. */
  readonly middleHits: { value: number }
  /** Switches the backend to "always overloaded". */
  readonly setDown: (down: boolean) => void
  /** From now on the backend holds admitted requests marked `x-demo-hold: 1` until `release`. */
  readonly hold: Effect.Effect<void>
  readonly release: Effect.Effect<void>
  readonly shedder: LoadShedder.Service
  readonly reset: () => void
}

/**
 * Serves an app on a loopback port picked by the OS, for the life of the scope. Each tier's
 * app is its routes' effect (`HttpRouter.toHttpEffect`): a route's handler is interruptible,
 * so a caller that hangs up stops the tier's work and its client's retries downstream. A
 * plain effect given to `HttpServer.serve` would run uninterruptibly, to its end.
 */
export const serve = <E, R>(
  app: Middleware.HttpApp<E, R>
): Effect.Effect<
  string,
  never,
  Scope.Scope | Exclude<R, HttpServerRequest.HttpServerRequest | Scope.Scope>
> =>
  Effect.gen(function* () {
    const context = yield* Layer.build(
      HttpServer.serve(app).pipe(
        Layer.provideMerge(NodeHttpServer.layer(() => createServer(), { port: 0, host: "127.0.0.1" }))
      )
    ).pipe(Effect.orDie)
    return HttpServer.formatAddress(Context.get(context, HttpServer.HttpServer).address)
  })

const relay = (response: { readonly status: number; readonly text: Effect.Effect<string, unknown> }) =>
  Effect.map(
    Effect.orElseSucceed(response.text, () => ""),
    (body) => HttpServerResponse.text(body, { status: response.status, contentType: "application/json" })
  )

/** Builds the three tiers; they stop when the scope closes. */
export const makeStack = (
  options: StackOptions = {}
): Effect.Effect<Stack, never, Scope.Scope | HttpClient.HttpClient> =>
  Effect.gen(function* () {
    const serviceTime = Duration.fromInputUnsafe(options.serviceTime ?? "20 millis")
    const stats: BackendStats = {
      hits: 0,
      dontRetry: 0,
      arrived: zero(),
      served: zero(),
      shed: zero(),
      attempts: []
    }
    const middleHits = { value: 0 }
    let down = false
    let gate: Deferred.Deferred<void> | undefined

    // The naive stack's call: every failure retried, 3 attempts in all, then a plain 503.
    const platform = yield* HttpClient.HttpClient
    // The tiers inside prove who they are with a secret only they know (a real
    // deployment reads it from a Config.redacted); the frontend never trusts its callers.
    const secret = Redacted.make(options.trustSecret ?? "three-tier demo secret, not for production")
    const trust = yield* Trust.sharedSecret({ secret }).pipe(Effect.orDie)
    const inside = { headers: { "x-sluice-trust": Redacted.value(secret) } }
    const naiveCall = (url: string) =>
      HttpClient.filterStatusOk(platform)
        .get(url, inside)
        .pipe(
          Effect.retry({ times: 2 }),
          Effect.flatMap(relay),
          Effect.orElseSucceed(() => HttpServerResponse.empty({ status: 503 }))
        )

    // ---- backend ----
    const shedder = yield* LoadShedder.make({
      capacity: options.capacity ?? 8,
      smoothing: "50 millis",
      retryAfter: "1 second",
      // the demo holds requests in the backend to show shedding by utilization alone (its
      // scenarios count utilization against `capacity`): no hard bound here
      bound: false
    }).pipe(Effect.orDie)
    const work = Effect.gen(function* () {
      const level = yield* Criticality.current
      if (down) return yield* Effect.fail(new Errors.Overloaded({ reason: "down" }))
      const request = yield* HttpServerRequest.HttpServerRequest
      if (gate !== undefined && request.headers["x-demo-hold"] === "1") yield* Deferred.await(gate)
      else yield* Effect.sleep(serviceTime)
      stats.served[level]++
      return yield* HttpServerResponse.json({ tier: "backend", criticality: level })
    })
    // Counts every request that reached the backend, and what the shedder did with it.
    const count = <E, R>(app: Middleware.HttpApp<E, R>): Middleware.HttpApp<E, R> =>
      Effect.flatMap(
        Effect.zip(HttpServerRequest.HttpServerRequest, Criticality.current),
        ([request, level]) => {
          stats.hits++
          stats.arrived[level]++
          const attempt = Number(request.headers["x-sluice-attempt"] ?? "0")
          stats.attempts.push(attempt)
          return Effect.tap(app, (response) =>
            Effect.sync(() => {
              if (response.status === 503 && !down) stats.shed[level]++
              if (response.headers["x-sluice-dont-retry"] === "1") stats.dontRetry++
            })
          )
        }
      )
    const histogram = yield* RetryHistogram.make({ threshold: 0.1, minRequests: 20 }).pipe(Effect.orDie)
    const backendRouter = yield* HttpRouter.toHttpEffect(HttpRouter.add("GET", "/work", work))
    const backendApp = backendRouter.pipe(
      Middleware.loadShed({ shedder }),
      Middleware.retryGuard({ histogram }),
      Middleware.mapErrors,
      count,
      Middleware.criticality({ trust })
    )
    const backend = yield* serve(backendApp)

    // ---- middle ----
    const toBackend = yield* SluiceHttpClient.makeDefault({
      name: "middle",
      maxAttempts: 3,
      // room for the whole demo load in the first window (the default starts at 20)
      limiter: { algorithm: CongestionWindow.factory({ initial: 64 }) },
      maxRetryAfter: options.maxRetryAfter ?? "50 millis",
      schedule: Schedule.exponential("5 millis").pipe(Schedule.jittered)
    }).pipe(Effect.orDie)
    const middleRouter = yield* HttpRouter.toHttpEffect(
      HttpRouter.add(
        "GET",
        "/work",
        Effect.suspend(() => {
          middleHits.value++
          return options.naive === true
            ? naiveCall(`${backend}/work`)
            : Effect.flatMap(toBackend.get(`${backend}/work`, inside), relay)
        })
      )
    )
    const middleApp = middleRouter.pipe(Middleware.mapErrors, Middleware.criticality({ trust }))
    const middle = yield* serve(middleApp)

    // ---- frontend ----
    const toMiddle = yield* SluiceHttpClient.makeDefault({
      name: "frontend",
      maxAttempts: 3,
      limiter: { algorithm: CongestionWindow.factory({ initial: 64 }) },
      maxRetryAfter: "50 millis",
      schedule: Schedule.exponential("5 millis").pipe(Schedule.jittered)
    }).pipe(Effect.orDie)
    const callMiddle =
      options.naive === true
        ? naiveCall(`${middle}/work`)
        : Effect.flatMap(toMiddle.get(`${middle}/work`, inside), relay)
    const frontendRouter = yield* HttpRouter.toHttpEffect(
      Layer.mergeAll(
        HttpRouter.add("GET", "/page", callMiddle.pipe(Criticality.withCriticality("CRITICAL"))),
        HttpRouter.add("GET", "/prefetch", callMiddle.pipe(Criticality.withCriticality("SHEDDABLE"))),
        // whatever the user claims, at most CRITICAL
        HttpRouter.add("GET", "/claimed", callMiddle)
      )
    )
    const frontendApp = frontendRouter.pipe(
      Middleware.mapErrors,
      Middleware.criticality({ ceiling: "CRITICAL" })
    )
    const frontend = yield* serve(frontendApp)

    return {
      frontend,
      middle,
      backend,
      trustHeaders: inside.headers,
      stats,
      middleHits,
      setDown: (value) => {
        down = value
      },
      hold: Effect.map(Deferred.make<void>(), (d) => {
        gate = d
      }),
      release: Effect.suspend(() => {
        const d = gate
        gate = undefined
        return d === undefined ? Effect.void : Deferred.succeed(d, undefined)
      }),
      shedder,
      reset: () => {
        stats.hits = 0
        stats.dontRetry = 0
        stats.attempts.length = 0
        for (const record of [stats.arrived, stats.served, stats.shed]) {
          for (const level of Criticality.levels) record[level] = 0
        }
        middleHits.value = 0
      }
    }
  })

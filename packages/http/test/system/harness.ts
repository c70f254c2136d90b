/**
 * Shared pieces of the system tests: a real `NodeHttpServer` on a loopback port,
 * a `SluiceHttpClient` over undici composed as the README composes it, a plain
 * arrival counter for the server's handlers, metric reads by name and labels, and
 * readers for the typed errors the calls return.
 *
 * API assumptions beyond today's code are listed at the top of each test file.
 */
import { createServer } from "node:http"
import { NodeHttpClient, NodeHttpServer } from "@effect/platform-node"
import { AdaptiveThrottle, ConcurrencyLimiter } from "@sluice/adaptive"
import { SluiceHttpClient } from "@sluice/http"
import { RetryBudget } from "@sluice/retry"
import { Cause, Context, Effect, Exit, Layer, Metric } from "effect"
import type { Scope } from "effect"
import { HttpRouter, HttpServer, HttpServerRequest } from "effect/http"
import type { HttpServerResponse } from "effect/http"

/**
 * The client's options and those of its policies (`budget`, `throttle`, `limiter`,
 * as `layerDefault` takes them). `retryableStatuses`: the response statuses the
 * client retries, default `[408, 502, 503, 504]` (429 goes its own way through
 * `QuotaExceeded` and `Retry-After`); 500 is opt-in.
 */
export interface ClientOptions extends SluiceHttpClient.ClientOptions {
  readonly budget?: RetryBudget.RetryBudgetOptions | undefined
  readonly throttle?: AdaptiveThrottle.AdaptiveThrottleOptions | undefined
  readonly limiter?: ConcurrencyLimiter.ServiceOptions | undefined
}

/**
 * The client Layer as the README builds it: `SluiceHttpClient.layer(options)` over
 * undici, its budget, throttle and limiter the app's own services, provided beside it
 * (so a test can read their state).
 */
export const clientLayer = ({ budget, limiter, throttle, ...options }: ClientOptions) =>
  SluiceHttpClient.layer(options).pipe(
    Layer.provideMerge(
      Layer.mergeAll(
        RetryBudget.layer(budget),
        AdaptiveThrottle.layer(throttle),
        ConcurrencyLimiter.layer(limiter)
      )
    ),
    Layer.provide(NodeHttpClient.layerUndici)
  )

/**
 * The routes as one handler of the current request (a missing route fails with
 * `RouteNotFound`), for Sluice's middleware to wrap as it wraps a whole router.
 */
export const routes = <const Routes extends ReadonlyArray<HttpRouter.Route<any, any>>>(...routes: Routes) =>
  HttpRouter.toHttpEffect(HttpRouter.addAll(routes))

/**
 * Serves `app` on 127.0.0.1, port chosen by the OS, for the life of the scope and
 * returns its base URL and the `host:port` the client keys its throttle and
 * limiter by. Connections still open when the scope closes (a response whose
 * body never ends) are destroyed first, so closing the server cannot hang.
 */
export const serve = <E, R>(
  app: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>
): Effect.Effect<
  { readonly base: string; readonly host: string },
  never,
  Scope.Scope | Exclude<R, HttpServerRequest.HttpServerRequest | Scope.Scope>
> =>
  Effect.gen(function* () {
    const node = createServer()
    const context = yield* Layer.build(
      HttpServer.serve(app).pipe(
        Layer.provideMerge(NodeHttpServer.layer(() => node, { port: 0, host: "127.0.0.1" }))
      )
    ).pipe(Effect.orDie)
    // Added after the server's own finalizer, so it runs before it.
    yield* Effect.addFinalizer(() => Effect.sync(() => node.closeAllConnections()))
    const base = HttpServer.formatAddress(Context.get(context, HttpServer.HttpServer).address)
    return { base, host: new URL(base).host }
  })

/**
 * Server-side facts, counted by the test's own handlers: arrivals per route, the
 * `x-sluice-attempt` header of each (0 = a first try), and anything else a test
 * wants to tally.
 */
export class Arrivals {
  total = 0
  retries = 0
  readonly byRoute = new Map<string, number>()
  readonly retriesByRoute = new Map<string, number>()
  readonly counters = new Map<string, number>()

  add(name: string, n = 1): number {
    const next = (this.counters.get(name) ?? 0) + n
    this.counters.set(name, next)
    return next
  }

  count(name: string): number {
    return this.counters.get(name) ?? 0
  }

  route(name: string): number {
    return this.byRoute.get(name) ?? 0
  }

  retriesOf(name: string): number {
    return this.retriesByRoute.get(name) ?? 0
  }

  /** Records one arrival at `route`; returns the request's attempt number (0 = first try). */
  readonly record = (route: string): Effect.Effect<number, never, HttpServerRequest.HttpServerRequest> =>
    Effect.map(HttpServerRequest.HttpServerRequest, (request) => {
      const header = request.headers["x-sluice-attempt"]
      const attempt = header === undefined ? 0 : Number(header)
      this.total++
      this.byRoute.set(route, this.route(route) + 1)
      if (attempt !== 0) {
        this.retries++
        this.retriesByRoute.set(route, this.retriesOf(route) + 1)
      }
      return attempt
    })
}

// ---------------------------------------------------------------------------
// metrics

const matches = (attributes: Metric.Metric.AttributeSet | undefined, tags: Record<string, string>) =>
  Object.entries(tags).every(([k, v]) => attributes?.[k] === v)

const numberOf = (state: unknown): number | undefined => {
  const s = state as { count?: unknown; value?: unknown }
  if (typeof s.count === "number" || typeof s.count === "bigint") return Number(s.count)
  if (typeof s.value === "number" || typeof s.value === "bigint") return Number(s.value)
  return undefined
}

/**
 * The sum of a counter (or gauge) over every attribute set that carries `tags`
 * (e.g. `sluice_adaptive_throttle_throttled` of one host over all criticalities);
 * 0 when no such series exists yet.
 */
export const metricSum = (name: string, tags: Record<string, string>): Effect.Effect<number> =>
  Effect.map(Metric.snapshot, (snapshots) => {
    let sum = 0
    for (const snapshot of snapshots) {
      if (snapshot.id !== name || !matches(snapshot.attributes, tags)) continue
      sum += numberOf(snapshot.state) ?? 0
    }
    return sum
  })

/** A gauge's current value for exactly these attributes, `undefined` when never set. */
export const gaugeValue = (name: string, tags: Record<string, string>): Effect.Effect<number | undefined> =>
  Effect.map(Metric.snapshot, (snapshots) => {
    for (const snapshot of snapshots) {
      if (snapshot.id !== name) continue
      const attributes = snapshot.attributes ?? {}
      if (Object.keys(attributes).length === Object.keys(tags).length && matches(attributes, tags))
        return numberOf(snapshot.state)
    }
    return undefined
  })

/** Reads several counters now; `delta` reads them again and returns what changed. */
/** `rounds` rounds of `perRound` concurrent calls, one round after the other; every exit, in order. */
export const inRounds = <A, E>(
  rounds: number,
  perRound: number,
  call: () => Effect.Effect<A, E>
): Effect.Effect<Array<Exit.Exit<A, E>>> =>
  Effect.map(
    Effect.forEach(Array.from({ length: rounds }), () =>
      Effect.forEach(Array.from({ length: perRound }), () => Effect.exit(call()), {
        concurrency: "unbounded"
      })
    ),
    (waves) => waves.flat()
  )

export const counters = <K extends string>(
  series: Record<K, readonly [name: string, tags: Record<string, string>]>
): Effect.Effect<{ readonly delta: Effect.Effect<Record<K, number>> }> => {
  const keys = Object.keys(series) as Array<K>
  const read = Effect.forEach(keys, (k) => metricSum(series[k][0], series[k][1]))
  return Effect.map(read, (before) => ({
    delta: Effect.map(read, (after) => {
      const out = {} as Record<K, number>
      keys.forEach((k, i) => (out[k] = after[i]! - before[i]!))
      return out
    })
  }))
}

// ---------------------------------------------------------------------------
// typed errors

const tagOf = (u: unknown): unknown =>
  typeof u === "object" && u !== null ? (u as { readonly _tag?: unknown })._tag : undefined

/** The error and the errors it wraps (`cause`, `error`), outermost first. */
export const chainOf = (error: unknown): ReadonlyArray<unknown> => {
  const out: Array<unknown> = []
  let current: unknown = error
  for (let depth = 0; depth < 8 && typeof current === "object" && current !== null; depth++) {
    if (out.includes(current)) break
    out.push(current)
    const node = current as { readonly cause?: unknown; readonly error?: unknown }
    current = node.cause !== undefined ? node.cause : node.error
  }
  return out
}

/** Whether the error, or one it wraps, has this `_tag`. */
export const hasTag = (error: unknown, tag: string): boolean => chainOf(error).some((e) => tagOf(e) === tag)

/**
 * Whether `text` appears in the error the caller sees: in its message or any
 * string field of it or of an error it wraps (`reason`, `description`, a body, …).
 * Where the implementation puts the server's reason is its choice; that it
 * survives is the invariant.
 */
export const mentions = (error: unknown, text: string): boolean =>
  chainOf(error).some((e) => {
    const node = e as Record<string, unknown>
    if (typeof node.message === "string" && node.message.includes(text)) return true
    for (const key of Object.keys(node)) {
      const value = node[key]
      if (typeof value === "string" && value.includes(text)) return true
    }
    return false
  })

/**
 * Whether the failure says the call ran out of time: a `Cause.TimeoutError`
 * (Effect 3's `TimeoutException`) somewhere in it, or a `DontRetry` / `Overloaded`
 * whose reason names the deadline (`"timeout"`, or the limiter's `"queue-timeout"`),
 * or an attempt's deadline this process missed while it stalled ({@link isOwnStall}).
 */
export const isTimeout = (error: unknown): boolean =>
  isOwnStall(error) ||
  chainOf(error).some((e) => {
    if (Cause.isTimeoutError(e)) return true
    const reason = (e as { readonly reason?: unknown }).reason
    return reason === "timeout" || reason === "queue-timeout"
  })

/**
 * Whether the failure is a deadline this process missed because it did not run for at least
 * as long (a loaded host): a local `Overloaded` saying so, never the backend's drop.
 */
export const isOwnStall = (error: unknown): boolean =>
  chainOf(error).some((e) => {
    const node = e as { readonly _tag?: unknown; readonly origin?: unknown; readonly reason?: unknown }
    return (
      node._tag === "Overloaded" &&
      node.origin === "local" &&
      typeof node.reason === "string" &&
      node.reason.includes("while this process stalled")
    )
  })

/** The typed failure of an exit (`undefined` for a success or an interruption). */
export const failureOf = <A, E>(exit: Exit.Exit<A, E>): E | undefined => {
  if (Exit.isSuccess(exit)) return undefined
  const failure = Cause.findErrorOption(exit.cause)
  return failure._tag === "Some" ? failure.value : undefined
}

/** How a batch of calls ended, from the caller's side. */
export interface Tally {
  readonly calls: number
  readonly succeeded: number
  /** Failed with `Throttled`, or with an error that wraps one. */
  readonly throttled: number
  /** Any other typed failure. */
  readonly failed: number
  /** Interrupted (by the caller) or died. */
  readonly other: number
  readonly failures: ReadonlyArray<unknown>
}

export const tally = <A, E>(exits: Iterable<Exit.Exit<A, E>>): Tally => {
  let calls = 0
  let succeeded = 0
  let throttled = 0
  let failed = 0
  let other = 0
  const failures: Array<unknown> = []
  for (const exit of exits) {
    calls++
    if (Exit.isSuccess(exit)) {
      succeeded++
      continue
    }
    const error = failureOf(exit)
    if (error === undefined) {
      other++
      continue
    }
    failures.push(error)
    if (hasTag(error, "Throttled")) throttled++
    else failed++
  }
  return { calls, succeeded, throttled, failed, other, failures }
}

/** A short description of an error for assertion messages. */
export const describeError = (error: unknown): string =>
  chainOf(error)
    .map((e) => {
      const node = e as { readonly _tag?: unknown; readonly reason?: unknown }
      return `${String(node._tag)}${node.reason !== undefined ? `(${String(node.reason)})` : ""}`
    })
    .join(" > ")

/** Prints the figures of a test when `SLUICE_SYSTEM_VERBOSE` is set (for reports). */
export const report = (test: string, figures: Record<string, unknown>): Effect.Effect<void> =>
  Effect.sync(() => {
    if (process.env.SLUICE_SYSTEM_VERBOSE) console.log(`[system] ${test}: ${JSON.stringify(figures)}`)
  })

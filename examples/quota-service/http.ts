/**
 * The quota service over real HTTP: `npm run example:quota-service -- --http
 * [--instances 3] [--seconds 2] [--json]`.
 *
 * `instances` API servers (`effect/http` apps on `@effect/platform-node` servers, loopback
 * ports) each guard `GET /api/items` with `Middleware.quota` from @sluice/http: the caller is its
 * `x-api-key`, its plan comes from Redis, and every instance has its own `Quota`
 * service on the same Redis store, so the limits hold across instances. A denied
 * request gets `429` with `Retry-After`, `RateLimit-Policy` and `RateLimit`
 * (IETF draft); allowed responses carry the rate-limit headers too. A load client
 * sends requests for three API keys round-robin over the instances and counts
 * what was admitted against what the plans allow.
 */
import { createServer } from "node:http"
import { NodeHttpServer } from "@effect/platform-node"
import { Quota, QuotaConfig } from "@sluice/quota"
import * as IoRedis from "@sluice/quota/IoRedis"
import * as IoRedisClient from "@sluice/core/IoRedisClient"
import { Middleware, Protocol } from "@sluice/http"
import { Context, Duration, Effect, Layer } from "effect"
import type { Scope } from "effect"
import { HttpClient, HttpRouter, HttpServer, HttpServerResponse } from "effect/http"

export interface HttpQuotaOptions {
  readonly redisUrl?: string
  readonly instances?: number
  readonly seconds?: number
  /**
   * Keep sending past `seconds` until every API key has sent at least this many requests (on a
   * busy machine two seconds may not be enough to exceed a plan). Default 0.
   */
  readonly minRequests?: number
  /** A unique run id: the Redis keys of the run are prefixed with it and deleted at the end. */
  readonly run?: string
}

export interface HttpQuotaClientReport {
  readonly client: string
  readonly admitted: number
  readonly denied: number
  /** Admitted requests per instance. */
  readonly perInstance: ReadonlyArray<number>
  readonly allowedAtMost: number
  /** The `RateLimit-Policy` header of the client's last answer. */
  readonly policy: string | undefined
  /** The longest `Retry-After` (seconds) seen on a 429. */
  readonly maxRetryAfter: number
}

export interface HttpQuotaReport {
  readonly instances: number
  readonly seconds: number
  readonly elapsedMs: number
  readonly clients: ReadonlyArray<HttpQuotaClientReport>
}

/** 20 per second with bursts of 40, and at most 60 per minute */
const defaultPlan: QuotaConfig.PlanInput = {
  tiers: [
    { name: "spike", algorithm: "gcra", limit: 20, period: "1 second", burst: 40 },
    { name: "count", algorithm: "sliding-window", limit: 60, period: "1 minute" }
  ]
}
/** acme pays for more */
const acmePlan: QuotaConfig.PlanInput = {
  tiers: [
    { name: "spike", algorithm: "gcra", limit: 50, period: "1 second", burst: 100 },
    { name: "count", algorithm: "sliding-window", limit: 150, period: "1 minute" }
  ]
}
const clients = ["acme", "globex", "initech"]

/**
 * The most a plan can admit over `ms`, from an empty state: per tier, its burst (GCRA) or limit
 * (sliding window) plus what refills in `ms`. A sliding window's refill is real too: a run that
 * crosses the window's boundary sees the previous window's count weighted down as the new one
 * advances (at most `limit × ms / period` more), so the count tier alone is not a cap.
 */
const bound = (plan: QuotaConfig.PlanInput, ms: number) =>
  Math.min(
    ...(plan.tiers as ReadonlyArray<{ limit: number; burst?: number; period: Duration.Input }>).map(
      (tier) =>
        (tier.burst ?? tier.limit) +
        Math.floor((tier.limit * ms) / Duration.toMillis(Duration.fromInputUnsafe(tier.period)))
    )
  )

/** Serves `app` with its quota services on a loopback port the OS picks, for the life of the scope. */
const serve = <E, LE>(
  app: Middleware.HttpApp<E, Quota.Quota | Scope.Scope>,
  context: Layer.Layer<Quota.Quota | QuotaConfig.QuotaConfig, LE>
): Effect.Effect<string, never, Scope.Scope> =>
  Effect.gen(function* () {
    const built = yield* Layer.build(
      HttpServer.serve(app).pipe(
        Layer.provide(context),
        Layer.provideMerge(NodeHttpServer.layer(() => createServer(), { port: 0, host: "127.0.0.1" }))
      )
    ).pipe(Effect.orDie)
    return HttpServer.formatAddress(Context.get(built, HttpServer.HttpServer).address)
  })

export const runHttp = (
  options: HttpQuotaOptions = {}
): Effect.Effect<HttpQuotaReport, unknown, HttpClient.HttpClient> =>
  Effect.gen(function* () {
    const url = options.redisUrl ?? process.env.REDIS_URL ?? "redis://127.0.0.1:6379"
    const instances = options.instances ?? 3
    const seconds = options.seconds ?? 2
    const run = options.run ?? `${process.pid}-${Date.now()}`
    const plansKey = `example:quota-http:${run}:plans`
    const prefix = `example:quota-http:${run}:`
    yield* Effect.addFinalizer(() =>
      Effect.promise(async () => {
        const { Redis: IORedis } = await import("ioredis")
        const admin = new IORedis(url)
        const keys = await admin.keys(`example:quota-http:${run}:*`)
        if (keys.length > 0) await admin.del(...keys)
        await admin.quit()
      }).pipe(Effect.ignore)
    )
    // plans live in Redis: every instance sees the same ones
    const config = yield* IoRedis.makeConfig({ url, key: plansKey, default: defaultPlan })
    yield* config.setPlan("acme", acmePlan)

    const router = yield* HttpRouter.toHttpEffect(
      HttpRouter.add("GET", "/api/items", HttpServerResponse.json({ items: [] }))
    )
    const api = router.pipe(
      Middleware.quota({ client: (req) => Protocol.headerValue(req.headers["x-api-key"]) }),
      Middleware.mapErrors
    )
    const urls: Array<string> = []
    for (let i = 0; i < instances; i++) {
      // each instance its own Quota service, one shared Redis; fail-closed so that what this
      // example reports is exactly what Redis admitted, even when a busy machine misses the
      // deadline (a service would rather keep the default, "fallback", or choose "fail-open")
      // (store and plan source on the instance's one connection)
      const quota = Quota.layer({ mode: "fail-closed", deadline: "100 millis" }).pipe(
        Layer.provide(IoRedis.layerStoreShared({ prefix })),
        Layer.provideMerge(
          IoRedis.layerPlanStoreShared({ key: plansKey, default: defaultPlan, refresh: "1 second" })
        ),
        Layer.provide(IoRedisClient.layer({ url }))
      )
      urls.push(yield* serve(api, quota))
    }

    const http = yield* HttpClient.HttpClient
    const admitted: Record<string, Array<number>> = {}
    const denied: Record<string, number> = {}
    const policy: Record<string, string | undefined> = {}
    const maxRetryAfter: Record<string, number> = {}
    const sent: Record<string, number> = {}
    for (const c of clients) {
      admitted[c] = urls.map(() => 0)
      denied[c] = 0
      maxRetryAfter[c] = 0
      sent[c] = 0
    }
    const minRequests = options.minRequests ?? 0
    const startedAt = performance.now()
    const until = startedAt + seconds * 1000
    // Per API key a few callers in parallel, each going round the instances.
    const caller = (client: string, offset: number) =>
      Effect.gen(function* () {
        let instance = offset
        while (performance.now() < until || sent[client]! < minRequests) {
          sent[client]!++
          instance = (instance + 1) % urls.length
          const response = yield* http.get(`${urls[instance]}/api/items`, {
            headers: { "x-api-key": client }
          })
          yield* Effect.ignore(response.text)
          policy[client] = Protocol.headerValue(response.headers["ratelimit-policy"])
          if (response.status === 200) admitted[client]![instance]!++
          else if (response.status === 429) {
            denied[client]!++
            const ra = Number(response.headers["retry-after"])
            if (Number.isFinite(ra) && ra > maxRetryAfter[client]!) maxRetryAfter[client] = ra
          }
        }
      })
    yield* Effect.all(
      clients.flatMap((client) => Array.from({ length: 4 }, (_, k) => caller(client, k))),
      { concurrency: "unbounded", discard: true }
    )
    const elapsedMs = performance.now() - startedAt
    return {
      instances,
      seconds,
      elapsedMs: Math.round(elapsedMs),
      clients: clients.map((client) => ({
        client,
        admitted: admitted[client]!.reduce((a, b) => a + b, 0),
        denied: denied[client]!,
        perInstance: admitted[client]!,
        allowedAtMost: bound(client === "acme" ? acmePlan : defaultPlan, elapsedMs),
        policy: policy[client],
        maxRetryAfter: maxRetryAfter[client]!
      }))
    }
  }).pipe(Effect.scoped)

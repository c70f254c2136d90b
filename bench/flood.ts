/**
 * The closed-loop flood's parts, shared by `bench/overload.ts` (its flood phase) and
 * `bench/refusal-profile.ts`: the server `packages/http/README.md` shows, the bare 503
 * servers it is compared with, and autocannon in a child process.
 */
import { NodeHttpServer } from "@effect/platform-node"
import { LoadShedder } from "@sluice/adaptive"
import { Middleware, Trust } from "@sluice/http"
import { Quota, QuotaConfig, QuotaStore } from "@sluice/quota"
import { RetryHistogram } from "@sluice/retry"
import { Context, Effect, Layer, Redacted } from "effect"
import type { Scope } from "effect"
import { HttpRouter, HttpServer, HttpServerResponse } from "effect/http"
import { execFile } from "node:child_process"
import { createRequire } from "node:module"
import { createServer } from "node:http"

const autocannonBin = createRequire(import.meta.url).resolve("autocannon/autocannon.js")

export interface Cannon {
  readonly ok: number
  readonly non2xx: number
  readonly errors: number
  readonly timeouts: number
  readonly seconds: number
  readonly p50Ms: number
  readonly p99Ms: number
}

/** One autocannon process: `connections` keep-alive connections, each with one request outstanding. */
export const cannon = (
  url: string,
  connections: number,
  headers: Record<string, string>,
  durationMs: number
) =>
  Effect.callback<Cannon, Error>((resume) => {
    const argv = [
      autocannonBin,
      "--json",
      "-c",
      String(connections),
      "-d",
      String(durationMs / 1000),
      "-t",
      "10"
    ]
    for (const [name, value] of Object.entries(headers)) argv.push("-H", `${name}=${value}`)
    argv.push(url)
    const child = execFile(process.execPath, argv, { maxBuffer: 16 << 20 }, (error, stdout) => {
      if (error !== null) return resume(Effect.fail(error))
      try {
        const r = JSON.parse(stdout)
        resume(
          Effect.succeed({
            ok: r["2xx"],
            non2xx: r.non2xx,
            errors: r.errors,
            timeouts: r.timeouts,
            seconds: r.duration,
            p50Ms: r.latency.p50,
            p99Ms: r.latency.p99
          })
        )
      } catch (e) {
        resume(Effect.fail(new Error(`autocannon printed no JSON: ${String(e)}`)))
      }
    })
    return Effect.sync(() => child.kill())
  })

/** A flood's connections: half `SHEDDABLE`, half without a header (untrusted, so at most the ceiling). */
export const flood = (url: string, connections: number, durationMs: number) =>
  Effect.all(
    [
      cannon(url, Math.ceil(connections / 2), { "x-sluice-criticality": "SHEDDABLE" }, durationMs),
      cannon(url, Math.floor(connections / 2), {}, durationMs)
    ],
    { concurrency: 2 }
  )

export const TRUST_SECRET = "bench-overload-trust-secret"

export type Stage = <E, R>(app: Middleware.HttpApp<E, R>) => Middleware.HttpApp<any, any>

/**
 * The middleware of the README's server, innermost first (`app.pipe(...)` in this order),
 * with a quota on `x-api-key` after `retryGuard`. Named, so that a profile can build the
 * server one middleware at a time.
 */
export const readmeStages = (
  trust: Trust.TrustPolicy,
  enforce?: "always" | "overload"
): ReadonlyArray<readonly [name: string, stage: Stage]> => [
  ["loadShed", Middleware.loadShed() as Stage],
  ["retryGuard", Middleware.retryGuard() as Stage],
  [
    "quota",
    Middleware.quota({
      client: (request) => request.headers["x-api-key"],
      ...(enforce === undefined ? {} : { enforce })
    }) as Stage
  ],
  ["mapErrors", Middleware.mapErrors as Stage],
  ["criticality", Middleware.criticality({ trust, ceiling: "SHEDDABLE_PLUS" }) as Stage]
]

/**
 * The server `packages/http/README.md` shows ("A router with middleware"), with a quota
 * on `x-api-key` in front and `capacity` = the backend's units: the configuration a new
 * user runs, with its defaults. `outer` (default all five) keeps only that many of the
 * outermost middleware, in their places (a profile builds the server from the outside in).
 */
export const readmeServer = (
  handler: HttpServerResponse.HttpServerResponse | Effect.Effect<HttpServerResponse.HttpServerResponse>,
  capacity: number,
  outer = 5,
  extra: {
    /** a degraded handler: `Middleware.degrade` directly outside `loadShed`, as its docs say */
    readonly degraded?: Effect.Effect<HttpServerResponse.HttpServerResponse> | undefined
    /** `Middleware.degrade`'s `concurrency` */
    readonly degradedConcurrency?: number | undefined
    /** a middleware outside the whole stack (a bench's own tally) */
    readonly around?: Stage | undefined
    /** the quota's plans (default: one 100/s tier for everyone) and `enforce` mode */
    readonly plans?: QuotaConfig.QuotaConfigOptions | undefined
    readonly enforce?: "always" | "overload" | undefined
    /** the shedder's bound's queue (default: the `LoadShedder`'s) */
    readonly maxQueue?: number | undefined
  } = {}
): Effect.Effect<string, unknown, Scope.Scope> =>
  Effect.gen(function* () {
    const trust = yield* Trust.sharedSecret({ secret: Redacted.make(TRUST_SECRET) })
    const stages = readmeStages(trust, extra.enforce)
    const applied = [...stages.slice(stages.length - outer)]
    if (extra.degraded !== undefined) {
      const degrade = Middleware.degrade({
        handler: extra.degraded,
        ...(extra.degradedConcurrency === undefined ? {} : { concurrency: extra.degradedConcurrency })
      }) as Stage
      applied.splice(applied.findIndex(([name]) => name === "loadShed") + 1, 0, ["degrade", degrade])
    }
    if (extra.around !== undefined) applied.push(["around", extra.around])
    const SluiceLive = HttpRouter.middleware(
      (app) => applied.reduce((inner, [, stage]) => stage(inner), app as Middleware.HttpApp<any, any>),
      { global: true }
    )
    const QuotaLive = readmeQuota(extra.plans)
    return yield* serveLayer(
      HttpRouter.serve(Layer.mergeAll(HttpRouter.add("GET", "/", handler), SluiceLive), {
        disableLogger: true,
        disableListenLog: true
      }).pipe(
        Layer.provide(
          Layer.mergeAll(
            LoadShedder.layer(
              extra.maxQueue === undefined ? { capacity } : { capacity, bound: { maxQueue: extra.maxQueue } }
            ),
            RetryHistogram.layer(),
            QuotaLive
          )
        )
      )
    )
  })

/** The README server's quota, in memory: `plans`, by default one 100/s tier for everyone. */
export const readmeQuota = (
  plans: QuotaConfig.QuotaConfigOptions = {
    default: { tiers: [{ name: "spike", algorithm: "gcra", limit: 100, period: "1 second", burst: 100 }] }
  }
) => Quota.layer().pipe(Layer.provide(QuotaStore.layerMemory()), Layer.provide(QuotaConfig.layer(plans)))

export const serveLayer = <E>(layer: Layer.Layer<never, E, HttpServer.HttpServer>) =>
  Effect.gen(function* () {
    const context = yield* Layer.build(
      Layer.provideMerge(
        layer,
        NodeHttpServer.layer(() => createServer(), { port: 0, host: "127.0.0.1" })
      )
    )
    return HttpServer.formatAddress(Context.get(context, HttpServer.HttpServer).address)
  })

export const bareEffect503 = serveLayer(
  HttpRouter.serve(HttpRouter.add("GET", "/", HttpServerResponse.empty({ status: 503 })), {
    disableLogger: true,
    disableListenLog: true
  })
)

/**
 * Effect's route answering what the README's server answers a shed request: the same 503, the
 * same `retry-after` and the same JSON body (the wire protocol's error body), made once. What a
 * body costs Effect's server by itself, beside the bare 503's empty one.
 */
export const effectJson503 = serveLayer(
  HttpRouter.serve(
    HttpRouter.add(
      "GET",
      "/",
      HttpServerResponse.jsonUnsafe(
        { error: { _tag: "Overloaded", reason: "shed", retryAfterMs: 1000 } },
        { status: 503, headers: { "retry-after": "1" } }
      )
    ),
    { disableLogger: true, disableListenLog: true }
  )
)

export const bareNode503 = Effect.acquireRelease(
  Effect.callback<{ server: ReturnType<typeof createServer>; url: string }>((resume) => {
    const server = createServer((_, response) => {
      response.statusCode = 503
      response.end()
    })
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      resume(Effect.succeed({ server, url: `http://127.0.0.1:${port}` }))
    })
  }),
  ({ server }) =>
    Effect.callback<void>((resume) => {
      server.closeAllConnections()
      server.close(() => resume(Effect.void))
    })
).pipe(Effect.map(({ url }) => url))

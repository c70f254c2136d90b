/**
 * `npm run example:degraded`: a search service that answers from its first shard under
 * overload, and a client that falls back to its cache when even that is refused.
 *
 * - The server is the README's stack with `Middleware.degrade` directly outside `loadShed`: a
 *   full search asks all 4 shards (one of 4 backend units for 120 ms); a request the shedder
 *   would refuse gets the first shard's results instead (20 ms, at most 2 at once), marked
 *   `x-sluice-degraded: 1`, and only a request the degraded path cannot take either is a `503`.
 * - The client is a `SluiceHttpClient` with `Fallback.makeCache` around each search: a fresh
 *   answer is remembered per query; an overload signal (the `503` after its retries, a local
 *   refusal of its throttle or limiter) is answered from the cache, marked `Stale`.
 *
 * A user searches (CRITICAL) while 32 background prefetchers (SHEDDABLE) search in closed
 * loops. Prints one JSON object: what the user got (all full answers) and what the
 * prefetchers got (full, partial from the first shard, stale from the cache, failed).
 */
import { NodeHttpClient, NodeHttpServer } from "@effect/platform-node"
import { LoadShedder } from "@sluice/adaptive"
import { Criticality } from "@sluice/core"
import { Middleware, Protocol, SluiceHttpClient, Trust } from "@sluice/http"
import { Fallback, RetryHistogram } from "@sluice/retry"
import { Context, Effect, Layer, Semaphore } from "effect"
import { HttpRouter, HttpServer, HttpServerRequest, HttpServerResponse } from "effect/http"
import { createServer } from "node:http"
import { pathToFileURL } from "node:url"

const SHARDS = 4
const queries = ["effect", "overload", "shedding", "quota"]

interface SearchResult {
  readonly query: string
  readonly shards: number
  readonly hits: ReadonlyArray<string>
}

const hitsOf = (query: string, shards: number) =>
  Array.from({ length: shards }, (_, shard) => `${query}#shard${shard}`)

/** The search service: all shards on a backend of 4 units, or the first shard alone. */
const searchServer = Effect.gen(function* () {
  const units = yield* Semaphore.make(4)
  const queryOf = Effect.map(HttpServerRequest.HttpServerRequest, (request) =>
    String(new URL(request.url, "http://search").searchParams.get("q") ?? "")
  )
  const answer = (shards: number) => (query: string) =>
    HttpServerResponse.jsonUnsafe({ query, shards, hits: hitsOf(query, shards) } satisfies SearchResult)
  const allShards = Effect.flatMap(queryOf, (query) =>
    units.withPermits(1)(Effect.as(Effect.sleep("120 millis"), answer(SHARDS)(query)))
  )
  const firstShard = Effect.flatMap(queryOf, (query) =>
    Effect.as(Effect.sleep("20 millis"), answer(1)(query))
  )

  const Sluice = HttpRouter.middleware(
    (app) =>
      app.pipe(
        Middleware.loadShed(),
        Middleware.degrade({
          handler: firstShard,
          concurrency: 2,
          when: (request) => request.url.startsWith("/search")
        }),
        Middleware.retryGuard(),
        Middleware.mapErrors,
        // the example's callers are on loopback: their level is believed
        Middleware.criticality({ trust: Trust.loopback })
      ),
    { global: true }
  )
  const Server = HttpRouter.serve(Layer.mergeAll(HttpRouter.add("GET", "/search", allShards), Sluice), {
    disableLogger: true,
    disableListenLog: true
  }).pipe(
    Layer.provide(Layer.merge(LoadShedder.layer({ capacity: 4 }), RetryHistogram.layer())),
    Layer.provideMerge(NodeHttpServer.layer(() => createServer(), { port: 0, host: "127.0.0.1" }))
  )
  const context = yield* Layer.build(Server)
  return HttpServer.formatAddress(Context.get(context, HttpServer.HttpServer).address)
})

export const demo = Effect.gen(function* () {
  const base = yield* searchServer
  const client = yield* SluiceHttpClient.SluiceHttpClient
  const cache = yield* Fallback.makeCache<string, SearchResult>({ maxStale: "1 minute", capacity: 100 })
  const search = (query: string) =>
    client.get(`${base}/search?q=${query}`).pipe(
      Effect.flatMap((response) =>
        Effect.map(response.json, (body) => ({
          ...(body as unknown as SearchResult),
          degraded: Protocol.isDegraded(response.headers)
        }))
      ),
      cache.withCache(query)
    )
  const count = { full: 0, partial: 0, stale: 0, failed: 0 }
  const user = { ...count }
  const prefetch = { ...count }
  const record =
    (into: typeof count) =>
    (answer: Effect.Effect<Fallback.Answer<SearchResult & { degraded?: boolean }>, unknown>) =>
      Effect.match(answer, {
        onFailure: () => void into.failed++,
        onSuccess: (a) => {
          if (a._tag === "Stale") into.stale++
          else if (a.value.degraded === true) into.partial++
          else into.full++
        }
      })

  // A quiet start: every query answered in full, and remembered.
  for (const query of queries) yield* record(user)(search(query))
  const warm = { ...user }
  user.full = 0

  // Then 32 prefetchers in closed loops, and the user beside them.
  const prefetcher = (i: number) =>
    Effect.forEach(
      Array.from({ length: 8 }, (_, n) => queries[(i + n) % queries.length]!),
      (query) => record(prefetch)(search(query)),
      { discard: true }
    ).pipe(Criticality.withCriticality("SHEDDABLE"))
  const userSearches = Effect.forEach(
    Array.from({ length: 8 }, (_, n) => queries[n % queries.length]!),
    (query) => record(user)(search(query)),
    { discard: true }
  ).pipe(Criticality.withCriticality("CRITICAL"))
  yield* Effect.all([userSearches, ...Array.from({ length: 32 }, (_, i) => prefetcher(i))], {
    concurrency: "unbounded",
    discard: true
  })
  return { warm, user, prefetch }
}).pipe(
  Effect.scoped,
  Effect.provide(
    SluiceHttpClient.layerDefault({ maxAttempts: 2, timeout: "5 seconds" }).pipe(
      Layer.provide(NodeHttpClient.layerUndici)
    )
  )
)

const isMain = process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href
if (isMain) {
  Effect.runPromise(demo).then(
    (result) => {
      console.log(JSON.stringify(result, null, 2))
      process.exit(0)
    },
    (error) => {
      console.error(error)
      process.exit(1)
    }
  )
}

/**
 * The backend of `bench/hedge.ts`, run in its own process (forked with an IPC channel), so that
 * its work does not delay the client under test.
 *
 * A real `effect/http` server on Node (127.0.0.1, port 0). `/tail` answers in `medianMs`, except
 * for a 5% tail that takes 10× as long; `/busy` is the same work behind `Middleware.loadShed` with
 * a fixed concurrency limit of `units` and a short queue. The tail is exactly 1 in 20 arrivals of
 * each route and query, at a random place in each block of 20 (so that a 400-request phase has
 * its 5%, not 5% ± 1.1% as independent draws would give it; a hedge is an arrival like any
 * other). The server counts the attempts that reach it per route and query.
 *
 * Messages: it sends `{ type: "ready", base }` once listening; it answers
 * `{ type: "arrivals", id }` with `{ type: "arrivals", id, counts }`; `{ type: "exit" }` ends it.
 *
 * Not a benchmark of its own: `npm run bench:hedge` starts it.
 */
import { NodeHttpServer } from "@effect/platform-node"
import { ConcurrencyLimiter, LimitAlgorithm } from "@sluice/adaptive"
import { Middleware } from "@sluice/http"
import { Context, Duration, Effect, Layer } from "effect"
import { HttpRouter, HttpServer, HttpServerRequest, HttpServerResponse } from "effect/http"
import { createServer } from "node:http"

/** What the parent configures (the first argument, JSON). */
export interface BackendOptions {
  readonly medianMs: number
  readonly units: number
  /** arrivals per slow one (20: a 5% tail) */
  readonly tailBlock: number
  /** a slow arrival takes this many medians */
  readonly tailFactor: number
}

const {
  medianMs: MEDIAN_MS,
  units: UNITS,
  tailBlock: TAIL_BLOCK,
  tailFactor: TAIL_FACTOR
} = JSON.parse(
  process.argv[2] ?? '{"medianMs":250,"units":8,"tailBlock":20,"tailFactor":10}'
) as BackendOptions

/** Attempts that reached the server, by route and query. */
const arrivals: Record<string, number> = {}
/** Per route and query: where this block's slow arrival is, and how many of the block came. */
const blocks = new Map<string, { slow: number; seen: number }>()

const workMs = (key: string) => {
  let block = blocks.get(key)
  if (block === undefined || block.seen >= TAIL_BLOCK) {
    block = { slow: Math.floor(Math.random() * TAIL_BLOCK), seen: 0 }
    blocks.set(key, block)
  }
  return block.seen++ === block.slow ? MEDIAN_MS * TAIL_FACTOR : MEDIAN_MS
}

const work = (route: string) =>
  Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
    const key = `${route}${new URL(request.url, "http://x").search}`
    arrivals[key] = (arrivals[key] ?? 0) + 1
    return Effect.as(Effect.sleep(Duration.millis(workMs(key))), HttpServerResponse.text("ok"))
  })

const serve = Effect.gen(function* () {
  const limiter = yield* ConcurrencyLimiter.make({
    key: "bench-hedge-server",
    maxQueue: UNITS,
    maxWait: Duration.millis(MEDIAN_MS * 2),
    algorithm: () => LimitAlgorithm.fixed(UNITS)
  })
  const tail = yield* HttpRouter.toHttpEffect(
    HttpRouter.addAll([HttpRouter.route("GET", "/tail", work("tail"))])
  )
  const busy = yield* HttpRouter.toHttpEffect(
    HttpRouter.addAll([HttpRouter.route("GET", "/busy", work("busy"))])
  )
  const guarded = busy.pipe(Middleware.loadShed({ limiter }))
  const app = Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
    request.url.startsWith("/busy") ? guarded : tail
  )
  const context = yield* Layer.build(
    HttpServer.serve(app).pipe(
      Layer.provideMerge(NodeHttpServer.layer(() => createServer(), { port: 0, host: "127.0.0.1" }))
    )
  )
  return HttpServer.formatAddress(Context.get(context, HttpServer.HttpServer).address)
})

if (process.send !== undefined) {
  process.setSourceMapsEnabled(false)
  // Never outlive the parent, and never run for more than a few minutes whatever happens.
  process.on("disconnect", () => process.exit(0))
  setTimeout(() => process.exit(2), 5 * 60_000).unref()
  process.on("message", (message: { readonly type: string; readonly id?: number }) => {
    if (message.type === "exit") process.exit(0)
    if (message.type === "arrivals") process.send!({ type: "arrivals", id: message.id, counts: arrivals })
  })
  Effect.runPromise(
    Effect.scoped(
      Effect.flatMap(serve, (base) =>
        Effect.andThen(
          Effect.sync(() => process.send!({ type: "ready", base })),
          Effect.never
        )
      )
    )
  ).catch((error) => {
    console.error("bench:hedge backend failed:", error)
    process.exit(1)
  })
}

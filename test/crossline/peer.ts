/**
 * The main line's (Effect 4) side of the cross-line wire test (`wire.test.ts` runs it as a child
 * process, beside the 3.x line's `effect3/test/crossline/peer.ts`, which serves the same routes
 * and prints the same report).
 *
 * `peer.ts server` serves the routes below behind Sluice's middleware on a loopback port and
 * prints `{"port":N}`; `peer.ts client <base>` calls a server of either line with a
 * `SluiceHttpClient` and prints what it decoded, as JSON, on one line.
 *
 * Routes: `/echo` answers the criticality and attempt number the middleware decoded;
 * `/flaky/:key` refuses the first two requests of a key with `Overloaded`; `/throttle`
 * succeeds with the throttle flag set; `/error/:tag` fails with one fixed error of each kind
 * (its answer is `Middleware.mapErrors`'); `/count/:route` tells how many requests a route saw and
 * `/reset` forgets the counts (each client starts with it).
 */
import { NodeHttpClient, NodeHttpServer, NodeRuntime } from "@effect/platform-node"
import { Criticality, Errors } from "@sluice/core"
import { Middleware, Protocol, SluiceHttpClient, ThrottleSignal } from "@sluice/http"
import { Cause, Duration, Effect, Exit, Layer, Option, Schedule } from "effect"
import { HttpRouter, HttpServer, HttpServerRequest, HttpServerResponse } from "effect/http"
import { createServer } from "node:http"

// The fixed errors, the same on both lines.
const errors: Record<string, Errors.SluiceError> = {
  overloaded: new Errors.Overloaded({ reason: "orders shard eu-7 busy", retryAfter: Duration.seconds(2) }),
  quota: new Errors.QuotaExceeded({
    tier: "per-key",
    limit: 5,
    remaining: 0,
    retryAfter: Duration.seconds(3),
    client: "tenant-7"
  }),
  throttled: new Errors.Throttled({ key: "downstream", probability: 0.25 }),
  "circuit-open": new Errors.CircuitOpen({
    name: "payments",
    halfOpenAt: Number.POSITIVE_INFINITY,
    retryAfter: Duration.infinity
  }),
  "dont-retry": new Errors.DontRetry({
    reason: "budget",
    attempts: 2,
    cause: new Errors.Overloaded({ reason: "inner", retryAfter: Duration.seconds(1) })
  })
}

const counts = new Map<string, number>()
const count = (route: string) => {
  const n = (counts.get(route) ?? 0) + 1
  counts.set(route, n)
  return n
}

const router = HttpRouter.toHttpEffect(
  HttpRouter.addAll([
    HttpRouter.route(
      "GET",
      "/echo",
      Effect.gen(function* () {
        const request = yield* HttpServerRequest.HttpServerRequest
        count("echo")
        return yield* HttpServerResponse.json({
          criticality: yield* Criticality.currentCriticality,
          attempt: Protocol.parseAttempt(request.headers["x-sluice-attempt"])
        })
      })
    ),
    HttpRouter.route(
      "GET",
      "/flaky/:key",
      Effect.gen(function* () {
        const { key } = yield* HttpRouter.params
        const request = yield* HttpServerRequest.HttpServerRequest
        const n = count(`flaky/${key}`)
        if (n <= 2) return yield* Effect.fail(new Errors.Overloaded({ reason: `warming up (${n})` }))
        return yield* HttpServerResponse.json({
          arrivals: n,
          attempt: Protocol.parseAttempt(request.headers["x-sluice-attempt"])
        })
      })
    ),
    HttpRouter.route(
      "GET",
      "/throttle",
      Effect.sync(() => {
        count("throttle")
        return HttpServerResponse.text("ok").pipe(
          HttpServerResponse.setHeader(Protocol.defaultHeaderNames.throttle, "1")
        )
      })
    ),
    HttpRouter.route(
      "GET",
      "/error/:tag",
      Effect.gen(function* () {
        const { tag } = yield* HttpRouter.params
        count(`error/${tag}`)
        return yield* Effect.fail(errors[tag!]!)
      })
    ),
    HttpRouter.route(
      "GET",
      "/count/:route",
      Effect.gen(function* () {
        const request = yield* HttpServerRequest.HttpServerRequest
        const route = decodeURIComponent(new URL(request.url, "http://x").pathname.slice("/count/".length))
        return yield* HttpServerResponse.json({ count: counts.get(route) ?? 0 })
      })
    ),
    HttpRouter.route(
      "GET",
      "/reset",
      Effect.sync(() => {
        counts.clear()
        return HttpServerResponse.empty()
      })
    )
  ])
)

// Loopback callers are this test: their claimed level is believed.
const app = Effect.map(router, (handler) =>
  handler.pipe(Middleware.mapErrors, Middleware.criticality({ trust: () => true }))
)

const server = Effect.gen(function* () {
  const node = createServer()
  yield* Layer.launch(
    Layer.unwrap(Effect.map(app, (handler) => HttpServer.serve(handler))).pipe(
      Layer.provide(NodeHttpServer.layer(() => node, { port: 0, host: "127.0.0.1" })),
      Layer.tap(() =>
        Effect.sync(() => {
          const address = node.address()
          if (address === null || typeof address === "string") throw new Error("expected a TCP address")
          console.log(JSON.stringify({ port: address.port }))
        })
      )
    )
  )
})

/** What the client decoded: the typed error as Sluice's own error body (one JSON encoding per error). */
const outcome = <A>(exit: Exit.Exit<A, unknown>, onSuccess: (a: A) => unknown) => {
  if (Exit.isSuccess(exit)) return { ok: onSuccess(exit.value) }
  const failure = Cause.findErrorOption(exit.cause)
  if (Option.isNone(failure)) return { defect: Cause.pretty(exit.cause) }
  const error = failure.value
  return Middleware.isSluiceError(error)
    ? { error: Protocol.formatErrorBody(error) }
    : { other: String((error as { _tag?: unknown })._tag) }
}

const client = (base: string) =>
  Effect.gen(function* () {
    const client = yield* SluiceHttpClient.SluiceHttpClient
    const signals = yield* ThrottleSignal.ThrottleSignal
    const json = (path: string) =>
      Effect.flatMap(client.get(`${base}${path}`), (response) => response.json).pipe(Effect.exit)
    const countOf = (route: string) =>
      Effect.map(json(`/count/${encodeURIComponent(route)}`), (exit) =>
        Exit.isSuccess(exit) ? (exit.value as { count: number }).count : -1
      )

    yield* json("/reset")
    const echo = outcome(
      yield* json("/echo").pipe(Effect.provideService(Criticality.currentCriticality, "SHEDDABLE_PLUS")),
      (body) => body
    )
    const flaky = outcome(yield* json("/flaky/a"), (body) => body)
    const throttle = outcome(
      yield* Effect.exit(Effect.flatMap(client.get(`${base}/throttle`), (r) => r.text)),
      (text) => ({ text, signal: Option.getOrNull(signals.latest(new URL(base).host)) })
    )
    const errorsSeen: Record<string, unknown> = {}
    const arrivals: Record<string, number> = {}
    for (const tag of Object.keys(errors)) {
      errorsSeen[tag] = outcome(yield* json(`/error/${tag}`), (body) => body)
      arrivals[tag] = yield* countOf(`error/${tag}`)
    }
    return { echo, flaky, throttle, errors: errorsSeen, arrivals }
  }).pipe(
    Effect.provide(
      SluiceHttpClient.layerDefault({
        name: "crossline",
        maxAttempts: 3,
        // no waiting between attempts, and a Retry-After longer than this is not waited for
        schedule: Schedule.forever,
        maxRetryAfter: "100 millis",
        timeout: "10 seconds",
        budget: { minRetriesPerSecond: 100 }
      }).pipe(Layer.provideMerge(ThrottleSignal.layer()), Layer.provide(NodeHttpClient.layerUndici))
    )
  )

const [mode, base] = process.argv.slice(2)
if (mode === "server") NodeRuntime.runMain(server)
else if (mode === "client" && base !== undefined)
  NodeRuntime.runMain(Effect.map(client(base), (report) => console.log(JSON.stringify(report))))
else {
  console.error("usage: peer.ts server | client <base>")
  process.exit(2)
}

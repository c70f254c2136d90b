import { NodeHttpClient } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Cause, Duration, Effect, Exit, Layer, Option, Result, Schedule, Stream } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { AimdInterval } from "@sluice/adaptive"
import { Criticality, Errors } from "@sluice/core"
import { Quota, QuotaConfig, QuotaStore } from "@sluice/quota"
import { Middleware, SluiceHttpClient, ThrottleSignal } from "@sluice/http"
import { routes, serve } from "./utils.js"
import { isOwnStall } from "./system/harness.js"

const makeBackend = () => {
  const hits = new Map<string, number>()
  const hit = (name: string) => {
    const n = (hits.get(name) ?? 0) + 1
    hits.set(name, n)
    return n
  }
  const route = (
    name: string,
    respond: (n: number) => Effect.Effect<HttpServerResponse.HttpServerResponse, any, any>
  ) => Effect.suspend(() => respond(hit(name)))
  const app = routes(
    HttpRouter.route(
      "GET",
      "/echo",
      route("echo", () =>
        Effect.map(Effect.zip(HttpServerRequest.HttpServerRequest, Criticality.current), ([req, level]) =>
          HttpServerResponse.jsonUnsafe({
            criticality: req.headers["x-sluice-criticality"],
            attempt: req.headers["x-sluice-attempt"],
            level
          })
        )
      )
    ),
    HttpRouter.route(
      "GET",
      "/throttle",
      route("throttle", () =>
        Effect.succeed(HttpServerResponse.text("ok", { headers: { "x-sluice-throttle": "1" } }))
      )
    ),
    HttpRouter.route(
      "GET",
      "/json-throttle",
      route("json-throttle", () =>
        Effect.succeed(HttpServerResponse.jsonUnsafe({ throttle: true, value: 1 }))
      )
    ),
    HttpRouter.route(
      "GET",
      "/overloaded",
      route("overloaded", () =>
        Effect.succeed(HttpServerResponse.empty({ status: 503, headers: { "retry-after": "0" } }))
      )
    ),
    HttpRouter.route(
      "POST",
      "/overloaded",
      route("post-overloaded", () => Effect.succeed(HttpServerResponse.empty({ status: 503 })))
    ),
    HttpRouter.route(
      "GET",
      "/dont-retry",
      route("dont-retry", () =>
        Effect.succeed(HttpServerResponse.empty({ status: 503, headers: { "x-sluice-dont-retry": "1" } }))
      )
    ),
    HttpRouter.route(
      "GET",
      "/quota",
      route("quota", () =>
        Effect.fail(
          new Errors.QuotaExceeded({
            tier: "spike",
            limit: 20,
            remaining: 0,
            retryAfter: Duration.seconds(30)
          })
        )
      )
    ),
    HttpRouter.route(
      "GET",
      "/quota-brief",
      route("quota-brief", (n) =>
        n === 1
          ? Effect.succeed(
              HttpServerResponse.empty({
                status: 429,
                headers: { "retry-after": "0", ratelimit: '"spike";r=0;t=0' }
              })
            )
          : Effect.succeed(HttpServerResponse.text("ok"))
      )
    ),
    HttpRouter.route(
      "GET",
      "/flaky",
      route("flaky", (n) =>
        n < 3
          ? Effect.succeed(HttpServerResponse.empty({ status: 503 }))
          : Effect.map(HttpServerRequest.HttpServerRequest, (req) =>
              HttpServerResponse.text(String(req.headers["x-sluice-attempt"]))
            )
      )
    ),
    HttpRouter.route(
      "GET",
      "/sampled",
      route("sampled", () => Effect.succeed(HttpServerResponse.empty({ status: 204 })))
    ),
    HttpRouter.route(
      "GET",
      "/hang",
      route("hang", () => Effect.never)
    ),
    HttpRouter.route(
      "GET",
      "/stalled-body",
      route("stalled-body", () =>
        Effect.succeed(
          HttpServerResponse.stream(Stream.concat(Stream.make(new TextEncoder().encode("[")), Stream.never), {
            contentType: "application/json"
          })
        )
      )
    )
  ).pipe(Effect.map((app) => app.pipe(Middleware.mapErrors, Middleware.criticality({ trust: () => true }))))
  return { app, hits }
}

// Zero backoff keeps the tests fast; the policy is the real one. Private policy
// instances per test (`layerDefault`); the shared ones are tested in Policies.test.ts.
const clientLayer = (options: SluiceHttpClient.DefaultOptions = {}) =>
  SluiceHttpClient.layerDefault({ schedule: Schedule.forever, ...options }).pipe(
    Layer.provide(NodeHttpClient.layerUndici)
  )

const failure = <A, E>(exit: Exit.Exit<A, E>): E => {
  if (Exit.isSuccess(exit)) throw new Error("expected a failure")
  const e = Cause.findErrorOption(exit.cause)
  if (Option.isNone(e)) throw new Error(`expected a typed failure: ${Cause.pretty(exit.cause)}`)
  return e.value
}

describe("SluiceHttpClient over a real NodeHttpServer", () => {
  // Once with the throttle and limiter, once with the limiter only.
  it.live.each([
    ["throttle and limiter", {}],
    ["limiter only", { throttle: false as const }]
  ] as const)("every wire-protocol row arrives as the right typed outcome: %s", ([, variant]) =>
    Effect.gen(function* () {
      const { app, hits } = makeBackend()
      const base = yield* serve(yield* app)
      const client = yield* SluiceHttpClient.SluiceHttpClient
      const signals = yield* ThrottleSignal.ThrottleSignal
      const host = new URL(base).host

      // request: criticality and attempt
      const echo = yield* client.get(`${base}/echo`).pipe(
        Effect.flatMap((r) => r.json),
        Criticality.withCriticality("SHEDDABLE")
      )
      expect(echo).toEqual({ criticality: "SHEDDABLE", attempt: "0", level: "SHEDDABLE" })

      // attempt numbers count up across retries
      const flaky = yield* client.get(`${base}/flaky`).pipe(Effect.flatMap((r) => r.text))
      expect(flaky).toBe("2")
      expect(hits.get("flaky")).toBe(3)

      // response: throttle flag → success + signal
      const throttled = yield* client.get(`${base}/throttle`)
      expect(throttled.status).toBe(200)
      expect(signals.latest(host)).toEqual(Option.some(true))
      yield* client.get(`${base}/echo`)
      expect(signals.latest(host)).toEqual(Option.some(false))
      // the JSON attribute (this client opted in)
      const jsonThrottled = yield* client.get(`${base}/json-throttle`).pipe(Effect.flatMap((r) => r.json))
      expect(jsonThrottled).toEqual({ throttle: true, value: 1 })
      expect(signals.latest(host)).toEqual(Option.some(true))

      // 503 → Overloaded, retried 3 times in all → DontRetry(attempts)
      const overloaded = failure(yield* Effect.exit(client.get(`${base}/overloaded`)))
      expect(overloaded._tag).toBe("DontRetry")
      if (overloaded._tag === "DontRetry") {
        expect(overloaded.reason).toBe("attempts")
        expect(overloaded.attempts).toBe(3)
        expect(overloaded.cause).toEqual(
          new Errors.Overloaded({ reason: "server", retryAfter: Duration.zero })
        )
      }
      expect(hits.get("overloaded")).toBe(3)

      // 503 + x-sluice-dont-retry → DontRetry(server), one hit
      const dont = failure(yield* Effect.exit(client.get(`${base}/dont-retry`)))
      expect(dont).toEqual(
        new Errors.DontRetry({ reason: "server", cause: new Errors.Overloaded({ reason: "server" }) })
      )
      expect(hits.get("dont-retry")).toBe(1)

      // 429 asking for longer than the client waits → not retried, QuotaExceeded inside
      const quota = failure(yield* Effect.exit(client.get(`${base}/quota`)))
      expect(quota._tag).toBe("DontRetry")
      if (quota._tag === "DontRetry") {
        expect(quota.reason).toBe("not-retryable")
        expect(quota.cause).toEqual(
          new Errors.QuotaExceeded({
            tier: "spike",
            limit: 20,
            remaining: 0,
            retryAfter: Duration.seconds(30)
          })
        )
      }
      expect(hits.get("quota")).toBe(1)

      // 429 with a short Retry-After → honoured and retried
      const brief = yield* client.get(`${base}/quota-brief`).pipe(Effect.flatMap((r) => r.text))
      expect(brief).toBe("ok")
      expect(hits.get("quota-brief")).toBe(2)

      // 204: sampled out, a success
      const sampled = yield* client.get(`${base}/sampled`)
      expect(sampled.status).toBe(204)

      // POST is not retried unless the caller opts in
      const post = failure(yield* Effect.exit(client.post(`${base}/overloaded`)))
      expect(post._tag === "DontRetry" && post.reason).toBe("not-retryable")
      expect(hits.get("post-overloaded")).toBe(1)
      const postRetried = failure(
        yield* Effect.exit(client.post(`${base}/overloaded`).pipe(SluiceHttpClient.withRetries(true)))
      )
      expect(postRetried._tag === "DontRetry" && postRetried.reason).toBe("attempts")
      expect(hits.get("post-overloaded")).toBe(4)
    }).pipe(
      Effect.provide(
        clientLayer({ throttleFromJson: true, budget: { minRetriesPerSecond: 100 }, ...variant }).pipe(
          Layer.provideMerge(ThrottleSignal.layer())
        )
      )
    )
  )

  it.live("transport errors and attempt timeouts are retried, then come out as DontRetry", () =>
    Effect.gen(function* () {
      const { app, hits } = makeBackend()
      const base = yield* serve(yield* app)
      const client = yield* SluiceHttpClient.SluiceHttpClient
      const hang = failure(yield* Effect.exit(client.get(`${base}/hang`)))
      // On a host so loaded that this process does not run for a whole 50 ms bound, the
      // miss is its own (a local refusal, not retried); otherwise the backend's drop.
      if (isOwnStall(hang)) {
        expect(hang._tag === "DontRetry" && hang.reason).toBe("refused")
        expect(hits.get("hang")).toBeLessThanOrEqual(3)
      } else {
        expect(hang._tag === "DontRetry" && hang.reason).toBe("attempts")
        expect(hang._tag === "DontRetry" && Cause.isTimeoutError(hang.cause)).toBe(true)
        expect(hits.get("hang")).toBe(3)
      }
      // nothing listens on port 9 of loopback (discard): connection refused
      const refused = failure(yield* Effect.exit(client.get("http://127.0.0.1:9/")))
      expect(refused._tag === "DontRetry" && refused.reason).toBe("attempts")
      // Effect 4: a transport failure is an HttpClientError whose reason is a TransportError
      // (Effect 3's RequestError with reason "Transport")
      expect(refused._tag === "DontRetry" && (refused.cause as any)?._tag).toBe("HttpClientError")
      expect(refused._tag === "DontRetry" && (refused.cause as any)?.reason?._tag).toBe("TransportError")
    }).pipe(
      Effect.provide(
        clientLayer({ attemptTimeout: "50 millis", throttle: false, budget: { minRetriesPerSecond: 100 } })
      )
    )
  )

  it.live("timeout is the whole call's deadline: a hung backend ends the call once, by its timeout", () =>
    Effect.gen(function* () {
      const { app, hits } = makeBackend()
      const base = yield* serve(yield* app)
      const client = yield* SluiceHttpClient.SluiceHttpClient
      const hang = failure(yield* Effect.exit(client.get(`${base}/hang`)))
      expect(hang._tag === "DontRetry" && hang.reason).toBe("timeout")
      // the one attempt that was cut off is what the call spent its deadline on
      expect(hits.get("hang")).toBe(1)
    }).pipe(Effect.provide(clientLayer({ timeout: "1 second", throttle: false })))
  )

  it.live("timeout ends with a returned response's headers: reading its body is the caller's", () =>
    Effect.gen(function* () {
      const { app } = makeBackend()
      const base = yield* serve(yield* app)
      const client = yield* SluiceHttpClient.SluiceHttpClient
      const response = yield* client.get(`${base}/stalled-body`)
      expect(response.status).toBe(200)
      // the call's 300 ms are long gone while the body still stalls: the read is bounded
      // only by the caller's own timeout
      const read = yield* Effect.result(Effect.timeout(response.text, "600 millis"))
      expect(Result.isFailure(read) && Cause.isTimeoutError(read.failure)).toBe(true)
    }).pipe(Effect.provide(clientLayer({ timeout: "300 millis", throttle: false })))
  )

  it.effect("rejects bad options naming the field", () =>
    Effect.gen(function* () {
      const result = yield* Effect.result(Layer.build(clientLayer({ maxAttempts: 0 })).pipe(Effect.scoped))
      expect(Result.isFailure(result) && result.failure.message).toContain("maxAttempts")
    })
  )

  it.live("a quota middleware's 429 arrives as QuotaExceeded with tier, limit and Retry-After", () =>
    Effect.gen(function* () {
      const app = yield* routes(HttpRouter.route("GET", "/", Effect.succeed(HttpServerResponse.text("ok"))))
      const base = yield* serve(app.pipe(Middleware.quota({ client: () => "acme" })))
      const client = yield* SluiceHttpClient.SluiceHttpClient
      expect((yield* client.get(base + "/")).status).toBe(200)
      const denied = failure(yield* Effect.exit(client.get(base + "/")))
      expect(denied._tag === "DontRetry" && denied.reason).toBe("not-retryable")
      const cause = denied._tag === "DontRetry" ? denied.cause : undefined
      expect(cause).toBeInstanceOf(Errors.QuotaExceeded)
      if (cause instanceof Errors.QuotaExceeded) {
        expect(cause.tier).toBe("hourly")
        expect(cause.limit).toBe(1)
        expect(cause.remaining).toBe(0)
        // the store's answer, to the millisecond (from the body, not the header's whole
        // seconds): within the window (an approximated sliding window may ask for up to two)
        const seconds = Duration.toSeconds(cause.retryAfter)
        expect(seconds).toBeGreaterThan(60)
        expect(seconds).toBeLessThanOrEqual(7200)
      }
    }).pipe(
      Effect.provide(
        Layer.mergeAll(
          clientLayer({ throttle: false }),
          Quota.layer().pipe(
            Layer.provide(QuotaStore.layerMemory()),
            Layer.provideMerge(
              QuotaConfig.layer({
                default: {
                  tiers: [{ name: "hourly", algorithm: "sliding-window", limit: 1, period: "1 hour" }]
                }
              })
            )
          )
        )
      )
    )
  )

  it.live("throttle signals drive an AimdInterval", () =>
    Effect.gen(function* () {
      const { app } = makeBackend()
      const base = yield* serve(yield* app)
      const client = yield* SluiceHttpClient.SluiceHttpClient
      const aimd = yield* AimdInterval.make({ min: "1 second", max: "1 minute", step: "1 second" })
      yield* ThrottleSignal.followAimd(aimd, { key: new URL(base).host })
      yield* client.get(`${base}/throttle`)
      yield* client.get(`${base}/throttle`)
      yield* Effect.repeat(Effect.sleep("5 millis"), {
        until: () => aimd.intervalUnsafe() === 4000,
        times: 400
      })
      expect(aimd.intervalUnsafe()).toBe(4000)
      yield* client.get(`${base}/echo`)
      yield* Effect.repeat(Effect.sleep("5 millis"), {
        until: () => aimd.intervalUnsafe() === 3000,
        times: 400
      })
      expect(aimd.intervalUnsafe()).toBe(3000)
    }).pipe(Effect.provide(clientLayer({ throttle: false }).pipe(Layer.provideMerge(ThrottleSignal.layer()))))
  )

  it.live("the client's retry budget caps retries across requests", () =>
    Effect.gen(function* () {
      const { app, hits } = makeBackend()
      const base = yield* serve(yield* app)
      const client = yield* SluiceHttpClient.SluiceHttpClient
      // one retry per 10-second window, whatever the traffic
      const first = failure(yield* Effect.exit(client.get(`${base}/overloaded`)))
      expect(first._tag === "DontRetry" && first.reason).toBe("budget")
      expect(hits.get("overloaded")).toBe(2)
      const second = failure(yield* Effect.exit(client.get(`${base}/overloaded`)))
      expect(second._tag === "DontRetry" && second.reason).toBe("budget")
      expect(hits.get("overloaded")).toBe(3)
    }).pipe(Effect.provide(clientLayer({ throttle: false, budget: { ratio: 0, minRetriesPerSecond: 0.1 } })))
  )
})

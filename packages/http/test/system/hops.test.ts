/**
 * System tests: what a refusal keeps as it crosses the hops of a three-tier stack A → B → C.
 *
 * Real `NodeHttpServer`s on 127.0.0.1 and `SluiceHttpClient`s over undici. C is a Sluice
 * server (`Middleware.mapErrors`) that refuses every request: `/busy` with an `Overloaded`
 * whose reason is longer than 200 characters and looks like JSON, `/quota` with a
 * `QuotaExceeded` (429, `Retry-After: 1`, a limit of 5 per key). B is a Sluice server whose
 * handler calls C through its own `SluiceHttpClient` and fails with whatever that client
 * failed with (`mapErrors` answers it). A is the test, calling B through the harness's client.
 *
 * Invariants: C's reason reaches A as C wrote it (no JSON inside it, nothing cut off); C's
 * quota reaches A as a `QuotaExceeded` with C's tier and limit and a retry hint no earlier
 * than C's; and B, which already retried, makes A retry nothing.
 */
import { NodeHttpClient } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Errors } from "@sluice/core"
import { Middleware, Protocol, SluiceHttpClient } from "@sluice/http"
import { Duration, Effect, Layer, Schedule } from "effect"
import { HttpClient, HttpRouter, HttpServerResponse } from "effect/http"
import { Arrivals, chainOf, clientLayer, describeError, failureOf, report, routes, serve } from "./harness.js"

// Longer than the 200 characters a foreign body's text is cut to, with quotes and braces in it.
const REASON =
  `orders database busy: shard "eu-7" {"queue": 412, "limit": 400} is over its write queue; ` +
  `replica lag 3.2 s, failing over to "eu-8"; ${"retry later, ".repeat(12)}end of reason`

const QUOTA = new Errors.QuotaExceeded({
  tier: "per-key",
  limit: 5,
  remaining: 0,
  retryAfter: Duration.seconds(1)
})

const tierC = (arrivals: Arrivals) =>
  Effect.map(
    routes(
      HttpRouter.route(
        "GET",
        "/busy",
        Effect.andThen(arrivals.record("busy"), Effect.fail(new Errors.Overloaded({ reason: REASON })))
      ),
      HttpRouter.route("GET", "/quota", Effect.andThen(arrivals.record("quota"), Effect.fail(QUOTA)))
    ),
    Middleware.mapErrors
  )

const tierB = (arrivals: Arrivals, client: SluiceHttpClient.Client, c: string) =>
  Effect.map(
    routes(
      HttpRouter.route(
        "GET",
        "/:route",
        Effect.gen(function* () {
          const { route } = yield* HttpRouter.params
          yield* arrivals.record(route!)
          const response = yield* client.get(`${c}/${route}`)
          return HttpServerResponse.text(yield* response.text)
        })
      )
    ),
    Middleware.mapErrors
  )

/** Every string field of the error and of the errors it wraps. */
const stringsOf = (error: unknown): Array<string> =>
  chainOf(error).flatMap((e) =>
    Object.values(e as Record<string, unknown>).filter((v): v is string => typeof v === "string")
  )

const find = (error: unknown, tag: string): any => chainOf(error).find((e) => (e as any)._tag === tag)

// Zero backoff keeps the tests short; budgets large enough never to be the limit here.
const fast = { schedule: Schedule.forever, budget: { minRetriesPerSecond: 100 } } as const

const stack = (bOptions: SluiceHttpClient.DefaultOptions) =>
  Effect.gen(function* () {
    const atC = new Arrivals()
    const atB = new Arrivals()
    const c = yield* serve(yield* tierC(atC))
    // B's platform client lives as long as the test's scope, like B's server.
    const undici = yield* Layer.build(NodeHttpClient.layerUndici)
    const clientB = yield* SluiceHttpClient.makeDefault(bOptions).pipe(Effect.provide(undici), Effect.orDie)
    const b = yield* serve(yield* tierB(atB, clientB, c.base))
    return { atB, atC, b: b.base }
  })

describe("system: what crosses the hops A → B → C", () => {
  it.live("C's reason reaches A as C wrote it: no JSON inside JSON, nothing cut off", () =>
    Effect.gen(function* () {
      const { atB, atC, b } = yield* stack({ name: "hops-b-busy", ...fast })
      const client = yield* SluiceHttpClient.SluiceHttpClient
      const error = failureOf(yield* Effect.exit(client.get(`${b}/busy`)))
      const overloaded = find(error, "Overloaded")
      const figures = {
        arrivalsAtB: atB.route("busy"),
        arrivalsAtC: atC.route("busy"),
        error: describeError(error),
        reasonAtA: overloaded?.reason
      }
      yield* report("hops: reason", figures)

      const summary = JSON.stringify(figures)
      // B retried C (3 attempts) and said "don't retry": A sent B one request.
      expect(atC.route("busy"), summary).toBe(3)
      expect(atB.route("busy"), summary).toBe(1)
      expect(error?._tag, summary).toBe("DontRetry")
      // The Overloaded A sees carries C's reason, whole and as it was written.
      expect(overloaded?.reason, summary).toBe(REASON)
      for (const text of stringsOf(error)) {
        expect(text.includes(`"error"`), summary).toBe(false)
        expect(text.includes(`"_tag"`), summary).toBe(false)
        expect(text.endsWith("…"), summary).toBe(false)
      }
    }).pipe(Effect.provide(clientLayer({ name: "hops-a-busy", ...fast })))
  )

  it.live(
    "C's 429 + Retry-After reaches A as a QuotaExceeded with C's tier, limit and a hint no earlier than C's",
    () =>
      Effect.gen(function* () {
        // B honours C's Retry-After once (2 attempts), then gives up.
        const { atB, atC, b } = yield* stack({ name: "hops-b-quota", ...fast, maxAttempts: 2 })
        const client = yield* SluiceHttpClient.SluiceHttpClient
        const error = failureOf(yield* Effect.exit(client.get(`${b}/quota`)))
        const quota = find(error, "QuotaExceeded")
        // What B sends on the wire, read by a plain client.
        const raw = yield* HttpClient.get(`${b}/quota`).pipe(Effect.provide(NodeHttpClient.layerUndici))
        const policy = Protocol.parseRateLimit(raw.headers["ratelimit-policy"])
        const figures = {
          arrivalsAtB: atB.route("quota"),
          arrivalsAtC: atC.route("quota"),
          error: describeError(error),
          quota:
            quota === undefined ? undefined : { ...quota, retryAfter: Duration.toMillis(quota.retryAfter) },
          wire: { status: raw.status, headers: raw.headers }
        }
        yield* report("hops: quota", figures)

        const summary = JSON.stringify(figures)
        // The quota, its tier and its limit (from C's RateLimit-Policy, or its body) reach A...
        expect(quota, summary).toBeDefined()
        expect(quota.tier, summary).toBe("per-key")
        expect(quota.limit, summary).toBe(5)
        expect(quota.remaining, summary).toBe(0)
        // ...with a retry hint no earlier than what C said.
        expect(Duration.toMillis(quota.retryAfter), summary).toBeGreaterThanOrEqual(1000)
        // B already waited and retried: A does not retry (two calls from A, two attempts each at C).
        expect(error?._tag, summary).toBe("DontRetry")
        expect(atB.route("quota"), summary).toBe(2)
        expect(atC.route("quota"), summary).toBe(4)
        // On the wire B says 429 with the hint and the quota's headers, and "don't retry".
        expect(raw.status, summary).toBe(429)
        expect(Number(raw.headers["retry-after"]), summary).toBeGreaterThanOrEqual(1)
        expect(raw.headers["x-sluice-dont-retry"], summary).toBe("1")
        expect(policy, summary).toEqual([{ name: "per-key", params: { q: 5 } }])
        expect(Protocol.parseRateLimit(raw.headers["ratelimit"]), summary).toEqual([
          { name: "per-key", params: { r: 0, t: 1 } }
        ])
      }).pipe(Effect.provide(clientLayer({ name: "hops-a-quota", ...fast })))
  )
})

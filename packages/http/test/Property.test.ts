import { NodeHttpClient } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Cause, Clock, Duration, Effect, Exit, Layer } from "effect"
import { HttpClient, HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import fc from "fast-check"
import { LoadShedder, ThresholdMonitor } from "@sluice/adaptive"
import { Criticality } from "@sluice/core"
import { Quota, QuotaConfig, QuotaStore } from "@sluice/quota"
import { Middleware, SluiceHttpClient } from "@sluice/http"
import { Backoff, RetryHistogram } from "@sluice/retry"
import { routes, serve } from "./utils.js"

// Header values a client can put on the wire: printable ASCII (Node refuses control characters).
const printable = fc.string({
  unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)),
  maxLength: 60
})
const hostileNumber = fc.oneof(
  fc.integer({ min: -1_000_000_000, max: 1_000_000_000_000 }).map(String),
  fc.double().map(String), // NaN, Infinity, -0, 1e+300, 5e-324
  fc.bigInt({ min: 10n ** 15n, max: 10n ** 40n }).map(String),
  fc.constantFrom("-1", "0x10", "1e3", " 2 ", "+3", "1.5", "", "00000000000000000000000007")
)
const httpDate = fc
  .date({ min: new Date(-8_000_000_000_000), max: new Date(250_000_000_000_000), noInvalidDate: true })
  .map((d) => d.toUTCString())
const retryAfter = fc.oneof(hostileNumber, httpDate, printable)
const criticalityClaim = fc.oneof(
  fc.constantFrom(
    ...Criticality.levels,
    "critical_plus",
    "Critical-Plus",
    " CRITICAL_PLUS ",
    "CRITICAL_PLUS\t",
    "ROOT"
  ),
  printable,
  fc.string({ minLength: 33, maxLength: 500, unit: fc.constantFrom("A", "_", "C", "R") })
)

const ceiling: Criticality.Criticality = "SHEDDABLE_PLUS"

const ERROR_BODY_TIMER = 7_777

describe("hostile header values (property tests over a real NodeHttpServer)", () => {
  it.live(
    "the server: never a 500, never raises an untrusted caller's criticality",
    () =>
      Effect.gen(function* () {
        const histogram = yield* RetryHistogram.make({ minRequests: 5 })
        const shedder = yield* LoadShedder.make({ capacity: 1000 })
        const monitor = yield* ThresholdMonitor.make({ thresholds: { rate: 1e-9 } })
        const app = yield* routes(
          HttpRouter.route(
            "GET",
            "/",
            Effect.map(Criticality.current, (level) => HttpServerResponse.jsonUnsafe({ level }))
          )
        )
        const base = yield* serve(
          app.pipe(
            Middleware.backpressure({ operation: "root", monitor, json: true }),
            Middleware.quota({ client: (req) => req.headers["x-api-key"] }),
            Middleware.loadShed({ shedder }),
            Middleware.retryGuard({ histogram }),
            Middleware.mapErrors,
            Middleware.criticality({ ceiling })
          )
        )
        const client = yield* HttpClient.HttpClient
        yield* Effect.promise(() =>
          fc.assert(
            fc.asyncProperty(criticalityClaim, hostileNumber, printable, async (claim, attempt, apiKey) => {
              const [status, body] = await Effect.runPromiseExit(
                client
                  .get(base + "/", {
                    headers: {
                      "x-sluice-criticality": claim,
                      "x-sluice-attempt": attempt,
                      "x-api-key": apiKey
                    }
                  })
                  .pipe(Effect.flatMap((r) => Effect.map(r.json, (json) => [r.status, json as any] as const)))
              ).then((exit) => {
                if (Exit.isFailure(exit)) throw new Error(Cause.pretty(exit.cause))
                return exit.value
              })
              expect(status).not.toBe(500)
              if (status === 200) {
                const level = body.level as Criticality.Criticality
                expect(Criticality.rank(level)).toBeLessThanOrEqual(Criticality.rank(ceiling))
                expect(level).toBe(Criticality.clamp(Criticality.parse(claim), ceiling))
              } else {
                expect([429, 503]).toContain(status)
              }
            }),
            { numRuns: 150 }
          )
        )
      }).pipe(
        Effect.provide(
          Layer.mergeAll(
            NodeHttpClient.layerUndici,
            Quota.layer().pipe(
              Layer.provide(QuotaStore.layerMemory()),
              Layer.provideMerge(
                QuotaConfig.layer({
                  default: {
                    tiers: [{ name: "spike", algorithm: "gcra", limit: 50, period: "1 second", burst: 5 }]
                  }
                })
              )
            )
          )
        )
      ),
    60_000
  )

  it.live(
    "the client: hostile Retry-After and flags never make it wait longer than its maximum",
    () =>
      Effect.gen(function* () {
        // The server answers with whatever the test asks for in x-test-* headers.
        const app = yield* routes(
          HttpRouter.route(
            "GET",
            "/",
            Effect.map(HttpServerRequest.HttpServerRequest, (req) => {
              const h = req.headers
              const headers: Record<string, string> = {}
              if (h["x-test-retry-after"] !== undefined) headers["retry-after"] = h["x-test-retry-after"]
              if (h["x-test-throttle"] !== undefined) headers["x-sluice-throttle"] = h["x-test-throttle"]
              if (h["x-test-dont-retry"] !== undefined)
                headers["x-sluice-dont-retry"] = h["x-test-dont-retry"]
              if (h["x-test-ratelimit"] !== undefined) headers["ratelimit"] = h["x-test-ratelimit"]
              return HttpServerResponse.text("x", { status: Number(h["x-test-status"]), headers })
            })
          )
        )
        const base = yield* serve(app)
        const maxRetryAfter = 40
        const client = yield* SluiceHttpClient.makeDefault({
          maxAttempts: 3,
          maxRetryAfter: Duration.millis(maxRetryAfter),
          schedule: Backoff.exponential({ base: "1 millis", max: "5 millis" }),
          budget: { minRetriesPerSecond: 1000 },
          // Told apart from the backoff sleeps below: the timer bounding each error body.
          errorBodyTimeout: Duration.millis(ERROR_BODY_TIMER)
        })
        yield* Effect.promise(() =>
          fc.assert(
            fc.asyncProperty(
              fc.constantFrom(200, 204, 400, 429, 500, 503),
              retryAfter,
              printable,
              fc.oneof(fc.constant(undefined), printable),
              printable,
              async (status, ra, throttle, dontRetry, ratelimit) => {
                // A clock that records every wait instead of waiting: the waits are exact, the test fast.
                const recorded: Array<number> = []
                const clock: Clock.Clock = {
                  currentTimeMillisUnsafe: () => Date.now(),
                  currentTimeNanosUnsafe: () => BigInt(Date.now()) * 1_000_000n,
                  monotonicTimeNanosUnsafe: () => process.hrtime.bigint(),
                  currentTimeMillis: Effect.sync(() => Date.now()),
                  currentTimeNanos: Effect.sync(() => BigInt(Date.now()) * 1_000_000n),
                  monotonicTimeNanos: Effect.sync(() => process.hrtime.bigint()),
                  sleep: (d) => Effect.sync(() => void recorded.push(Duration.toMillis(d)))
                }
                const headers: Record<string, string> = {
                  "x-test-status": String(status),
                  "x-test-retry-after": ra,
                  "x-test-throttle": throttle,
                  "x-test-ratelimit": ratelimit
                }
                if (dontRetry !== undefined) headers["x-test-dont-retry"] = dontRetry
                const exit = await Effect.runPromiseExit(
                  client.get(base + "/", { headers }).pipe(Effect.provideService(Clock.Clock, clock))
                )
                // typed outcomes only, never a defect
                if (Exit.isFailure(exit)) {
                  // (Effect 4's causes are flat: every reason a typed failure, none a defect or interruption)
                  expect(exit.cause.reasons.every(Cause.isFailReason)).toBe(true)
                  const error = Cause.findErrorOption(exit.cause)
                  expect(error._tag).toBe("Some")
                  if (error._tag === "Some") expect(["DontRetry", "Throttled"]).toContain(error.value._tag)
                } else {
                  expect([200, 204, 400, 500]).toContain(exit.value.status)
                }
                const sleeps = recorded.filter((ms) => ms !== ERROR_BODY_TIMER)
                expect(sleeps.length).toBeLessThanOrEqual(2)
                for (const ms of sleeps) {
                  expect(ms).toBeGreaterThanOrEqual(0)
                  expect(ms).toBeLessThanOrEqual(maxRetryAfter)
                }
              }
            ),
            { numRuns: 150 }
          )
        )
      }).pipe(Effect.provide(NodeHttpClient.layerUndici)),
    60_000
  )
})

/**
 * System tests: the client's `timeout` bounds the whole call, permit wait and
 * error bodies included, and every limiter permit comes back.
 *
 * Real `NodeHttpServer` on 127.0.0.1 + `SluiceHttpClient` over undici. Invariants
 * are counts and orderings, never durations: each call is also raced against a
 * generous guard (several times its timeout) only so that a hang is reported as a
 * failed assertion instead of a stuck test.
 *
 * API assumptions (beyond today's code):
 * - `ClientOptions.timeout` is the call's deadline: it covers the wait for a
 *   limiter permit, the exchange and the reading of an error body (a `503`/`429`
 *   whose body never ends fails the call by the deadline, with its permit released).
 *   When it runs out the caller sees a typed failure that says so: a
 *   `TimeoutException`, or a `DontRetry` / `Overloaded` with reason `"timeout"`
 *   (or the limiter's `"queue-timeout"`), at any depth of `cause`.
 * - `sluice_concurrency_limiter_in_flight` (gauge, label `key = <host:port>`)
 *   holds the host's current in-flight count once the calls have settled.
 */
import { HttpRouter, HttpServerResponse } from "effect/http"
import { describe, expect, it } from "@effect/vitest"
import { LimitAlgorithm } from "@sluice/adaptive"
import { Criticality } from "@sluice/core"
import { SluiceHttpClient } from "@sluice/http"
import { Effect, type Exit, Fiber, Option, Stream } from "effect"
import {
  Arrivals,
  clientLayer,
  describeError,
  failureOf,
  gaugeValue,
  isTimeout,
  report,
  serve,
  tally,
  routes
} from "./harness.js"

// A guard, not an assertion on time: far beyond every deadline below.
const GUARD = "6 seconds"

/** A response whose headers promise 100 000 bytes and whose body stops after a few. */
const neverEndingBody = (status: number, headers: Record<string, string> = {}) =>
  HttpServerResponse.stream(
    Stream.concat(Stream.make(new TextEncoder().encode("database busy")), Stream.never),
    {
      status,
      contentType: "text/plain",
      headers: { "content-length": "100000", ...headers }
    }
  )

describe("system: the timeout bounds the whole call", () => {
  it.live(
    "a 503 / 429 whose body never comes: the call fails by its timeout and every permit returns",
    () => {
      const limit = 8
      return Effect.gen(function* () {
        const arrivals = new Arrivals()
        const app = yield* routes(
          HttpRouter.route("GET", "/busy", Effect.as(arrivals.record("busy"), neverEndingBody(503))),
          HttpRouter.route(
            "GET",
            "/quota",
            Effect.as(arrivals.record("quota"), neverEndingBody(429, { "retry-after": "0" }))
          ),
          HttpRouter.route("GET", "/ok", Effect.as(arrivals.record("ok"), HttpServerResponse.text("ok")))
        )
        const { base, host } = yield* serve(app)
        const client = yield* SluiceHttpClient.SluiceHttpClient

        // As many hanging calls as the host has permits, all at once.
        const broken = yield* Effect.forEach(
          Array.from({ length: limit }, (_, i) => (i % 2 === 0 ? "busy" : "quota")),
          (route) => Effect.timeoutOption(Effect.exit(client.get(`${base}/${route}`)), GUARD),
          { concurrency: "unbounded" }
        )
        const hung = broken.filter(Option.isNone).length
        const settled = broken.filter(Option.isSome).map((o) => o.value)
        const errors = settled.map(failureOf)

        // Afterwards the host has all its permits again: `limit` healthy requests at
        // once are all admitted (the queue is 0, so a missing permit would refuse one).
        const healthy = tally(
          (yield* Effect.forEach(
            Array.from({ length: limit }),
            () => Effect.timeoutOption(Effect.exit(client.get(`${base}/ok`)), GUARD),
            { concurrency: "unbounded" }
          )).flatMap((o) => (Option.isSome(o) ? [o.value] : []))
        )
        const inFlight = yield* gaugeValue("sluice_concurrency_limiter_in_flight", {
          key: `${host}/CRITICAL`
        })
        const figures = {
          hung,
          failed: errors.filter((e) => e !== undefined).length,
          errors: errors.slice(0, 4).map((e) => (e === undefined ? "success" : describeError(e))),
          timeouts: errors.filter((e) => e !== undefined && isTimeout(e)).length,
          arrivals: Object.fromEntries(arrivals.byRoute),
          serverRetries: Object.fromEntries(arrivals.retriesByRoute),
          healthy: { ...healthy, failures: healthy.failures.slice(0, 3).map(describeError) },
          inFlight
        }
        yield* report("never-ending error body", figures)

        const summary = JSON.stringify(figures)
        // No call outlived its deadline (only the guard could have stopped it)...
        expect(hung, summary).toBe(0)
        // ...and each one failed, by its timeout.
        expect(
          errors.every((e) => e !== undefined && isTimeout(e)),
          summary
        ).toBe(true)
        // Every permit came back.
        expect(healthy.succeeded, summary).toBe(limit)
        expect(inFlight, summary).toBe(0)
      }).pipe(
        Effect.provide(
          clientLayer({
            name: "system-error-body",
            // Long enough for a loaded machine to set up 8 connections in; the guard is 6 s.
            timeout: "1 second",
            limiter: { algorithm: () => LimitAlgorithm.fixed(limit), maxQueue: 0 }
          })
        )
      )
    }
  )

  it.live("a call queued behind slow calls fails by its timeout, before the queue drains", () =>
    Effect.gen(function* () {
      const arrivals = new Arrivals()
      const app = yield* routes(
        // Each holder takes an eighth of the timeout: alone it would succeed.
        HttpRouter.route(
          "GET",
          "/slow",
          Effect.andThen(
            arrivals.record("slow"),
            Effect.sleep("250 millis").pipe(
              Effect.andThen(Effect.sync(() => arrivals.add("served"))),
              Effect.as(HttpServerResponse.text("ok"))
            )
          )
        ),
        HttpRouter.route("GET", "/late", Effect.as(arrivals.record("late"), HttpServerResponse.text("ok")))
      )
      const { base } = yield* serve(app)
      const client = yield* SluiceHttpClient.SluiceHttpClient

      // CRITICAL holders keep arriving (10/s against a service of 4/s), so the queue ahead
      // of the SHEDDABLE late call never empties, however slow the machine is.
      const fibers: Array<Fiber.Fiber<Option.Option<Exit.Exit<unknown, unknown>>>> = []
      let arriving = true
      const spawn = Effect.forkScoped(Effect.timeoutOption(Effect.exit(client.get(`${base}/slow`)), GUARD))
      fibers.push(yield* spawn)
      const feeder = yield* Effect.forkChild(
        Effect.whileLoop({
          while: () => arriving,
          body: () => Effect.andThen(Effect.sleep("100 millis"), spawn),
          step: (fiber) => void fibers.push(fiber)
        })
      )
      // The first holder reached the server: it has the permit, the others queue.
      yield* Effect.repeat(Effect.sleep("5 millis"), {
        until: () => arrivals.route("slow") > 0,
        times: 1000
      })
      // The late call: behind all of them in the queue (less critical, so it is served last
      // whatever order the holders queued in).
      const late = yield* Effect.timeoutOption(
        Effect.exit(client.get(`${base}/late`).pipe(Criticality.withCriticality("SHEDDABLE"))),
        GUARD
      )
      // How many holders the server had answered when the late call ended.
      const servedWhenLateEnded = arrivals.count("served")
      arriving = false
      yield* Fiber.join(feeder)
      const holders = fibers.length
      const held = yield* Effect.forEach(fibers, Fiber.join)
      const error = Option.isSome(late) ? failureOf(late.value) : undefined
      const figures = {
        late: Option.isNone(late) ? "hung" : late.value._tag,
        error: error === undefined ? undefined : describeError(error),
        servedWhenLateEnded,
        holders: tally(held.flatMap((o) => (Option.isSome(o) ? [o.value] : []))),
        arrivals: Object.fromEntries(arrivals.byRoute)
      }
      yield* report("permit wait", figures)

      const summary = JSON.stringify(figures)
      expect(Option.isSome(late), summary).toBe(true)
      // The late call failed by its own timeout...
      expect(error !== undefined && isTimeout(error), summary).toBe(true)
      // ...while the queue ahead of it was still draining.
      expect(servedWhenLateEnded, summary).toBeLessThan(holders)
    }).pipe(
      Effect.provide(
        clientLayer({
          name: "system-permit-wait",
          timeout: "2 seconds",
          // one limiter for every level, so that the SHEDDABLE late call queues behind the others
          limitPerCriticality: false,
          limiter: { algorithm: () => LimitAlgorithm.fixed(1) }
        })
      )
    )
  )
})

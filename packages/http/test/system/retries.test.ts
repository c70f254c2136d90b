/**
 * System tests: which answers are retried, how often, and what the caller learns.
 *
 * Real `NodeHttpServer` on 127.0.0.1 + `SluiceHttpClient` over undici. The server
 * counts every arrival and its `x-sluice-attempt` header; invariants are counts.
 *
 * API assumptions (beyond today's code):
 * - `ClientOptions.retryableStatuses` (a list of status codes): the statuses the
 *   client treats as a backend's refusal and retries, default `[408, 502, 503, 504]`
 *   (429 keeps its own rule through `QuotaExceeded` and `Retry-After`); 500 is
 *   retried only when listed. Typed locally in `harness.ts` (`ClientOptions`) so
 *   this file compiles before the option exists.
 * - A retryable status fails the attempt with a typed error (after the retries, a
 *   `DontRetry`), and the server's reason (the body) appears in that error: in its
 *   `message` or a string field of it or of an error it wraps (`cause`). Any other
 *   status (a 500 not opted in, a 404) is the application's answer: it comes back as
 *   a response, as `HttpClient` returns it, with its body for the caller to read.
 */
import { HttpRouter, HttpServerResponse } from "effect/http"
import { describe, expect, it } from "@effect/vitest"
import { SluiceHttpClient } from "@sluice/http"
import { Effect, Exit, Schedule } from "effect"
import {
  Arrivals,
  clientLayer,
  describeError,
  failureOf,
  mentions,
  report,
  routes,
  serve
} from "./harness.js"

const REASON = "database busy"

/** A server answering `/status/:code` with that status and the reason as its body. */
const statusServer = (arrivals: Arrivals) =>
  routes(
    HttpRouter.route(
      "GET",
      "/status/:code",
      Effect.flatMap(HttpRouter.params, (params) => {
        const code = Number(params.code)
        return Effect.as(arrivals.record(String(code)), HttpServerResponse.text(REASON, { status: code }))
      })
    ),
    HttpRouter.route(
      "GET",
      "/dont-retry/:code",
      Effect.flatMap(HttpRouter.params, (params) => {
        const code = Number(params.code)
        return Effect.as(
          arrivals.record(`dont-retry-${code}`),
          HttpServerResponse.text(REASON, {
            status: code,
            headers: { "x-sluice-dont-retry": "1", "retry-after": "0" }
          })
        )
      })
    )
  )

// Zero backoff keeps the tests short; a budget large enough never to be the limit here.
const base = { schedule: Schedule.forever, budget: { minRetriesPerSecond: 100 } } as const

describe("system: what is retried", () => {
  it.live("the server says don't retry: exactly one attempt reaches it", () =>
    Effect.gen(function* () {
      const arrivals = new Arrivals()
      const { base: url } = yield* serve(yield* statusServer(arrivals))
      const client = yield* SluiceHttpClient.SluiceHttpClient
      const codes = [503, 429, 502] as const
      const results: Array<{ code: number; error: string | undefined }> = []
      for (const code of codes) {
        for (let i = 0; i < 3; i++) {
          const exit = yield* Effect.exit(client.get(`${url}/dont-retry/${code}`))
          const error = failureOf(exit)
          results.push({ code, error: error === undefined ? undefined : describeError(error) })
        }
      }
      const figures = {
        arrivals: Object.fromEntries(arrivals.byRoute),
        serverRetries: arrivals.retries,
        results
      }
      yield* report("dont-retry", figures)

      const summary = JSON.stringify(figures)
      // Three calls per status, one arrival each, every one a first try.
      for (const code of codes) expect(arrivals.route(`dont-retry-${code}`), summary).toBe(3)
      expect(arrivals.retries, summary).toBe(0)
      // ...and each call failed as a terminal DontRetry.
      for (const { error } of results) expect(error?.startsWith("DontRetry"), summary).toBe(true)
    }).pipe(Effect.provide(clientLayer({ name: "system-dont-retry", ...base })))
  )

  it.live(
    "502, 503, 504 and 408 are retried (3 attempts), 500 is not unless opted in; the server's reason reaches the caller",
    () =>
      Effect.gen(function* () {
        const arrivals = new Arrivals()
        const { base: url } = yield* serve(yield* statusServer(arrivals))
        const client = yield* SluiceHttpClient.SluiceHttpClient
        const outcomes: Record<string, { exit: string; error?: string; mentionsReason?: boolean }> = {}
        const call = (code: number) =>
          Effect.map(Effect.exit(client.get(`${url}/status/${code}`)), (exit) => {
            const error = failureOf(exit)
            outcomes[code] = Exit.isSuccess(exit)
              ? { exit: `Success(${exit.value.status})` }
              : error === undefined
                ? { exit: "Failure (untyped)" }
                : { exit: "Failure", error: describeError(error), mentionsReason: mentions(error, REASON) }
            return error
          })
        const retried = [502, 503, 504, 408] as const
        const errors = new Map<number, unknown>()
        for (const code of [...retried, 500, 404]) errors.set(code, yield* call(code))
        const figures = { arrivals: Object.fromEntries(arrivals.byRoute), outcomes }
        yield* report("statuses (default)", figures)

        const summary = JSON.stringify(figures)
        for (const code of retried) {
          // Retried: three attempts in all (the default maxAttempts)...
          expect(arrivals.route(String(code)), `${code}: ${summary}`).toBe(3)
          expect(arrivals.retriesOf(String(code)), `${code}: ${summary}`).toBe(2)
          // ...then a typed failure that keeps the server's reason.
          const error = errors.get(code)
          expect(error, `${code}: ${summary}`).toBeDefined()
          expect(mentions(error, REASON), `${code}: ${summary}`).toBe(true)
        }
        // 500: an application error, not retried by default; returned as the response it is.
        expect(arrivals.route("500"), summary).toBe(1)
        expect(outcomes[500]?.exit, summary).toBe("Success(500)")
        // A 404 says nothing about load: never retried.
        expect(arrivals.route("404"), summary).toBe(1)
      }).pipe(Effect.provide(clientLayer({ name: "system-statuses", ...base })))
  )

  it.live("500 is retried when the client opts in with retryableStatuses", () =>
    Effect.gen(function* () {
      const arrivals = new Arrivals()
      const { base: url } = yield* serve(yield* statusServer(arrivals))
      const client = yield* SluiceHttpClient.SluiceHttpClient
      const exit = yield* Effect.exit(client.get(`${url}/status/500`))
      const error = failureOf(exit)
      const figures = {
        arrivals: Object.fromEntries(arrivals.byRoute),
        exit: exit._tag,
        error: error === undefined ? undefined : describeError(error)
      }
      yield* report("statuses (500 opted in)", figures)

      const summary = JSON.stringify(figures)
      expect(arrivals.route("500"), summary).toBe(3)
      expect(arrivals.retriesOf("500"), summary).toBe(2)
      expect(error, summary).toBeDefined()
      expect(mentions(error, REASON), summary).toBe(true)
    }).pipe(
      Effect.provide(
        clientLayer({ name: "system-statuses-500", ...base, retryableStatuses: [408, 500, 502, 503, 504] })
      )
    )
  )
})

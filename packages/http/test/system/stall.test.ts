/**
 * System test: a call whose deadline passes while this process stalls (a GC pause, a
 * starved container, a long synchronous task) is not the backend's drop.
 *
 * The backend runs on a worker thread, so it keeps answering while the test's thread
 * is blocked: on a real socket on 127.0.0.1 it answers each request 20 ms after it
 * arrives. The moment the request arrives, the test's thread busy-waits 400 ms, past
 * the attempt's 100 ms bound, so the answer sits unread in the socket when the
 * attempt's timer fires, 300 ms late. Whatever the load, the call must not teach the
 * limiter or the throttle that the backend dropped it: it succeeds (the answer is read
 * first) or ends as a local refusal. A backend answering only after the stall (600 ms)
 * cannot be told from one the stall kept the request from reaching: a local refusal.
 */
import { describe, expect, it } from "@effect/vitest"
import { AdaptiveThrottle, ConcurrencyLimiter } from "@sluice/adaptive"
import { SluiceHttpClient } from "@sluice/http"
import { Effect, Exit } from "effect"
import { Worker } from "node:worker_threads"
import { chainOf, clientLayer, describeError, failureOf, report } from "./harness.js"

const STALL_MS = 400

// The backend: answers 200 twenty ms after each request arrives, and tells the test's
// thread that a request arrived.
const BACKEND = `
const { parentPort } = require("node:worker_threads")
const http = require("node:http")
const server = http.createServer((req, res) => {
  parentPort.postMessage("received")
  const delay = Number(new URL(req.url, "http://backend").searchParams.get("delay") ?? "20")
  setTimeout(() => res.end("ok"), delay)
})
server.keepAliveTimeout = 60000
server.listen(0, "127.0.0.1", () => parentPort.postMessage({ port: server.address().port }))
parentPort.on("message", () => server.close(() => process.exit(0)))
`

/** The backend thread for the life of the scope, its address, and a switch: stall the next time a request arrives. */
const backendThread = Effect.acquireRelease(
  Effect.callback<{ readonly worker: Worker; readonly port: number; readonly stallNext: () => void }>(
    (resume) => {
      const worker = new Worker(BACKEND, { eval: true })
      let stall = false
      worker.on("message", (message: unknown) => {
        if (typeof message === "object" && message !== null && "port" in message) {
          resume(
            Effect.succeed({
              worker,
              port: (message as { readonly port: number }).port,
              stallNext: () => {
                stall = true
              }
            })
          )
        } else if (message === "received" && stall) {
          stall = false
          // The stall itself: this thread runs nothing else meanwhile.
          const end = performance.now() + STALL_MS
          while (performance.now() < end) {
            // busy
          }
        }
      })
      worker.on("error", (error) => resume(Effect.die(error)))
    }
  ),
  ({ worker }) => Effect.promise(() => worker.terminate())
)

describe("system: this process's own stall", () => {
  it.live.each([
    { delay: 20, expected: "success" },
    { delay: 600, expected: "refused" }
  ])(
    "a deadline missed while the client stalled is not a drop (backend answers in $delay ms)",
    ({ delay, expected }) => {
      const name = `system-stall-${delay}`
      return Effect.gen(function* () {
        const { port, stallNext } = yield* backendThread
        const base = `http://127.0.0.1:${port}`
        const host = `127.0.0.1:${port}`
        const client = yield* SluiceHttpClient.SluiceHttpClient
        const throttle = yield* AdaptiveThrottle.AdaptiveThrottle
        const limiters = yield* ConcurrencyLimiter.ConcurrencyLimiter

        // A connection opened and the path warmed through the client first: every call succeeds.
        for (let i = 0; i < 5; i++)
          yield* Effect.scoped(Effect.flatMap(client.get(`${base}/warm`), (r) => r.text))
        const before = { limit: limiters.getUnsafe(host).limit, stats: throttle.statsUnsafe(host) }

        stallNext()
        const startedAt = performance.now()
        const exit = yield* Effect.exit(
          Effect.scoped(Effect.flatMap(client.get(`${base}/items?delay=${delay}`), (r) => r.text))
        )
        const elapsed = performance.now() - startedAt
        const after = { limit: limiters.getUnsafe(host).limit, stats: throttle.statsUnsafe(host) }
        const error = failureOf(exit)
        const figures = {
          expected,
          outcome: error === undefined ? "success" : describeError(error),
          elapsedMs: Math.round(elapsed),
          limit: [before.limit, after.limit],
          throttle: [before.stats, after.stats]
        }
        yield* report("stall", figures)

        const summary = JSON.stringify(figures)
        // the stall really happened, past the attempt's bound
        expect(elapsed, summary).toBeGreaterThanOrEqual(STALL_MS - 1)
        // a success (the answer was read first), or refused by this process: never the backend's drop
        if (Exit.isFailure(exit)) {
          expect(
            chainOf(error).some((e) => (e as { readonly origin?: unknown }).origin === "local"),
            summary
          ).toBe(true)
        }
        expect(after.limit, summary).toBeGreaterThanOrEqual(before.limit)
        expect(after.stats.requests - after.stats.accepts, summary).toBe(
          before.stats.requests - before.stats.accepts
        )
      }).pipe(Effect.scoped, Effect.provide(clientLayer({ name, attemptTimeout: "100 millis" })))
    }
  )
})

/**
 * The client-fleet load of `bench/overload.ts`, run in its own process (forked with an
 * IPC channel) so that it does not share an event loop with the server.
 *
 * For each phase the parent sends, operations arrive at a fixed rate (open loop) and are
 * spread round-robin over a fleet of clients, as over the instances of a calling service:
 *
 * - `sluice`: each client is a `SluiceHttpClient` with its defaults on — retry policy (3
 *   attempts, retry budget), adaptive throttle and concurrency limiter per host and
 *   criticality level (a congestion window, waiters newest first; `AimdLimit` with
 *   `limiter: "aimd"`; one state per host, oldest first, with `limiter: "per-host-fifo"`) —
 *   waiting at most `maxRetryAfterMs` for a `Retry-After`;
 * - `naive`: each client is `effect/http`'s `HttpClient` with `Effect.retry({ times: 2 })`:
 *   up to 3 attempts, at once, whatever the answer.
 *
 * An operation is a GET with a criticality (shares as in the parent's mix: CRITICAL,
 * SHEDDABLE_PLUS, SHEDDABLE) and succeeds when a 2xx arrives within `deadlineMs` of its
 * arrival (retries included). With `deadlines`, a Sluice operation runs under that deadline
 * (`Retry.currentDeadline`), so its client sends the time left on every attempt
 * (`x-sluice-deadline-ms`); a naive one cannot. Every attempt also carries the operation's
 * give-up time as an absolute wall-clock time in a bench-only header (`GIVE_UP_HEADER`), by
 * which the server counts its handler runs for callers that had already given up
 * (`wastedWork`). The server counts the attempts that reach it; this process answers with
 * the operations' outcomes.
 *
 * Not a benchmark of its own: `npm run bench:overload` starts it.
 */
import { NodeHttpClient } from "@effect/platform-node"
import { Criticality } from "@sluice/core"
import { SluiceHttpClient } from "@sluice/http"
import { Retry } from "@sluice/retry"
import * as AimdLimit from "@sluice/adaptive/limit/AimdLimit"
import { Duration, Effect, Fiber, ManagedRuntime } from "effect"
import { HttpClient, HttpClientError } from "effect/http"
import { performance } from "node:perf_hooks"

/** What the parent asks for. */
export interface FleetRequest {
  readonly type: "fleet"
  readonly id: number
  readonly url: string
  readonly mode: "sluice" | "naive"
  readonly clients: number
  readonly rps: number
  readonly durationMs: number
  readonly deadlineMs: number
  readonly maxRetryAfterMs: number
  /**
   * the Sluice clients' limiter: their default (a throttle and a congestion window per host
   * and criticality level, waiters newest first), `AimdLimit` instead of the window, or
   * the client before its defaults changed: one state per host, waiters oldest first
   */
  readonly limiter: "default" | "aimd" | "per-host-fifo"
  readonly criticalShare: number
  readonly sheddablePlusShare: number
  /** whether a Sluice operation runs under its deadline (`Retry.currentDeadline`), so its attempts carry it */
  readonly deadlines: boolean
}

/** What the fleet answers. */
export interface FleetResult {
  readonly type: "fleet-result"
  readonly id: number
  readonly sendMs: number
  readonly operations: number
  /** 2xx within the deadline */
  readonly ok: number
  readonly byLevel: Record<Level, { operations: number; ok: number }>
  /**
   * how the others ended: the error tag (`Throttled`, `DontRetry`, ...), an HTTP client error's
   * reason (`StatusCodeError`, `TransportError`, ...), or `Deadline`
   */
  readonly failures: Record<string, number>
  /** CPU time (ms) this process used during the phase */
  readonly cpuMs: number
}

type Level = "CRITICAL" | "SHEDDABLE_PLUS" | "SHEDDABLE"

/**
 * Bench-only: the wall-clock time (epoch ms) at which the attempt's operation gives up. The
 * server and this process share the machine's clock.
 */
export const GIVE_UP_HEADER = "x-bench-give-up-at"

const TICK_MS = 5

const runFleet = (request: FleetRequest) =>
  Effect.gen(function* () {
    const platform = yield* HttpClient.HttpClient
    const clients: Array<
      (level: Level, giveUpAt: number) => Effect.Effect<boolean, { readonly _tag: string }>
    > = []
    /** what ended an operation: an HTTP client error by its reason (Effect 4 has one error class for them) */
    const tagOf = (error: { readonly _tag: string }) =>
      HttpClientError.isHttpClientError(error) ? error.reason._tag : error._tag
    for (let i = 0; i < request.clients; i++) {
      if (request.mode === "sluice") {
        const client = yield* SluiceHttpClient.makeDefault({
          name: `fleet-${request.id}-${i}`,
          maxAttempts: 3,
          maxRetryAfter: Duration.millis(request.maxRetryAfterMs),
          ...(request.limiter === "aimd" ? { limiter: { algorithm: AimdLimit.factory() } } : {}),
          ...(request.limiter === "per-host-fifo"
            ? { limitPerCriticality: false, limiter: { order: "fifo" as const } }
            : {})
        })
        clients.push((level, giveUpAt) =>
          client.get(request.url, { headers: { [GIVE_UP_HEADER]: String(giveUpAt) } }).pipe(
            Effect.flatMap((r) => Effect.as(r.text, r.status >= 200 && r.status < 300)),
            Criticality.withCriticality(level),
            // The operation's deadline, as a caller sets it: the client sends the time left.
            Effect.provideService(Retry.currentDeadline, request.deadlines ? giveUpAt : Infinity)
          )
        )
      } else {
        const client = HttpClient.filterStatusOk(platform)
        clients.push((level, giveUpAt) =>
          client
            .get(request.url, {
              headers: { "x-sluice-criticality": level, [GIVE_UP_HEADER]: String(giveUpAt) }
            })
            .pipe(
              Effect.flatMap((r) => Effect.as(r.text, true)),
              Effect.retry({ times: 2 })
            )
        )
      }
    }
    const byLevel: FleetResult["byLevel"] = {
      CRITICAL: { operations: 0, ok: 0 },
      SHEDDABLE_PLUS: { operations: 0, ok: 0 },
      SHEDDABLE: { operations: 0, ok: 0 }
    }
    const failures: Record<string, number> = {}
    let operations = 0
    let ok = 0
    let criticalCredit = 0
    let plusCredit = 0
    const fail = (tag: string) => {
      failures[tag] = (failures[tag] ?? 0) + 1
    }
    const operation = (index: number) => {
      criticalCredit += request.criticalShare
      plusCredit += request.sheddablePlusShare
      let level: Level = "SHEDDABLE"
      if (criticalCredit >= 1 - 1e-9) {
        level = "CRITICAL"
        criticalCredit -= 1
      } else if (plusCredit >= 1 - 1e-9) {
        level = "SHEDDABLE_PLUS"
        plusCredit -= 1
      }
      operations++
      byLevel[level].operations++
      // Effect's live Clock reads Date.now: the same clock as Retry.currentDeadline's.
      const giveUpAt = Date.now() + request.deadlineMs
      return clients[index % clients.length]!(level, giveUpAt).pipe(
        Effect.timeoutOrElse({
          duration: Duration.millis(request.deadlineMs),
          orElse: () => Effect.fail({ _tag: "Deadline" })
        }),
        Effect.match({
          onSuccess: (success) => {
            if (success) {
              ok++
              byLevel[level].ok++
            } else fail("Status")
          },
          onFailure: (error) => fail(tagOf(error))
        })
      )
    }
    const cpu = process.cpuUsage()
    const began = performance.now()
    const running: Array<Fiber.Fiber<void>> = []
    let sent = 0
    const total = Math.ceil((request.rps * request.durationMs) / 1000)
    while (sent < total) {
      yield* Effect.sleep(Duration.millis(TICK_MS))
      const elapsed = performance.now() - began
      const due = Math.min(total, Math.floor((Math.min(elapsed, request.durationMs) * request.rps) / 1000))
      while (sent < due) running.push(yield* Effect.forkChild(operation(sent++)))
      if (elapsed >= request.durationMs) break
    }
    const sendMs = Math.min(performance.now() - began, request.durationMs)
    yield* Fiber.awaitAll(running)
    const used = process.cpuUsage(cpu)
    return {
      type: "fleet-result",
      id: request.id,
      sendMs,
      operations,
      ok,
      byLevel,
      failures,
      cpuMs: (used.user + used.system) / 1000
    } satisfies FleetResult
  })

if (process.send !== undefined) {
  process.setSourceMapsEnabled(false)
  const runtime = ManagedRuntime.make(NodeHttpClient.layerUndici)
  process.on("disconnect", () => process.exit(0))
  setTimeout(() => process.exit(2), 5 * 60_000).unref()
  process.on("message", (message: FleetRequest | { readonly type: "exit" }) => {
    if (message.type === "exit") process.exit(0)
    if (message.type === "fleet") {
      void runtime.runPromise(Effect.scoped(runFleet(message))).then(
        (result) => process.send!(result),
        (error) => {
          console.error("overload-fleet failed:", error)
          process.exit(1)
        }
      )
    }
  })
  process.send({ type: "ready" })
}

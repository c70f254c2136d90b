/**
 * The three scenarios of the three-tier example, each returning the counts it
 * measured (main.ts prints them, three-tier.test.ts asserts them).
 */
import { Criticality } from "@sluice/core"
import { SluiceHttpClient } from "@sluice/http"
import { Effect, Fiber, Schedule } from "effect"
import { HttpClient } from "effect/http"
import type { Level, Stack } from "./stack.js"

export interface OverloadCounts {
  readonly userRequests: number
  /** Backend hits caused by each user request. */
  readonly backendHitsPerRequest: ReadonlyArray<number>
  readonly maxBackendHitsPerRequest: number
  readonly middleHitsPerRequest: ReadonlyArray<number>
  /** What the user's client got: the tag of the failure (and its reason). */
  readonly outcomes: Record<string, number>
  /** The attempt numbers the backend saw on the wire. */
  readonly backendAttempts: Record<string, number>
  /** What retrying at every layer would cost: maxAttempts ^ layers. */
  readonly naiveHitsPerRequest: number
}

/**
 * The backend is down (every request → 503). A user client that itself retries
 * (3 attempts) calls the frontend `requests` times, one after the other.
 */
export const overload = (
  stack: Stack,
  requests = 5,
  options: { readonly naive?: boolean } = {}
): Effect.Effect<OverloadCounts, never, HttpClient.HttpClient> =>
  Effect.gen(function* () {
    const sluice = yield* SluiceHttpClient.makeDefault({
      name: "user",
      maxAttempts: 3,
      maxRetryAfter: "50 millis",
      schedule: Schedule.spaced("1 millis")
    }).pipe(Effect.orDie)
    const platform = yield* HttpClient.HttpClient
    // the naive user retries every failure too, 3 attempts in all
    const naive = {
      get: (url: string) =>
        HttpClient.filterStatusOk(platform)
          .get(url)
          .pipe(
            Effect.retry({ times: 2 }),
            Effect.mapError(() => ({ _tag: "Failed" as const, reason: "" }))
          )
    }
    const user: {
      readonly get: (url: string) => Effect.Effect<
        { readonly status: number },
        // a Sluice error's reason is a word; an HTTP client error's (Effect 4) an error of its own
        { readonly _tag: string; readonly reason?: unknown }
      >
    } = options.naive === true ? naive : sluice
    stack.reset()
    stack.setDown(true)
    const backendHitsPerRequest: Array<number> = []
    const middleHitsPerRequest: Array<number> = []
    const outcomes: Record<string, number> = {}
    for (let i = 0; i < requests; i++) {
      const backendBefore = stack.stats.hits
      const middleBefore = stack.middleHits.value
      const outcome = yield* user.get(`${stack.frontend}/page`).pipe(
        Effect.match({
          onSuccess: (r) => `status ${r.status}`,
          onFailure: (e) => (e._tag === "DontRetry" ? `DontRetry(${e.reason})` : e._tag)
        })
      )
      outcomes[outcome] = (outcomes[outcome] ?? 0) + 1
      backendHitsPerRequest.push(stack.stats.hits - backendBefore)
      middleHitsPerRequest.push(stack.middleHits.value - middleBefore)
    }
    stack.setDown(false)
    const backendAttempts: Record<string, number> = {}
    for (const a of stack.stats.attempts) backendAttempts[a] = (backendAttempts[a] ?? 0) + 1
    return {
      userRequests: requests,
      backendHitsPerRequest,
      maxBackendHitsPerRequest: Math.max(...backendHitsPerRequest),
      middleHitsPerRequest,
      outcomes,
      backendAttempts,
      naiveHitsPerRequest: 3 ** 3
    }
  })

export interface CriticalityCounts {
  /** Route (and claimed header) → the level the backend saw. */
  readonly seenByBackend: Record<string, Level | undefined>
}

/** One request per route; the backend reports the level it saw. */
export const propagation: (stack: Stack) => Effect.Effect<CriticalityCounts, never, HttpClient.HttpClient> = (
  stack
) =>
  Effect.gen(function* () {
    const client = yield* HttpClient.HttpClient
    const seen = (path: string, claimed?: Level) =>
      client
        .get(
          `${stack.frontend}${path}`,
          claimed === undefined ? {} : { headers: { "x-sluice-criticality": claimed } }
        )
        .pipe(
          Effect.flatMap((r) => r.json),
          Effect.map((body) => (body as { criticality?: Level }).criticality),
          Effect.orElseSucceed(() => undefined)
        )
    return {
      seenByBackend: {
        "/page": yield* seen("/page"),
        "/prefetch": yield* seen("/prefetch"),
        "/claimed (CRITICAL_PLUS)": yield* seen("/claimed", "CRITICAL_PLUS"),
        "/claimed (SHEDDABLE_PLUS)": yield* seen("/claimed", "SHEDDABLE_PLUS")
      }
    }
  })

export interface SheddingCounts {
  readonly capacity: number
  /** Background SHEDDABLE requests the backend held before it started shedding SHEDDABLE work. */
  readonly backgroundHeld: number
  /** Backend utilization when the user traffic arrived. */
  readonly utilization: number
  /** Per route: how the user requests ended. */
  readonly ok: Record<string, number>
  readonly failed: Record<string, number>
  /** Why requests failed: status and the error the frontend answered with. */
  readonly failures: Record<string, number>
  /** The user traffic as the backend saw it (background work not included). */
  readonly backendArrived: Record<Level, number>
  readonly backendServed: Record<Level, number>
  readonly backendShed: Record<Level, number>
  /** Shed answers the backend marked don't-retry because retries dominated its traffic. */
  readonly backendDontRetry: number
}

const describeFailure = (status: number, body: string): string => {
  let why = `${status}`
  try {
    const error = JSON.parse(body).error
    why += ` ${error._tag}${error.reason ? `(${error.reason}${error.cause?._tag ? `: ${error.cause._tag}` : ""})` : ""}`
  } catch {
    // not a Sluice error body
  }
  return why
}

/**
 * Overload, step by step so the outcome does not depend on machine speed: other
 * SHEDDABLE work (sent straight to the backend, and held there) fills the backend
 * until its LoadShedder starts shedding SHEDDABLE work. Then user traffic arrives
 * through the frontend, SHEDDABLE `/prefetch` and CRITICAL `/page` side by side:
 * the backend sheds the SHEDDABLE requests (the middle tier retries them, then
 * answers don't-retry) and serves the CRITICAL ones. Finally the held work is
 * released.
 */
export const shedding = (
  stack: Stack,
  options: { readonly requests?: number } = {}
): Effect.Effect<SheddingCounts, never, HttpClient.HttpClient> =>
  Effect.gen(function* () {
    const client = yield* HttpClient.HttpClient
    const requests = options.requests ?? 5
    stack.reset()
    yield* stack.hold
    const ok: Record<string, number> = { "/page": 0, "/prefetch": 0 }
    const failed: Record<string, number> = { "/page": 0, "/prefetch": 0 }
    const failures: Record<string, number> = {}
    const one = (path: string) =>
      client.get(`${stack.frontend}${path}`).pipe(
        Effect.flatMap((r) => Effect.map(r.text, (body) => [r.status, body] as const)),
        Effect.match({
          onSuccess: ([status, body]) => {
            if (status === 200) return ok[path]!++
            failed[path]!++
            const key = `${path} ${describeFailure(status, body)}`
            failures[key] = (failures[key] ?? 0) + 1
          },
          onFailure: (e) => {
            failed[path]!++
            // one error class for every client failure on Effect 4: its reason says which
            const key = `${path} ${e.reason._tag}`
            failures[key] = (failures[key] ?? 0) + 1
          }
        })
      )
    // Polls (at most about ten seconds) instead of sleeping a guessed time.
    const waitUntil = (condition: () => boolean) =>
      condition() ? Effect.void : Effect.repeat(Effect.sleep("5 millis"), { until: condition, times: 2000 })
    // Background SHEDDABLE work, held by the backend, until it sheds SHEDDABLE.
    const background: Array<Fiber.Fiber<unknown, unknown>> = []
    while (!stack.shedder.wouldShedUnsafe("SHEDDABLE") && background.length < stack.shedder.capacity) {
      const arrived = stack.stats.arrived.SHEDDABLE
      background.push(
        yield* Effect.forkChild(
          client.get(`${stack.backend}/work`, {
            // background work of our own tiers: trusted, so its attempt numbers count
            headers: { ...stack.trustHeaders, "x-sluice-criticality": "SHEDDABLE", "x-demo-hold": "1" }
          })
        )
      )
      yield* waitUntil(() => stack.stats.arrived.SHEDDABLE > arrived)
      // let the smoothed utilization catch up with the new request
      yield* Effect.sleep("60 millis")
    }
    const utilization = Math.round(stack.shedder.utilizationUnsafe() * 100) / 100
    const heldBackground = background.length
    stack.reset()
    // User traffic: one SHEDDABLE and one CRITICAL request after the other, side by side.
    const sequence = (path: string) =>
      Effect.forEach(Array.from({ length: requests }), () => one(path), { discard: true })
    yield* Effect.all([sequence("/prefetch"), sequence("/page")], { concurrency: 2, discard: true })
    const counts = {
      backendArrived: { ...stack.stats.arrived },
      backendServed: { ...stack.stats.served },
      backendShed: { ...stack.stats.shed },
      backendDontRetry: stack.stats.dontRetry
    }
    yield* stack.release
    yield* Effect.ignore(Fiber.joinAll(background))
    return {
      capacity: stack.shedder.capacity,
      backgroundHeld: heldBackground,
      utilization,
      ok,
      failed,
      failures,
      ...counts
    }
  }).pipe(Criticality.withCriticality("CRITICAL"))

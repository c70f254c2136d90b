/**
 * A fleet of clients, composed as `SluiceHttpClient` composes its policies, against a
 * model of a server that sheds by priority (a bounded queue served most critical first,
 * whose least critical waiter gives way to more critical work).
 */
import { AdaptiveThrottle, ConcurrencyLimiter } from "@sluice/adaptive"
import { type Admission, Criticality, Errors, Options } from "@sluice/core"
import { Retry, RetryBudget } from "@sluice/retry"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as Random from "effect/Random"
import * as Schema from "effect/Schema"
import type * as PF from "../PriorityFleet.js"
import * as simulation from "./simulation.js"

type Level = PF.Level

const LEVELS: ReadonlyArray<Level> = ["CRITICAL", "SHEDDABLE_PLUS", "SHEDDABLE"]
/** Higher is more critical. */
const RANK: Record<Level, number> = { CRITICAL: 2, SHEDDABLE_PLUS: 1, SHEDDABLE: 0 }

const Share = Schema.Number.check(Schema.isBetween({ minimum: 0, maximum: 1 }))

/** @internal */
export const OptionsSchema = Schema.Struct({
  clients: Options.PositiveInt.pipe(Schema.withDecodingDefaultType(Effect.succeed(4))),
  slots: Options.PositiveInt.pipe(Schema.withDecodingDefaultType(Effect.succeed(32))),
  serviceMillis: Options.PositiveInt.pipe(Schema.withDecodingDefaultType(Effect.succeed(320))),
  networkMillis: Schema.Number.check(Schema.isGreaterThanOrEqualTo(0)).pipe(
    Schema.withDecodingDefaultType(Effect.succeed(1))
  ),
  overload: Schema.Number.check(Schema.isGreaterThan(0)).pipe(
    Schema.withDecodingDefaultType(Effect.succeed(10))
  ),
  criticalShare: Share.pipe(Schema.withDecodingDefaultType(Effect.succeed(0.05))),
  sheddablePlusShare: Share.pipe(Schema.withDecodingDefaultType(Effect.succeed(0.15))),
  durationMillis: Options.PositiveInt.pipe(Schema.withDecodingDefaultType(Effect.succeed(8000))),
  deadlineMillis: Options.PositiveInt.pipe(Schema.withDecodingDefaultType(Effect.succeed(2000))),
  maxAttempts: Options.PositiveInt.pipe(Schema.withDecodingDefaultType(Effect.succeed(3))),
  maxRetryAfterMillis: Schema.Number.check(Schema.isGreaterThanOrEqualTo(0)).pipe(
    Schema.withDecodingDefaultType(Effect.succeed(200))
  ),
  client: Schema.Literals(["sluice", "naive"]).pipe(Schema.withDecodingDefaultType(Effect.succeed("sluice"))),
  perLevel: Schema.Boolean.pipe(Schema.withDecodingDefaultType(Effect.succeed(true))),
  order: Schema.Literals(["lifo", "fifo"]).pipe(Schema.withDecodingDefaultType(Effect.succeed("lifo"))),
  seed: Schema.optional(Schema.Union([Schema.Number, Schema.String]))
})

type Resolved = typeof OptionsSchema.Type

interface Waiter {
  readonly rank: number
  readonly admitted: Deferred.Deferred<boolean>
  state: "waiting" | "admitted" | "refused"
}

/**
 * The server: `slots` units of work; a request that finds them all busy waits in a queue
 * of `slots / 2` (most critical first) for at most one mean service time; a full queue
 * makes its least critical waiter give way to a more critical arrival, or refuses it.
 */
const makeServer = (config: Resolved) => {
  let busy = 0
  const queue: Array<Waiter> = []
  const maxQueue = Math.max(1, Math.floor(config.slots / 2))
  const overloaded = (reason: string) => new Errors.Overloaded({ reason, origin: "remote" })
  const stats = { arrivals: 0, wasted: 0 }
  const release = () => {
    const next = queue.shift()
    if (next === undefined) {
      busy--
      return Effect.void
    }
    next.state = "admitted"
    return Deferred.succeed(next.admitted, true)
  }
  const enter = (level: Level): Effect.Effect<void, Errors.Overloaded> =>
    Effect.suspend(() => {
      if (busy < config.slots) {
        busy++
        return Effect.void
      }
      const rank = RANK[level]
      if (queue.length >= maxQueue) {
        const last = queue[queue.length - 1]!
        if (last.rank >= rank) return Effect.fail(overloaded("queue full"))
        queue.pop()
        last.state = "refused"
        return Effect.andThen(Deferred.succeed(last.admitted, false), wait(rank))
      }
      return wait(rank)
    })
  const wait = (rank: number): Effect.Effect<void, Errors.Overloaded> =>
    Effect.gen(function* () {
      const waiter: Waiter = { rank, admitted: yield* Deferred.make<boolean>(), state: "waiting" }
      let at = queue.length
      while (at > 0 && queue[at - 1]!.rank < rank) at--
      queue.splice(at, 0, waiter)
      const answer = yield* Deferred.await(waiter.admitted).pipe(
        Effect.timeoutOption(Duration.millis(config.serviceMillis)),
        Effect.onInterrupt(() =>
          Effect.suspend(() => {
            if (waiter.state === "admitted") return release()
            const i = queue.indexOf(waiter)
            if (i >= 0) queue.splice(i, 1)
            return Effect.void
          })
        )
      )
      if (waiter.state === "admitted") return
      if (Option.isNone(answer)) {
        const i = queue.indexOf(waiter)
        if (i >= 0) queue.splice(i, 1)
        return yield* overloaded("queue timeout")
      }
      return yield* overloaded("displaced")
    })
  const call = (level: Level): Effect.Effect<void, Errors.Overloaded> =>
    Effect.gen(function* () {
      if (config.networkMillis > 0) yield* Effect.sleep(Duration.millis(config.networkMillis))
      stats.arrivals++
      yield* Effect.uninterruptibleMask((restore) =>
        Effect.andThen(
          restore(enter(level)),
          Effect.flatMap(Random.nextBetween(0.5 * config.serviceMillis, 1.5 * config.serviceMillis), (ms) =>
            restore(Effect.sleep(Duration.millis(ms)))
          ).pipe(
            Effect.onInterrupt(() => Effect.sync(() => stats.wasted++)),
            Effect.ensuring(Effect.suspend(release))
          )
        )
      )
      if (config.networkMillis > 0) yield* Effect.sleep(Duration.millis(config.networkMillis))
    })
  return { call, stats }
}

interface Client {
  readonly run: <E>(level: Level, attempt: Effect.Effect<void, E>) => Effect.Effect<void, unknown>
}

/**
 * One client. `sluice`: the retry policy around the throttle's and the limiter's gates,
 * as `SluiceHttpClient.makeDefault` builds them (per host, or per host and level).
 * `naive`: up to `maxAttempts` attempts at once, whatever the answer.
 */
const makeClient = (config: Resolved, index: number): Effect.Effect<Client, Options.InvalidOptions> =>
  Effect.gen(function* () {
    if (config.client === "naive") {
      const retries = config.maxAttempts - 1
      return { run: (_level, attempt) => Effect.retry(attempt, { times: retries }) }
    }
    const throttle = yield* AdaptiveThrottle.make({})
    const limiters = yield* ConcurrencyLimiter.makeService({ order: config.order })
    const name = `fleet-${index}`
    const budget = (yield* RetryBudget.make({})).forKey(name)
    const retrying = Retry.makeUnsafe({
      maxAttempts: config.maxAttempts,
      maxRetryAfter: Duration.millis(config.maxRetryAfterMillis),
      name,
      budget
    })
    const guards = new Map<string, ReturnType<typeof retrying.around>>()
    const guardOf = (level: Level) => {
      const key = config.perLevel ? `backend/${level}` : "backend"
      let guard = guards.get(key)
      if (guard === undefined) {
        const gates: Array<Admission.Gate<any, Errors.Throttled | Errors.Overloaded>> = [
          throttle.gate(key),
          limiters.gate(key)
        ]
        guard = retrying.around(gates)
        guards.set(key, guard)
      }
      return guard
    }
    return {
      run: (level, attempt) => Criticality.withCriticality(guardOf(level)(attempt), level)
    }
  })

/** @internal */
export const run = (options: PF.Options = {}): Effect.Effect<PF.Report, Options.InvalidOptions> =>
  Effect.gen(function* () {
    const config = yield* Options.decode("PriorityFleet", OptionsSchema)(options)
    const program = Effect.gen(function* () {
      const server = makeServer(config)
      const clients = []
      for (let i = 0; i < config.clients; i++) clients.push(yield* makeClient(config, i))
      const rps = (config.slots * 1000 * config.overload) / config.serviceMillis
      const total = Math.round((rps * config.durationMillis) / 1000)
      const byLevel = Object.fromEntries(LEVELS.map((l) => [l, { operations: 0, ok: 0 }])) as Record<
        Level,
        { operations: number; ok: number }
      >
      const failures: Record<string, number> = {}
      let criticalCredit = 0
      let plusCredit = 0
      const fibers: Array<Fiber.Fiber<void>> = []
      for (let n = 0; n < total; n++) {
        // Arrivals at a fixed rate, levels in the shares' proportions (as the benchmark's fleet).
        const due = (n * 1000) / rps
        const now = yield* Effect.clockWith((clock) => clock.currentTimeMillis)
        if (due > now) yield* Effect.sleep(Duration.millis(due - now))
        criticalCredit += config.criticalShare
        plusCredit += config.sheddablePlusShare
        let level: Level = "SHEDDABLE"
        if (criticalCredit >= 1 - 1e-9) {
          level = "CRITICAL"
          criticalCredit -= 1
        } else if (plusCredit >= 1 - 1e-9) {
          level = "SHEDDABLE_PLUS"
          plusCredit -= 1
        }
        byLevel[level].operations++
        const client = clients[n % clients.length]!
        fibers.push(
          yield* client.run(level, server.call(level)).pipe(
            Effect.timeoutOrElse({
              duration: Duration.millis(config.deadlineMillis),
              orElse: () => Effect.fail({ _tag: "Deadline" as const })
            }),
            Effect.match({
              onSuccess: () => {
                byLevel[level].ok++
              },
              onFailure: (error) => {
                const tag = (error as { readonly _tag?: string })._tag ?? "Unknown"
                failures[tag] = (failures[tag] ?? 0) + 1
              }
            }),
            Effect.forkChild
          )
        )
      }
      yield* Fiber.awaitAll(fibers)
      const ok = LEVELS.reduce((sum, l) => sum + byLevel[l].ok, 0)
      const capacity = (config.slots * 1000) / config.serviceMillis
      return {
        operations: total,
        ok,
        goodputRatio: ok / ((capacity * config.durationMillis) / 1000),
        attemptsAtServer: server.stats.arrivals,
        attemptsPerOperation: server.stats.arrivals / Math.max(1, total),
        wasted: server.stats.wasted,
        criticalSuccess: byLevel.CRITICAL.ok / Math.max(1, byLevel.CRITICAL.operations),
        byLevel,
        failures
      } satisfies PF.Report
    })
    const result = yield* simulation.run(program, config.seed === undefined ? {} : { seed: config.seed })
    if (result.exit._tag === "Failure") return yield* Effect.die(result.exit.cause)
    return result.exit.value
  })

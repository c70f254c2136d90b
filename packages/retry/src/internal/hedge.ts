import { Admission, Errors, Options } from "@sluice/core"
import * as Meters from "@sluice/core/shared/Meters"
import * as Kernel from "@sluice/kernel/retry/Hedge"
import * as Clock from "effect/Clock"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import { identity } from "effect/Function"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import type * as H from "../Hedge.js"
import type * as RetryApi from "../Retry.js"
import * as retry from "./retry.js"

const HedgeOptionsSchema = Schema.Struct({
  ...Options.fields(Kernel.options),
  name: Schema.optional(Schema.String)
})

const decodeOptions = Options.decodeResult("Hedge.make", HedgeOptionsSchema)

/** @internal */
export const sent = Meters.counter("sluice_hedge_sent", "hedged attempts sent")
/** @internal */
export const won = Meters.counter("sluice_hedge_won", "calls a hedged attempt won")
/** @internal */
export const cancelled = Meters.counter(
  "sluice_hedge_cancelled",
  "attempts of hedged calls cancelled because another attempt won"
)
/** @internal */
export const refused = Meters.counter("sluice_hedge_refused", "hedges not sent, by reason")

interface Compiled extends Kernel.HedgeOptions {
  readonly name: string | undefined
  readonly meters: {
    readonly sent: ReturnType<typeof sent.of>
    readonly won: ReturnType<typeof won.of>
    readonly cancelled: ReturnType<typeof cancelled.of>
    readonly refused: Readonly<Record<Kernel.Refusal, ReturnType<typeof refused.of>>>
  }
}

const compile = (options: H.HedgeOptions): Result.Result<Compiled, Options.InvalidOptions> => {
  const { policy: _policy, ...rest } = options
  return Result.map(decodeOptions(rest), (decoded) => {
    const policy = decoded.name === undefined ? undefined : { policy: decoded.name }
    return {
      maxHedges: decoded.maxHedges,
      delayMillis: decoded.delay === undefined ? undefined : Duration.toMillis(decoded.delay),
      quantile: decoded.quantile,
      minSamples: decoded.minSamples,
      windowMillis: Duration.toMillis(decoded.window),
      name: decoded.name,
      meters: {
        sent: sent.of(policy),
        won: won.of(policy),
        cancelled: cancelled.of(policy),
        refused: {
          failed: refused.of({ ...policy, reason: "failed" }),
          paused: refused.of({ ...policy, reason: "paused" }),
          budget: refused.of({ ...policy, reason: "budget" }),
          max: refused.of({ ...policy, reason: "max" }),
          gate: refused.of({ ...policy, reason: "gate" })
        }
      }
    }
  })
}

const nowOf = (fiber: Fiber.Fiber<unknown, unknown>): number =>
  fiber.getRef(Clock.Clock).currentTimeMillisUnsafe()

/**
 * Runs `primary` (the retry policy's path: first try and retries) and, while it runs, hedges
 * of `once` (one try through the same gates) after each `delay`. The first success wins; the
 * primary's failure ends the call; the losers are interrupted (and awaited, so that their
 * permits are back when the call returns).
 */
const race = <A, E, R>(
  self: Effect.Effect<A, E, R>,
  primary: (self: Effect.Effect<A, E, R>) => Effect.Effect<A, unknown, R>,
  once: (self: Effect.Effect<A, E, R>) => Effect.Effect<A, unknown, R>,
  config: Compiled,
  delay: Kernel.Delay,
  delayMillis: number,
  budget:
    | {
        readonly tryWithdrawUnsafe: (now: number) => boolean
        readonly refundUnsafe: (withdrawnAt: number, now: number) => void
      }
    | undefined,
  paused: (now: number) => boolean
): Effect.Effect<A, unknown, R> =>
  Effect.withFiber((parent) => {
    const context = parent.context
    const meters = config.meters
    const started = nowOf(parent)
    let failed = false
    // Any failure of any attempt, the primary's tries included, stops further hedges.
    const noting = Effect.tapError(self, () =>
      Effect.sync(() => {
        failed = true
      })
    )
    return Effect.gen(function* () {
      const winner = yield* Deferred.make<readonly [A, number], unknown>()
      const fibers: Array<Fiber.Fiber<unknown, unknown>> = []
      const primaryFiber = yield* Effect.forkChild(
        Effect.onExit(primary(noting), (exit) =>
          Effect.sync(() => {
            Deferred.doneUnsafe(
              winner,
              Exit.isSuccess(exit)
                ? Exit.succeed([exit.value, 0] as const)
                : (exit as Exit.Exit<never, unknown>)
            )
          })
        )
      )
      fibers.push(primaryFiber)
      const launcher = Effect.gen(function* () {
        for (let k = 1; ; k++) {
          yield* Effect.sleep(Duration.millis(delayMillis))
          const now = yield* Clock.currentTimeMillis
          const answer = Kernel.verdict({ sent: k - 1, failed, paused: paused(now) }, config, () =>
            budget === undefined ? true : budget.tryWithdrawUnsafe(now)
          )
          if (answer !== "hedge") {
            meters.refused[answer].updateUnsafe(1, context)
            return
          }
          const attempt = k
          const withdrawnAt = now
          // Admitted by every gate (none of them waits for a hedge): the hedge leaves now.
          let left = false
          const leaving = Effect.andThen(
            Effect.sync(() => {
              left = true
              meters.sent.updateUnsafe(1, context)
            }),
            noting
          )
          const hedge = once(leaving).pipe(
            Effect.provideService(retry.currentAttempt, attempt),
            Effect.withSpan(
              "sluice.hedge.attempt",
              {
                attributes: {
                  "sluice.hedge.attempt": attempt,
                  "sluice.hedge.delay_ms": delayMillis * attempt,
                  ...(config.name !== undefined ? { "sluice.hedge.policy": config.name } : {})
                }
              },
              { captureStackTrace: false }
            ),
            Effect.onExit((exit) =>
              Effect.sync(() => {
                // A failed hedge is dropped: the primary's path has the last word on failures.
                if (Exit.isSuccess(exit))
                  Deferred.doneUnsafe(winner, Exit.succeed([exit.value, attempt] as const))
                else if (!left) {
                  // Never sent: a gate refused it (or the call ended first). It added no load,
                  // so its withdrawal goes back to the budget, as a retry's would.
                  budget?.refundUnsafe(withdrawnAt, nowOf(parent))
                  if (!Exit.hasInterrupts(exit)) meters.refused.gate.updateUnsafe(1, context)
                }
              })
            ),
            Effect.ignore
          )
          fibers.push(yield* Effect.forkChild(hedge))
        }
      })
      const launcherFiber = yield* Effect.forkChild(launcher)
      const exit = yield* Effect.exit(Deferred.await(winner))
      // The winner completed the Deferred from its own exit handler: it may not be done yet.
      const winning = Exit.isSuccess(exit) ? exit.value[1] : 0
      const losers = fibers.filter(
        (fiber, attempt) => attempt !== winning && fiber.pollUnsafe() === undefined
      )
      yield* Fiber.interrupt(launcherFiber)
      // Losers: interrupted as a caller interrupts work (their tickets settle "ignored": they
      // teach no limit and no throttle), and awaited so that no permit outlives the call.
      if (losers.length > 0) {
        meters.cancelled.updateUnsafe(losers.length, context)
        yield* Effect.forEach(losers, (fiber) => Fiber.interrupt(fiber), { discard: true })
      }
      if (Exit.isFailure(exit)) return yield* Effect.failCause(exit.cause)
      const [value, attempt] = exit.value
      if (attempt > 0) meters.won.updateUnsafe(1, context)
      const now = nowOf(parent)
      delay.record(now, now - started)
      return value
    })
  })

/** Runs the primary alone (no delay is known yet), timing it so that the delay can be learned. */
const timed = <A, E, R>(effect: Effect.Effect<A, E, R>, delay: Kernel.Delay): Effect.Effect<A, E, R> =>
  Effect.withFiber((fiber) => {
    const started = nowOf(fiber)
    return Effect.tap(effect, () =>
      Effect.sync(() => {
        const now = nowOf(fiber)
        delay.record(now, now - started)
      })
    )
  })

const hedged = <A, E, R>(
  primary: (self: Effect.Effect<A, E, R>) => Effect.Effect<A, unknown, R>,
  once: (self: Effect.Effect<A, E, R>) => Effect.Effect<A, unknown, R>,
  config: Compiled,
  budget: RetryApi.Policy["budget"],
  paused: (now: number) => boolean
): ((self: Effect.Effect<A, E, R>) => Effect.Effect<A, unknown, R>) => {
  const delay = new Kernel.Delay(config)
  return (self) =>
    Effect.withFiber((fiber) => {
      const millis = delay.millis(nowOf(fiber))
      return millis === undefined
        ? timed(primary(self), delay)
        : race(self, primary, once, config, delay, millis, budget, paused)
    })
}

const never = () => false

const noPermit = new Errors.Overloaded({ reason: "no permit free for a hedge", origin: "local" })

/**
 * `gate` for a hedge: one that would make it wait refuses it instead. A hedge that waits for a
 * permit is late by the time it leaves, and under a newest-first (LIFO) limiter it would take
 * the next permit ahead of other calls' first tries: those then run late, pass their own hedge
 * delay, and hedge in turn, until the budget is spent on copies of calls that were not slow.
 */
const noWait = (gate: Admission.Gate<any, any>): Admission.Gate<any, any> => ({
  tryEnter: (entry) => {
    const ticket = gate.tryEnter(entry)
    return ticket === Admission.Wait ? Admission.refuse(noPermit) : ticket
  },
  enter: (entry) => gate.enter(entry),
  settle: (ticket, outcome, cause) => gate.settle(ticket, outcome, cause),
  isDrop: gate.isDrop
})

const policyOf = (options: H.HedgeOptions): Result.Result<H.Policy, Options.InvalidOptions> =>
  Result.map(compile(options), (config) => {
    const retrying = options.policy
    const budget = retrying.budget
    // `apply` learns one delay for every call of the policy.
    const applied = hedged(retrying.apply, identity, config, budget, never)
    return {
      maxHedges: config.maxHedges,
      policy: retrying,
      apply: (self) => applied(self) as any,
      // A hedge is tried once, through the same gates as every try of the primary, never waiting.
      around: (gates, paused) =>
        hedged(
          retrying.around(gates),
          Admission.guard(gates.map(noWait)),
          config,
          budget,
          paused ?? never
        ) as any
    }
  })

/** @internal */
export const make = (options: H.HedgeOptions): Effect.Effect<H.Policy, Options.InvalidOptions> =>
  Effect.suspend(() => Effect.fromResult(policyOf(options)))

/** @internal */
export const makeUnsafe = (options: H.HedgeOptions): H.Policy =>
  Result.getOrThrowWith(policyOf(options), identity)

import { type Admission, Options } from "@sluice/core"
import * as BoundedMap from "@sluice/core/shared/BoundedMap"
import * as Meters from "@sluice/core/shared/Meters"
import * as Kernel from "@sluice/kernel/retry/RetryBudget"
import * as Clock from "effect/Clock"
import type * as Config from "effect/Config"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Metric from "effect/Metric"
import * as Schema from "effect/Schema"
import type * as RB from "../RetryBudget.js"

/** @internal */
export const RetryBudgetOptions = Schema.Struct(Options.fields(Kernel.options))

/** @internal */
export const denials = Meters.counter("sluice_retry_budget_denials", "retries refused by a retry budget")

/** @internal */
export const withdrawals = Meters.counter(
  "sluice_retry_budget_withdrawals",
  "retries granted by a retry budget"
)

/** @internal */
export const refunds = Meters.counter(
  "sluice_retry_budget_refunds",
  "granted retries given back: they never reached the backend"
)

/** @internal runs `f` at the current time of the running fiber's clock */
export const atNow = <A>(f: (now: number) => A): Effect.Effect<A> =>
  Effect.clockWith((clock) => Effect.sync(() => f(clock.currentTimeMillisUnsafe())))

/** @internal a gate that admits every entry and only records it */
export const recordingGate = (record: (entry: Admission.Entry) => void): Admission.Gate<true, never> => ({
  tryEnter: (entry) => {
    record(entry)
    return true
  },
  enter: () => Effect.succeed(true),
  settle: () => {}
})

class BudgetImpl implements RB.Budget {
  private readonly budget: Kernel.Budget
  constructor(
    readonly key: string,
    options: RB.ResolvedOptions
  ) {
    this.budget = new Kernel.Budget({ ...options, windowMillis: Duration.toMillis(options.window) })
  }
  readonly gate = recordingGate((entry) => this.recordRequestUnsafe(entry.now))
  readonly recordRequestUnsafe = (nowMillis: number): void => this.budget.recordRequest(nowMillis)
  readonly tryWithdrawUnsafe = (nowMillis: number): boolean => this.budget.tryWithdraw(nowMillis)
  readonly refundUnsafe = (withdrawnAtMillis: number, nowMillis: number): void =>
    this.budget.refund(withdrawnAtMillis, nowMillis)
  readonly statsUnsafe = (nowMillis: number): RB.BudgetStats => this.budget.stats(nowMillis)
  get recordRequest(): Effect.Effect<void> {
    return atNow(this.recordRequestUnsafe)
  }
  get tryWithdraw(): Effect.Effect<boolean> {
    return Effect.flatMap(Clock.currentTimeMillis, (now) => {
      const granted = this.tryWithdrawUnsafe(now)
      return Effect.as(Metric.update(granted ? withdrawals.metric : denials.metric, 1), granted)
    })
  }
  get stats(): Effect.Effect<RB.BudgetStats> {
    return atNow(this.statsUnsafe)
  }
}

class ServiceImpl implements RB.Service {
  private readonly budgets: BoundedMap.BoundedMap<string, BudgetImpl>
  constructor(readonly options: RB.ResolvedOptions) {
    this.budgets = BoundedMap.make({ capacity: options.maxKeys })
  }
  private readonly create = (key: string): BudgetImpl => new BudgetImpl(key, this.options)
  readonly forKey = (key: string): RB.Budget => this.budgets.getOrCreate(key, this.create)
  get size(): number {
    return this.budgets.size
  }
}

/** @internal the public `RetryBudget.RetryBudget` class has the same key, so they are one service */
export const RetryBudget = Context.Service<RB.RetryBudget, RB.Service>("@sluice/retry/RetryBudget")

const decode = Options.decode("RetryBudget", RetryBudgetOptions)
const decodeSync = Options.decodeSync("RetryBudget", RetryBudgetOptions)

/** @internal */
export const make = (
  options: RB.RetryBudgetOptions = {}
): Effect.Effect<RB.Service, Options.InvalidOptions> =>
  Effect.map(decode(options), (resolved) => new ServiceImpl(resolved))

/** @internal */
export const makeUnsafe = (options: RB.RetryBudgetOptions = {}): RB.Service =>
  new ServiceImpl(decodeSync(options))

/** @internal */
export const layer = (
  options: RB.RetryBudgetOptions = {}
): Layer.Layer<RB.RetryBudget, Options.InvalidOptions> => Layer.effect(RetryBudget, make(options))

/** @internal */
export const forKey = (key: string): Effect.Effect<RB.Budget, never, RB.RetryBudget> =>
  Effect.map(RetryBudget, (service) => service.forKey(key))

/** @internal */
export const layerConfig = (
  config: Config.Config<RB.RetryBudgetOptions>
): Layer.Layer<RB.RetryBudget, Options.InvalidOptions | Config.ConfigError> =>
  Layer.effect(RetryBudget, Effect.flatMap(config, make))

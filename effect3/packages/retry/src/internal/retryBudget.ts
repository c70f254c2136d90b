import { type Admission, BoundedMap, Options } from "@sluice/core"
import * as Kernel from "@sluice/kernel/retry/RetryBudget"
import * as Clock from "effect/Clock"
import type * as Config from "effect/Config"
import type * as ConfigError from "effect/ConfigError"
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
export const denials = Metric.counter("sluice_retry_budget_denials", {
  description: "retries refused by a retry budget",
  incremental: true
})

/** @internal */
export const withdrawals = Metric.counter("sluice_retry_budget_withdrawals", {
  description: "retries granted by a retry budget",
  incremental: true
})

/** @internal runs `f` at the current time of the running fiber's clock */
export const atNow = <A>(f: (now: number) => A): Effect.Effect<A> =>
  Effect.clockWith((clock) => Effect.sync(() => f(clock.unsafeCurrentTimeMillis())))

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
  readonly gate = recordingGate((entry) => this.unsafeRecordRequest(entry.now))
  readonly unsafeRecordRequest = (nowMillis: number): void => this.budget.recordRequest(nowMillis)
  readonly unsafeTryWithdraw = (nowMillis: number): boolean => this.budget.tryWithdraw(nowMillis)
  readonly unsafeStats = (nowMillis: number): RB.BudgetStats => this.budget.stats(nowMillis)
  get recordRequest(): Effect.Effect<void> {
    return atNow(this.unsafeRecordRequest)
  }
  get tryWithdraw(): Effect.Effect<boolean> {
    return Effect.flatMap(Clock.currentTimeMillis, (now) => {
      const granted = this.unsafeTryWithdraw(now)
      return Effect.as(granted ? Metric.increment(withdrawals) : Metric.increment(denials), granted)
    })
  }
  get stats(): Effect.Effect<RB.BudgetStats> {
    return atNow(this.unsafeStats)
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

/** @internal the public `RetryBudget.RetryBudget` class has the same key, so they are one tag */
export const RetryBudget = Context.GenericTag<RB.RetryBudget, RB.Service>("@sluice/retry/RetryBudget")

const decode = Options.decode("RetryBudget", RetryBudgetOptions)
const decodeSync = Options.decodeSync("RetryBudget", RetryBudgetOptions)

/** @internal */
export const make = (
  options: RB.RetryBudgetOptions = {}
): Effect.Effect<RB.Service, Options.InvalidOptions> =>
  Effect.map(decode(options), (resolved) => new ServiceImpl(resolved))

/** @internal */
export const unsafeMake = (options: RB.RetryBudgetOptions = {}): RB.Service =>
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
): Layer.Layer<RB.RetryBudget, Options.InvalidOptions | ConfigError.ConfigError> =>
  Layer.effect(RetryBudget, Effect.flatMap(config, make))

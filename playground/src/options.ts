/**
 * The strategies' main options, as the page offers them. With every option at its
 * default a strategy is the demo's built-in, unchanged (the table then equals the
 * demo's); a changed option builds the same strategy from the same public APIs
 * (`Retry`, `Backoff`, `RetryBudget`, `CongestionWindow`) with that value, validated
 * as those APIs validate their options.
 */
import { CongestionWindow } from "@sluice/adaptive"
import { Strategy } from "@sluice/simulation"
import { Backoff, Retry, RetryBudget } from "@sluice/retry"
import { Effect, Schedule } from "effect"

export interface OptionField {
  readonly key: string
  readonly label: string
  readonly defaultValue: number
  readonly step: number
}

/** Per strategy, the options the page shows (the built-ins' values as defaults). */
export const optionFields: Readonly<Record<string, ReadonlyArray<OptionField>>> = {
  naive: [{ key: "maxAttempts", label: "attempts", defaultValue: 10, step: 1 }],
  exponential: [
    { key: "baseMillis", label: "base ms", defaultValue: 50, step: 10 },
    { key: "maxSeconds", label: "max s", defaultValue: 30, step: 1 }
  ],
  "exponential-budget": [
    { key: "maxAttempts", label: "attempts", defaultValue: 3, step: 1 },
    { key: "ratio", label: "budget", defaultValue: 0.1, step: 0.05 }
  ],
  "cwnd-tahoe": [{ key: "backoffRatio", label: "backoff ×", defaultValue: 0.5, step: 0.05 }],
  "cwnd-reno": [{ key: "backoffRatio", label: "backoff ×", defaultValue: 0.9, step: 0.05 }]
}

export type StrategyOptions = Readonly<Record<string, number>>

const value = (name: string, options: StrategyOptions, key: string): number =>
  options[key] ?? optionFields[name]!.find((f) => f.key === key)!.defaultValue

/** Only the options that differ from the defaults (what the URL keeps). */
export const changedOptions = (name: string, options: StrategyOptions): StrategyOptions =>
  Object.fromEntries(
    Object.entries(options).filter(
      ([key, v]) => (optionFields[name] ?? []).find((f) => f.key === key)?.defaultValue !== v
    )
  )

const UNLIMITED_ATTEMPTS = Number.MAX_SAFE_INTEGER

const backoff = (baseMillis: number, maxSeconds: number) =>
  Backoff.exponential({ base: `${baseMillis} millis`, factor: 2, max: `${maxSeconds} seconds` }).pipe(
    Backoff.jitter("full")
  )

/** The built-in strategy `name`, or, with changed options, the same strategy with them. */
export const strategyWith = (name: string, options: StrategyOptions): Strategy.Strategy | undefined => {
  const builtIn = Strategy.builtIns.find((s) => s.name === name)
  if (builtIn === undefined || Object.keys(changedOptions(name, options)).length === 0) return builtIn
  const description = `${builtIn.description} (${Object.entries(changedOptions(name, options))
    .map(([k, v]) => `${k} ${v}`)
    .join(", ")})`
  const make = ((): Strategy.Strategy["make"] | undefined => {
    switch (name) {
      case "naive":
        return () =>
          Effect.map(
            Retry.make({ maxAttempts: value(name, options, "maxAttempts"), schedule: Schedule.forever }),
            (retry) => ({ run: (attempt) => retry.apply(attempt) })
          )
      case "exponential":
        return () =>
          Effect.map(
            Retry.make({
              maxAttempts: UNLIMITED_ATTEMPTS,
              schedule: backoff(value(name, options, "baseMillis"), value(name, options, "maxSeconds"))
            }),
            (retry) => ({
              run: (attempt) => retry.apply(attempt)
            })
          )
      case "exponential-budget":
        return (index) =>
          Effect.gen(function* () {
            const budgets = yield* RetryBudget.make({ ratio: value(name, options, "ratio") })
            const retry = yield* Retry.make({
              maxAttempts: value(name, options, "maxAttempts"),
              schedule: backoff(50, 30),
              budget: budgets.forKey(`client-${index}`)
            })
            return { run: (attempt) => retry.apply(attempt) }
          })
      case "cwnd-tahoe":
      case "cwnd-reno":
        return Strategy.limited(
          () =>
            CongestionWindow.factory({
              variant: name === "cwnd-tahoe" ? "tahoe" : "reno",
              backoffRatio: value(name, options, "backoffRatio")
            }),
          {}
        )
      default:
        return undefined
    }
  })()
  return make === undefined ? builtIn : { name, description, make }
}

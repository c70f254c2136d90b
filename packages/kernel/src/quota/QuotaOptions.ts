/**
 * What the quota service accepts: its options, with their ranges and defaults, and the arguments
 * of its calls (a check's cost, the units of a reward or penalty, a block's duration). Every rule
 * is here once; the binding turns its users' durations into milliseconds (`toMillis`) and an
 * issue into its typed error.
 *
 * The defaults: the store's `deadline` is 15 ms and, unless `maxDeadline` is set above it, a hard
 * bound. The breaker opens only on sustained failure (see `SustainedFailure`): half of the calls
 * over a second with at least 20 calls, or 5 failures in a row, either spread over at least
 * 250 ms; it stays open 500 ms, then one probe. A fail-closed denial asks to wait a second. The
 * local fallback holds the whole plan (`fallbackShare` 1) for at most 100,000 clients. Client ids
 * are stored as they are up to 256 code units.
 *
 * @since 0.2.0
 */
import {
  type Issue,
  finiteDuration,
  positiveDuration,
  positiveInt,
  positiveRatio,
  unknownKeys
} from "../options/Field.js"
import { DEFAULT_MAX_CLIENTS } from "./MemoryStore.js"

/**
 * What decides a check when the store fails or misses its deadline.
 *
 * @since 0.2.0
 */
export type FailureMode = "fail-open" | "fail-closed" | "fallback"

/**
 * Every failure mode.
 *
 * @since 0.2.0
 */
export const failureModes: ReadonlyArray<FailureMode> = ["fail-open", "fail-closed", "fallback"]

/**
 * The store breaker's options as given, durations of type `D`.
 *
 * @since 0.2.0
 */
export interface BreakerInput<D = number> {
  readonly failureRatio?: number | undefined
  readonly window?: D | undefined
  readonly minimumCalls?: number | undefined
  readonly consecutiveFailures?: number | undefined
  readonly minFailureSpan?: D | undefined
  readonly openFor?: D | undefined
  readonly halfOpenProbes?: number | undefined
}

/**
 * The quota service's options as given, durations of type `D` (the binding's duration input).
 *
 * @since 0.2.0
 */
export interface Input<D = number> {
  readonly mode?: FailureMode | undefined
  readonly deadline?: D | undefined
  readonly maxDeadline?: D | undefined
  readonly breaker?: BreakerInput<D> | undefined
  readonly failClosedRetryAfter?: D | undefined
  readonly fallbackShare?: number | undefined
  readonly fallbackMaxClients?: number | undefined
  readonly maxClientIdLength?: number | undefined
}

/**
 * The store breaker's options, resolved (durations in milliseconds).
 *
 * @since 0.2.0
 */
export interface Breaker {
  readonly failureRatio: number
  readonly windowMs: number
  readonly minimumCalls: number
  readonly consecutiveFailures: number
  readonly minFailureSpanMs: number
  readonly openForMs: number
  readonly halfOpenProbes: number
}

/**
 * The quota service's options, resolved (durations in milliseconds).
 *
 * @since 0.2.0
 */
export interface Options {
  readonly mode: FailureMode
  readonly deadlineMs: number
  /** never below `deadlineMs`: it is the deadline unless set above it */
  readonly maxDeadlineMs: number
  readonly breaker: Breaker
  readonly failClosedRetryAfterMs: number
  readonly fallbackShare: number
  readonly fallbackMaxClients: number
  readonly maxClientIdLength: number
}

/**
 * The defaults (see the module's description).
 *
 * @since 0.2.0
 */
export const defaults: Options = {
  mode: "fallback",
  deadlineMs: 15,
  maxDeadlineMs: 15,
  breaker: {
    failureRatio: 0.5,
    windowMs: 1000,
    minimumCalls: 20,
    consecutiveFailures: 5,
    minFailureSpanMs: 250,
    openForMs: 500,
    halfOpenProbes: 1
  },
  failClosedRetryAfterMs: 1000,
  fallbackShare: 1,
  fallbackMaxClients: DEFAULT_MAX_CLIENTS,
  maxClientIdLength: 256
}

/**
 * The smallest `maxClientIdLength`: a prefix, `#` and the 64 hex digits of a SHA-256 (see
 * `ClientKey`).
 *
 * @since 0.2.0
 */
export const MIN_CLIENT_ID_LENGTH = 80

/** The kinds of option: what each must be, and whether it is a duration. */
const kinds = {
  count: { check: positiveInt, duration: false },
  share: { check: positiveRatio, duration: false },
  span: { check: positiveDuration, duration: true },
  gap: { check: finiteDuration, duration: true }
} as const

const inputKeys: ReadonlyArray<keyof Input> = [
  "mode",
  "deadline",
  "maxDeadline",
  "breaker",
  "failClosedRetryAfter",
  "fallbackShare",
  "fallbackMaxClients",
  "maxClientIdLength"
]
const breakerKeys: ReadonlyArray<keyof BreakerInput> = [
  "failureRatio",
  "window",
  "minimumCalls",
  "consecutiveFailures",
  "minFailureSpan",
  "openFor",
  "halfOpenProbes"
]

/**
 * Resolves options: every field given is checked (a duration through `toMillis`, which answers
 * `NaN` for what is not a duration), every field absent takes its default. Answers the options,
 * or the issues, each naming its field.
 *
 * @since 0.2.0
 */
export const resolve = <D>(input: Input<D>, toMillis: (duration: D) => number): Options | Array<Issue> => {
  // A key no option declares is refused, at the top and in `breaker`.
  const issues: Array<Issue> = unknownKeys(input, inputKeys)
  if (typeof input.breaker === "object" && input.breaker !== null) {
    for (const issue of unknownKeys(input.breaker, breakerKeys))
      issues.push({ ...issue, path: ["breaker", ...issue.path] })
  }
  const read = (path: Array<string>, value: unknown, kind: keyof typeof kinds, fallback: number): number => {
    if (value === undefined) return fallback
    const { check, duration } = kinds[kind]
    const n = duration ? toMillis(value as D) : (value as number)
    const problem = check(n, String(value))
    if (problem !== undefined) issues.push({ path, message: problem })
    return n
  }
  // only an absent option (or `undefined`) takes its default: `null` is a value, refused like any other
  const mode = input.mode === undefined ? defaults.mode : input.mode
  if (!failureModes.includes(mode)) {
    issues.push({
      path: ["mode"],
      message: `expected one of ${failureModes.join(", ")}, got ${String(mode)}`
    })
  }
  let b: BreakerInput<D> = {}
  if (input.breaker !== undefined) {
    if (typeof input.breaker === "object" && input.breaker !== null) b = input.breaker
    else issues.push({ path: ["breaker"], message: `expected an object, got ${String(input.breaker)}` })
  }
  const d = defaults.breaker
  const deadlineMs = read(["deadline"], input.deadline, "span", defaults.deadlineMs)
  const maxClientIdLength = read(
    ["maxClientIdLength"],
    input.maxClientIdLength,
    "count",
    defaults.maxClientIdLength
  )
  if (positiveInt(maxClientIdLength) === undefined && maxClientIdLength < MIN_CLIENT_ID_LENGTH) {
    issues.push({
      path: ["maxClientIdLength"],
      message: `expected at least ${MIN_CLIENT_ID_LENGTH} (a prefix, \`#\` and 64 hex digits of SHA-256), got ${maxClientIdLength}`
    })
  }
  const options: Options = {
    mode,
    deadlineMs,
    maxDeadlineMs: Math.max(deadlineMs, read(["maxDeadline"], input.maxDeadline, "span", deadlineMs)),
    breaker: {
      failureRatio: read(["breaker", "failureRatio"], b.failureRatio, "share", d.failureRatio),
      windowMs: read(["breaker", "window"], b.window, "span", d.windowMs),
      minimumCalls: read(["breaker", "minimumCalls"], b.minimumCalls, "count", d.minimumCalls),
      consecutiveFailures: read(
        ["breaker", "consecutiveFailures"],
        b.consecutiveFailures,
        "count",
        d.consecutiveFailures
      ),
      minFailureSpanMs: read(["breaker", "minFailureSpan"], b.minFailureSpan, "gap", d.minFailureSpanMs),
      openForMs: read(["breaker", "openFor"], b.openFor, "span", d.openForMs),
      halfOpenProbes: read(["breaker", "halfOpenProbes"], b.halfOpenProbes, "count", d.halfOpenProbes)
    },
    failClosedRetryAfterMs: read(
      ["failClosedRetryAfter"],
      input.failClosedRetryAfter,
      "span",
      defaults.failClosedRetryAfterMs
    ),
    fallbackShare: read(["fallbackShare"], input.fallbackShare, "share", defaults.fallbackShare),
    fallbackMaxClients: read(
      ["fallbackMaxClients"],
      input.fallbackMaxClients,
      "count",
      defaults.fallbackMaxClients
    ),
    maxClientIdLength
  }
  return issues.length > 0 ? issues : options
}

/**
 * Issues as text, one line each: the field's path, then what is wrong.
 *
 * @since 0.2.0
 */
export const describeIssues = (issues: ReadonlyArray<Issue>): string =>
  issues.map((issue) => `${issue.path.join(".")}: ${issue.message}`).join("\n")

/**
 * A check's cost: as given (a non-negative integer; 0 peeks), 1 unit when not given, or what is
 * wrong with it.
 *
 * @since 0.2.0
 */
export const checkCost = (cost: number | undefined): number | string =>
  cost === undefined
    ? 1
    : Number.isSafeInteger(cost) && cost >= 0
      ? cost
      : `cost must be a non-negative integer (0 peeks), got ${String(cost)}`

/**
 * What is wrong with the units of a reward or a penalty, if anything: a positive integer.
 *
 * @since 0.2.0
 */
export const unitsIssue = (units: number): string | undefined =>
  Number.isSafeInteger(units) && units > 0
    ? undefined
    : `units must be a positive integer, got ${String(units)}`

/**
 * How long `withQuota` may wait for a permit, in milliseconds, or what is wrong with it: finite
 * and at least 0 (0: do not wait). `given`: the duration as the caller wrote it, for the message.
 *
 * @since 1.0.0
 */
export const maxWaitMs = (ms: number, given: unknown = ms): number | string =>
  Number.isFinite(ms) && ms >= 0
    ? ms
    : `maxWait must be a finite duration of at least 0, got ${String(given)}`

/**
 * A block's duration in whole milliseconds (rounded up), or what is wrong with it: it must be
 * finite and at least 1 ms. `given`: the duration as the caller wrote it, for the message.
 *
 * @since 0.2.0
 */
export const blockMs = (ms: number, given: unknown = ms): number | string =>
  Number.isFinite(ms) && ms >= 1
    ? Math.ceil(ms)
    : `duration must be at least 1 ms and finite, got ${String(given)}`

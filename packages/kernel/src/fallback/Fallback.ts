/**
 * When a call may be answered from a fallback instead of failing, and the bounded memory of
 * last good answers a fallback can serve from.
 *
 * A fallback answers only an overload signal: a backend that shed or throttled the call
 * (`Overloaded`, `QuotaExceeded`), a local refusal on its behalf (`Throttled`, `CircuitOpen`,
 * an `Overloaded` of this process's own limiter), or a `DontRetry` that gave up on one of
 * these. Anything else — a bad request, a bug, a defect — is the application's to see: a
 * fallback there would hide it.
 *
 * @since 1.0.0
 */
import * as BoundedMap from "../stats/BoundedMap.js"
import * as Field from "../options/Field.js"

/**
 * The overload signals a fallback answers, by the error's tag.
 *
 * @since 1.0.0
 */
export type Signal = "Overloaded" | "QuotaExceeded" | "Throttled" | "CircuitOpen"

const SIGNALS: ReadonlySet<unknown> = new Set<Signal>([
  "Overloaded",
  "QuotaExceeded",
  "Throttled",
  "CircuitOpen"
])

const tagOf = (u: unknown): unknown =>
  typeof u === "object" && u !== null ? (u as { readonly _tag?: unknown })._tag : undefined

/**
 * The overload signal `error` is, looking through the `DontRetry`s that gave up on one (at
 * most 8 deep); `undefined` for anything else.
 *
 * @since 1.0.0
 */
export const signalOf = (error: unknown): Signal | undefined => {
  let current = error
  for (let depth = 0; depth < 8; depth++) {
    const tag = tagOf(current)
    if (SIGNALS.has(tag)) return tag as Signal
    if (tag !== "DontRetry") return undefined
    current = (current as { readonly cause?: unknown }).cause
  }
  return undefined
}

/**
 * The options of a stale cache: `capacity`, the most keys remembered (default 1,000), and
 * `maxStaleMillis`, the oldest answer it serves (required).
 *
 * @since 1.0.0
 */
export const cacheOptions = {
  capacity: Field.withDefault(Field.positiveInt, 1000),
  maxStale: Field.duration(Field.required<number>(Field.positiveDuration))
}

/**
 * @since 1.0.0
 */
export interface StaleCacheOptions {
  readonly capacity: number
  readonly maxStaleMillis: number
}

/**
 * A remembered answer and how old it is.
 *
 * @since 1.0.0
 */
export interface Recalled<A> {
  readonly value: A
  readonly ageMillis: number
}

/**
 * The last good answer per key, bounded in keys (least recently used forgotten first) and in
 * age: an answer older than `maxStaleMillis` is never served.
 *
 * @since 1.0.0
 */
export class StaleCache<K, A> {
  private readonly entries: BoundedMap.BoundedMap<K, { value: A; at: number }>
  readonly maxStaleMillis: number
  constructor(options: StaleCacheOptions) {
    Field.orThrow(
      Field.fields([
        ["capacity", options.capacity, Field.positiveInt],
        ["maxStaleMillis", options.maxStaleMillis, Field.positiveDuration]
      ])
    )
    this.entries = BoundedMap.make({ capacity: options.capacity })
    this.maxStaleMillis = options.maxStaleMillis
  }
  get size(): number {
    return this.entries.size
  }
  /** Remembers a good answer, replacing an older one. */
  remember(key: K, value: A, now: number): void {
    const entry = this.entries.peek(key)
    if (entry === undefined) this.entries.set(key, { value, at: now })
    else if (now >= entry.at) {
      entry.value = value
      entry.at = now
    }
  }
  /** The last good answer, unless there is none or it is older than `maxStaleMillis`. */
  recall(key: K, now: number): Recalled<A> | undefined {
    const entry = this.entries.get(key)
    if (entry === undefined) return undefined
    const ageMillis = Math.max(0, now - entry.at)
    if (ageMillis > this.maxStaleMillis) {
      this.entries.delete(key)
      return undefined
    }
    return { value: entry.value, ageMillis }
  }
}

/**
 * The arithmetic of the QPS sensors that feed a proportional sampler: calls are counted per
 * whole second (epoch seconds), and a reading averages the last `window` complete seconds.
 * A second is read only once it has ended, and, for a shared count that other workers flush
 * late, only once it ended `settle` milliseconds ago; a sensor does not read seconds before it
 * started, so a fresh sensor never reports a falsely low rate.
 *
 * The counts live in memory (`SecondCounts`, shared by every sensor made from it) or in
 * Redis, one key per second (`keyFor`), which the binding reads and writes; the reply is
 * decoded here (`fromReplies`).
 *
 * Times are epoch milliseconds; rates are calls per second.
 *
 * @since 0.2.0
 */
import * as Field from "../options/Field.js"
import type { Reading } from "./ProportionalSampler.js"

/**
 * Options of a sensor: `window`, the complete seconds a reading averages (a positive
 * integer, default 2). A Redis sensor adds its timings in milliseconds: `flushInterval`
 * between sends of the local tally (default 100), `settle`, how long after a second ends it
 * is read (default 300), `timeout` of each Redis call (default 250), and `ttl` of a second's
 * key (default `window` + 60 seconds), each positive.
 *
 * @since 0.2.0
 */
export interface Options {
  readonly window?: number | undefined
  readonly flushInterval?: number | undefined
  readonly settle?: number | undefined
  readonly timeout?: number | undefined
  readonly ttl?: number | undefined
}

/**
 * The defaults, and the key prefix of a Redis sensor.
 *
 * @since 0.2.0
 */
export const defaults = {
  window: 2,
  flushInterval: 100,
  settle: 300,
  timeout: 250,
  prefix: "sluice:qps:"
} as const

/**
 * Every problem with `options`, each naming its field.
 *
 * @since 0.2.0
 */
export const issues = (options: Options): Array<Field.Issue> =>
  Field.fields([
    ["window", options.window, Field.positiveInt],
    ["flushInterval", options.flushInterval, Field.positiveDuration],
    ["settle", options.settle, Field.positiveDuration],
    ["timeout", options.timeout, Field.positiveDuration],
    ["ttl", options.ttl, Field.positiveDuration]
  ])

/**
 * The epoch second `now` falls in.
 *
 * @since 0.2.0
 */
export const secondOf = (now: number): number => Math.floor(now / 1000)

/**
 * Which complete seconds a reading at `now` averages: the last `window` seconds that ended
 * at least `settle` ms ago, but none before the sensor started (`start`); `undefined` when
 * there is none yet.
 *
 * @since 0.2.0
 */
export const readableSeconds = (
  now: number,
  start: number,
  window: number,
  settle: number
): readonly [from: number, to: number] | undefined => {
  const to = secondOf(now - settle) - 1
  const firstFull = Math.ceil(start / 1000)
  const from = Math.max(to - window + 1, firstFull)
  return to < from ? undefined : [from, to]
}

/**
 * The reading at `now` of counts summed by `sum(from, to)`, or `undefined` when no complete
 * second can be read yet.
 *
 * @since 0.2.0
 */
export const read = (
  sum: (from: number, to: number) => number,
  now: number,
  start: number,
  window: number,
  settle = 0
): Reading | undefined => {
  const range = readableSeconds(now, start, window, settle)
  if (range === undefined) return undefined
  const [from, to] = range
  return { qps: sum(from, to) / (to - from + 1), at: now }
}

/**
 * Counts per second. Past `retainSeconds` seconds kept, a write drops the seconds older than
 * that many before it, so the counts stay bounded.
 *
 * @since 0.2.0
 */
export class SecondCounts {
  private counts = new Map<number, number>()
  constructor(readonly retainSeconds = 120) {
    this.add = this.add.bind(this)
    this.sum = this.sum.bind(this)
  }
  /** How many seconds are kept. */
  get size(): number {
    return this.counts.size
  }
  /** Adds `n` calls to `second`. */
  add(second: number, n: number): void {
    this.counts.set(second, (this.counts.get(second) ?? 0) + n)
    if (this.counts.size > this.retainSeconds) {
      for (const key of this.counts.keys()) {
        if (key <= second - this.retainSeconds) this.counts.delete(key)
      }
    }
  }
  /** The calls of seconds `from..to`, inclusive. */
  sum(from: number, to: number): number {
    let sum = 0
    for (let s = from; s <= to; s++) sum += this.counts.get(s) ?? 0
    return sum
  }
  /** Hands over every second's count and starts empty (a tally sent in one batch). */
  drain(): Map<number, number> {
    const drained = this.counts
    this.counts = new Map()
    return drained
  }
}

/**
 * The Redis key of `second`'s count. The sensor's key is a hash tag, so that every second of
 * one sensor lives in one Redis Cluster slot and a reading is one `MGET`.
 *
 * @since 0.2.0
 */
export const keyFor = (prefix: string, key: string, second: number): string => `${prefix}{${key}}:${second}`

/**
 * The keys of the seconds `from..to`.
 *
 * @since 0.2.0
 */
export const keysFor = (
  prefix: string,
  key: string,
  [from, to]: readonly [number, number]
): Array<string> => {
  const keys: Array<string> = []
  for (let s = from; s <= to; s++) keys.push(keyFor(prefix, key, s))
  return keys
}

/**
 * How long a second's key lives, in whole seconds (at least 1): `ttl` (ms), else `window`
 * plus a minute, so a key outlives every reading that can include it.
 *
 * @since 0.2.0
 */
export const ttlSeconds = (ttl: number | undefined, window: number): number =>
  Math.max(1, Math.ceil(ttl === undefined ? window + 60 : ttl / 1000))

/**
 * The reading at `now` from the `MGET` reply of a reading's keys: a missing key is a second
 * without calls.
 *
 * @since 0.2.0
 */
export const fromReplies = (values: ReadonlyArray<string | null>, now: number): Reading => {
  let sum = 0
  for (const v of values) sum += v === null ? 0 : Number(v)
  return { qps: sum / values.length, at: now }
}

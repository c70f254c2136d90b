/**
 * A map with a bound on its entries, for the per-key state every Sluice policy
 * keeps (throttle windows, limiters, retry budgets, clients): past `capacity`,
 * inserting a new key evicts one that was not used recently.
 *
 * Eviction follows the CLOCK approximation of least-recently-used: a hit costs
 * one `Map.get` and a flag write (no re-insertion on the hot path), and an entry
 * used since the last sweep gets a second chance. `canEvict` can protect entries
 * that are busy (a limiter with work in flight): they are passed over while an
 * idle one can go, and `onEvict` is told about every eviction.
 *
 * The map is plain mutable state: keep it inside a service built by a Layer.
 *
 * @since 0.2.0
 */
import * as internal from "./internal/boundedMap.js"

/**
 * @since 0.2.0
 * @category models
 */
export interface BoundedMap<K, V> {
  readonly capacity: number
  readonly size: number
  /** The value, marking the key as recently used. */
  get(key: K): V | undefined
  /** The value, without marking the key. */
  peek(key: K): V | undefined
  has(key: K): boolean
  /** Inserts or replaces; a new key past `capacity` evicts another first. */
  set(key: K, value: V): void
  /** The value for `key`, created (and inserted) by `create` when missing. */
  getOrCreate(key: K, create: (key: K) => V): V
  delete(key: K): boolean
  clear(): void
  keys(): IterableIterator<K>
  values(): IterableIterator<V>
}

/**
 * @since 0.2.0
 * @category models
 */
export interface BoundedMapOptions<K, V> {
  /** The most entries held: a positive integer, or `Infinity`. */
  readonly capacity: number
  /** Called after an entry is evicted (not on `delete`). */
  readonly onEvict?: ((key: K, value: V) => void) | undefined
  /** Entries for which this returns `false` are evicted only when no other can be. */
  readonly canEvict?: ((key: K, value: V) => boolean) | undefined
}

/**
 * Makes a bounded map; throws a `RangeError` for a capacity that is not a
 * positive integer or `Infinity` (validate options with Schema first).
 *
 * @example
 * ```ts
 * import { BoundedMap } from "@sluice/core"
 *
 * const evicted: Array<string> = []
 * const map = BoundedMap.make<string, number>({ capacity: 2, onEvict: (key) => evicted.push(key) })
 * map.set("a", 1)
 * map.set("b", 2)
 * map.get("a") // used recently: "b" goes first
 * map.set("c", 3)
 * console.log(evicted) // ["b"]
 * ```
 * @since 0.2.0
 * @category constructors
 */
export const make: <K, V>(options: BoundedMapOptions<K, V>) => BoundedMap<K, V> = internal.make

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
 * It is `@sluice/kernel/stats/BoundedMap`, re-exported.
 *
 * For Sluice's own packages (`@sluice/core/shared/*`): importable, but outside the semver contract.
 *
 * @since 0.2.0
 */
import * as BoundedMapKernel from "@sluice/kernel/stats/BoundedMap"

/**
 * @since 0.2.0
 * @category models
 */
export interface BoundedMap<K, V> extends BoundedMapKernel.BoundedMap<K, V> {}

/**
 * @since 0.2.0
 * @category models
 */
export interface BoundedMapOptions<K, V> extends BoundedMapKernel.BoundedMapOptions<K, V> {}

/**
 * Makes a bounded map; throws a `RangeError` for a capacity that is not a
 * positive integer or `Infinity` (validate options with Schema first).
 *
 * @example
 * ```ts
 * import * as BoundedMap from "@sluice/core/shared/BoundedMap"
 *
 * const evicted: Array<string> = []
 * const map = BoundedMap.make<string, number>({ capacity: 2, onEvict: (key) => evicted.push(key) })
 * map.set("a", 1)
 * map.set("b", 2)
 * map.get("a") // used recently: "b" goes first
 * map.set("c", 3)
 * console.log(evicted) // prints: [ 'b' ]
 * ```
 * @since 0.2.0
 * @category constructors
 */
export const make: <K, V>(options: BoundedMapOptions<K, V>) => BoundedMap<K, V> = BoundedMapKernel.make

/**
 * A map with a bound on its entries, for the per-key state every Sluice policy keeps (throttle
 * windows, limiters, retry budgets, clients): past `capacity`, inserting a new key evicts one
 * that was not used recently, so a stream of distinct keys (one per caller, per host) cannot grow
 * memory without bound.
 *
 * Eviction follows the CLOCK approximation of least-recently-used (Corbató's page replacement
 * for Multics): a hit costs one `Map.get` and a flag write (no re-insertion on the hot path), and
 * an entry used since the last sweep gets a second chance. `canEvict` can protect entries that
 * are busy (a limiter with work in flight): they are passed over while an idle one can go, and
 * `onEvict` is told about every eviction.
 *
 * @since 0.2.0
 */

/**
 * @since 0.2.0
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
 */
export interface BoundedMapOptions<K, V> {
  /** The most entries held: a positive integer, or `Infinity`. */
  readonly capacity: number
  /** Called after an entry is evicted (not on `delete`). */
  readonly onEvict?: ((key: K, value: V) => void) | undefined
  /** Entries for which this returns `false` are evicted only when no other can be. */
  readonly canEvict?: ((key: K, value: V) => boolean) | undefined
}

/*
 * The CLOCK approximation of least-recently-used: entries sit in slots of a ring with a
 * "recently used" bit; a hit costs one `Map.get` and a bit write, and eviction moves a
 * hand around the ring, clearing bits until it finds an entry not used since its last
 * pass (each entry used since then gets a second chance). Amortized O(1) per eviction.
 */
class BoundedMapImpl<K, V> implements BoundedMap<K, V> {
  private readonly index = new Map<K, number>()
  private readonly slotKeys: Array<K | undefined> = []
  private readonly slotValues: Array<V | undefined> = []
  private readonly used: Array<boolean> = []
  private readonly occupied: Array<boolean> = []
  private readonly free: Array<number> = []
  private hand = 0
  constructor(
    readonly capacity: number,
    private readonly onEvict: ((key: K, value: V) => void) | undefined,
    private readonly canEvict: ((key: K, value: V) => boolean) | undefined
  ) {}

  get size(): number {
    return this.index.size
  }

  get(key: K): V | undefined {
    const slot = this.index.get(key)
    if (slot === undefined) return undefined
    this.used[slot] = true
    return this.slotValues[slot]
  }

  peek(key: K): V | undefined {
    const slot = this.index.get(key)
    return slot === undefined ? undefined : this.slotValues[slot]
  }

  has(key: K): boolean {
    return this.index.has(key)
  }

  set(key: K, value: V): void {
    const slot = this.index.get(key)
    if (slot !== undefined) {
      this.slotValues[slot] = value
      this.used[slot] = true
      return
    }
    this.insert(key, value)
  }

  getOrCreate(key: K, create: (key: K) => V): V {
    const slot = this.index.get(key)
    if (slot !== undefined) {
      this.used[slot] = true
      return this.slotValues[slot]!
    }
    const value = create(key)
    this.insert(key, value)
    return value
  }

  delete(key: K): boolean {
    const slot = this.index.get(key)
    if (slot === undefined) return false
    this.release(key, slot)
    return true
  }

  clear(): void {
    this.index.clear()
    this.slotKeys.length = 0
    this.slotValues.length = 0
    this.used.length = 0
    this.occupied.length = 0
    this.free.length = 0
    this.hand = 0
  }

  *keys(): IterableIterator<K> {
    yield* this.index.keys()
  }

  *values(): IterableIterator<V> {
    for (const slot of this.index.values()) yield this.slotValues[slot]!
  }

  private insert(key: K, value: V): void {
    if (this.index.size >= this.capacity) this.evictOne()
    const slot = this.free.length > 0 ? this.free.pop()! : this.slotKeys.length
    this.slotKeys[slot] = key
    this.slotValues[slot] = value
    this.used[slot] = false
    this.occupied[slot] = true
    this.index.set(key, slot)
  }

  private release(key: K, slot: number): void {
    this.index.delete(key)
    this.slotKeys[slot] = undefined
    this.slotValues[slot] = undefined
    this.used[slot] = false
    this.occupied[slot] = false
    this.free.push(slot)
  }

  private evictOne(): void {
    const ring = this.slotKeys.length
    if (ring === 0) return
    // Two turns at most: the first clears every bit it passes, so the second finds a victim
    // (unless `canEvict` refuses every entry: then the first one the hand met goes).
    let fallback = -1
    for (let step = 0; step < 2 * ring; step++) {
      const slot = this.hand
      this.hand = slot + 1 === ring ? 0 : slot + 1
      if (!this.occupied[slot]) continue
      if (fallback < 0) fallback = slot
      if (this.used[slot]) {
        this.used[slot] = false
        continue
      }
      if (this.canEvict !== undefined && !this.canEvict(this.slotKeys[slot]!, this.slotValues[slot]!))
        continue
      this.evict(slot)
      return
    }
    if (fallback >= 0) this.evict(fallback)
  }

  private evict(slot: number): void {
    const key = this.slotKeys[slot]!
    const value = this.slotValues[slot]!
    this.release(key, slot)
    if (this.onEvict !== undefined) this.onEvict(key, value)
  }
}

/**
 * Makes a bounded map; throws a `RangeError` for a capacity that is not a positive integer or
 * `Infinity`.
 *
 * @since 0.2.0
 */
export const make = <K, V>(options: BoundedMapOptions<K, V>): BoundedMap<K, V> => {
  const capacity = options.capacity
  if (!(Number.isSafeInteger(capacity) && capacity >= 1) && capacity !== Infinity) {
    throw new RangeError(`BoundedMap: capacity must be a positive integer, got ${capacity}`)
  }
  return new BoundedMapImpl(capacity, options.onEvict, options.canEvict)
}

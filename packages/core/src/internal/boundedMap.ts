import type * as BM from "../BoundedMap.js"

/**
 * The CLOCK approximation of least-recently-used: entries sit in slots of a ring with a
 * "recently used" bit; a hit costs one `Map.get` and a bit write, and eviction moves a
 * hand around the ring, clearing bits until it finds an entry not used since its last
 * pass (each entry used since then gets a second chance). Amortized O(1) per eviction.
 */
class BoundedMapImpl<K, V> implements BM.BoundedMap<K, V> {
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

/** @internal */
export const make = <K, V>(options: BM.BoundedMapOptions<K, V>): BM.BoundedMap<K, V> => {
  const capacity = options.capacity
  if (!(Number.isSafeInteger(capacity) && capacity >= 1) && capacity !== Infinity) {
    throw new RangeError(`BoundedMap: capacity must be a positive integer, got ${capacity}`)
  }
  return new BoundedMapImpl(capacity, options.onEvict, options.canEvict)
}

import type * as BM from "../BoundedMap.js"

class Entry<V> {
  recent = false
  constructor(public value: V) {}
}

/**
 * A map in insertion order with a "recently used" bit per entry (the CLOCK
 * approximation of least-recently-used): a hit costs one `Map.get` and a flag
 * write, and eviction gives each recently used entry a second chance by moving
 * it to the back, clearing its bit.
 */
class BoundedMapImpl<K, V> implements BM.BoundedMap<K, V> {
  private readonly entries = new Map<K, Entry<V>>()
  constructor(
    readonly capacity: number,
    private readonly onEvict: ((key: K, value: V) => void) | undefined,
    private readonly canEvict: ((key: K, value: V) => boolean) | undefined
  ) {}

  get size(): number {
    return this.entries.size
  }

  get(key: K): V | undefined {
    const entry = this.entries.get(key)
    if (entry === undefined) return undefined
    entry.recent = true
    return entry.value
  }

  peek(key: K): V | undefined {
    return this.entries.get(key)?.value
  }

  has(key: K): boolean {
    return this.entries.has(key)
  }

  set(key: K, value: V): void {
    const entry = this.entries.get(key)
    if (entry !== undefined) {
      entry.value = value
      entry.recent = true
      return
    }
    if (this.entries.size >= this.capacity) this.evictOne()
    this.entries.set(key, new Entry(value))
  }

  getOrCreate(key: K, create: (key: K) => V): V {
    const entry = this.entries.get(key)
    if (entry !== undefined) {
      entry.recent = true
      return entry.value
    }
    const value = create(key)
    if (this.entries.size >= this.capacity) this.evictOne()
    this.entries.set(key, new Entry(value))
    return value
  }

  delete(key: K): boolean {
    return this.entries.delete(key)
  }

  clear(): void {
    this.entries.clear()
  }

  *keys(): IterableIterator<K> {
    yield* this.entries.keys()
  }

  *values(): IterableIterator<V> {
    for (const entry of this.entries.values()) yield entry.value
  }

  private evictOne(): void {
    // Two sweeps at most: the first clears every bit it passes, so the second finds a victim
    // (unless `canEvict` refuses every entry: then the oldest goes all the same).
    const limit = this.entries.size * 2
    let visited = 0
    let fallback: K | undefined = undefined
    let hasFallback = false
    for (const [key, entry] of this.entries) {
      if (visited++ >= limit) break
      if (!hasFallback) {
        fallback = key
        hasFallback = true
      }
      if (entry.recent) {
        entry.recent = false
        // Second chance: to the back of the line.
        this.entries.delete(key)
        this.entries.set(key, entry)
        continue
      }
      if (this.canEvict !== undefined && !this.canEvict(key, entry.value)) continue
      this.remove(key, entry)
      return
    }
    if (hasFallback) {
      const entry = this.entries.get(fallback as K)
      if (entry !== undefined) this.remove(fallback as K, entry)
    }
  }

  private remove(key: K, entry: Entry<V>): void {
    this.entries.delete(key)
    if (this.onEvict !== undefined) this.onEvict(key, entry.value)
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

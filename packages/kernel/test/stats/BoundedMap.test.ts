import * as BoundedMap from "@sluice/kernel/stats/BoundedMap"
import fc from "fast-check"
import { describe, expect, it } from "vitest"

describe("BoundedMap", () => {
  it("the README example: a recently used key survives, the other goes", () => {
    const evicted: Array<string> = []
    const map = BoundedMap.make<string, number>({ capacity: 2, onEvict: (key) => evicted.push(key) })
    map.set("a", 1)
    map.set("b", 2)
    map.get("a")
    map.set("c", 3)
    expect(evicted).toEqual(["b"])
    expect([...map.keys()].sort()).toEqual(["a", "c"])
  })

  it("canEvict protects busy entries while an idle one can go; the oldest goes when all are busy", () => {
    const busy = new Set(["a", "b"])
    const evicted: Array<string> = []
    const map = BoundedMap.make<string, number>({
      capacity: 3,
      canEvict: (key) => !busy.has(key),
      onEvict: (key) => evicted.push(key)
    })
    map.set("a", 1)
    map.set("b", 2)
    map.set("c", 3)
    map.set("d", 4)
    expect(evicted).toEqual(["c"])
    busy.add("d")
    map.set("e", 5)
    expect(evicted).toEqual(["c", "a"])
  })

  it("getOrCreate creates once; delete does not call onEvict; bad capacity is a RangeError", () => {
    let created = 0
    const evicted: Array<string> = []
    const map = BoundedMap.make<string, number>({ capacity: 1, onEvict: (key) => evicted.push(key) })
    expect(map.getOrCreate("x", () => ++created)).toBe(1)
    expect(map.getOrCreate("x", () => ++created)).toBe(1)
    expect(map.delete("x")).toBe(true)
    expect(evicted).toEqual([])
    expect(() => BoundedMap.make({ capacity: 0 })).toThrow(RangeError)
    expect(() => BoundedMap.make({ capacity: 1.5 })).toThrow(RangeError)
    expect(BoundedMap.make({ capacity: Infinity }).capacity).toBe(Infinity)
  })

  it("never holds more than capacity; every key ever set is present or was evicted exactly once", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 8 }),
        fc.array(
          fc.tuple(fc.constantFrom("get", "set", "getOrCreate", "delete"), fc.integer({ min: 0, max: 15 })),
          {
            maxLength: 200
          }
        ),
        (capacity, ops) => {
          const evictions = new Map<number, number>()
          const map = BoundedMap.make<number, number>({
            capacity,
            onEvict: (key) => evictions.set(key, (evictions.get(key) ?? 0) + 1)
          })
          const model = new Set<number>()
          for (const [op, key] of ops) {
            if (op === "get") expect(map.get(key) !== undefined).toBe(model.has(key))
            else if (op === "delete") {
              expect(map.delete(key)).toBe(model.has(key))
              model.delete(key)
            } else {
              const before = new Set(map.keys())
              if (op === "set") map.set(key, key)
              else expect(map.getOrCreate(key, (k) => k)).toBe(key)
              model.add(key)
              for (const gone of before) if (!map.has(gone)) model.delete(gone)
            }
            expect(map.size).toBeLessThanOrEqual(capacity)
            expect(new Set(map.keys())).toEqual(model)
          }
        }
      ),
      { numRuns: 300 }
    )
  })

  it("a recently used key outlives keys that were not used (second chance)", () => {
    const map = BoundedMap.make<number, number>({ capacity: 4 })
    for (let i = 0; i < 4; i++) map.set(i, i)
    for (let round = 0; round < 50; round++) {
      map.get(0)
      map.set(100 + round, round)
      expect(map.has(0)).toBe(true)
    }
  })
})

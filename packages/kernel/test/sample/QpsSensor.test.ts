import * as QpsSensor from "@sluice/kernel/sample/QpsSensor"
import { describe, expect, it } from "vitest"

describe("QpsSensor", () => {
  it("readableSeconds: the last window complete seconds, settled, none before the start", () => {
    // at 10.5 s the last complete second is 9
    expect(QpsSensor.readableSeconds(10_500, 0, 2, 0)).toEqual([8, 9])
    // a second is read only once it ended settle ms ago
    expect(QpsSensor.readableSeconds(10_200, 0, 2, 300)).toEqual([7, 8])
    expect(QpsSensor.readableSeconds(10_300, 0, 2, 300)).toEqual([8, 9])
    // a sensor started at 8.2 s reads from second 9, the first it saw whole
    expect(QpsSensor.readableSeconds(10_500, 8200, 2, 0)).toEqual([9, 9])
    expect(QpsSensor.readableSeconds(9500, 8200, 2, 0)).toBeUndefined()
  })

  it("read averages the readable seconds' counts, or nothing when none is readable", () => {
    const counts = new QpsSensor.SecondCounts()
    counts.add(8, 10)
    counts.add(9, 30)
    counts.add(10, 1000)
    expect(QpsSensor.read(counts.sum, 10_500, 0, 2)).toEqual({ qps: 20, at: 10_500 })
    expect(QpsSensor.read(counts.sum, 10_500, 0, 4)).toEqual({ qps: 10, at: 10_500 })
    expect(QpsSensor.read(counts.sum, 10_500, 10_000, 2)).toBeUndefined()
  })

  it("SecondCounts: adds per second, keeps at most retainSeconds before the latest write, drains", () => {
    const counts = new QpsSensor.SecondCounts(3)
    for (let s = 0; s < 6; s++) counts.add(s, s + 1)
    expect(counts.sum(0, 5)).toBe(4 + 5 + 6)
    expect(counts.size).toBe(3)
    expect([...counts.drain()]).toEqual([
      [3, 4],
      [4, 5],
      [5, 6]
    ])
    expect(counts.size).toBe(0)
    counts.add(7, 2)
    counts.add(7, 3)
    expect(counts.sum(7, 7)).toBe(5)
  })

  it("Redis keys, their time to live, and the reading from an MGET reply", () => {
    expect(QpsSensor.keyFor("sluice:qps:", "search", 42)).toBe("sluice:qps:{search}:42")
    expect(QpsSensor.keysFor("p:", "k", [8, 10])).toEqual(["p:{k}:8", "p:{k}:9", "p:{k}:10"])
    expect(QpsSensor.ttlSeconds(undefined, 2)).toBe(62)
    expect(QpsSensor.ttlSeconds(1500, 2)).toBe(2)
    expect(QpsSensor.ttlSeconds(1, 2)).toBe(1)
    expect(QpsSensor.fromReplies(["12", null, "6"], 5000)).toEqual({ qps: 6, at: 5000 })
  })

  it("issues name every field out of range", () => {
    expect(QpsSensor.issues({})).toEqual([])
    expect(
      QpsSensor.issues({ window: 1.5, flushInterval: 0, settle: -1, timeout: Infinity, ttl: Number.NaN }).map(
        (i) => i.path
      )
    ).toEqual([["window"], ["flushInterval"], ["settle"], ["timeout"], ["ttl"]])
  })
})

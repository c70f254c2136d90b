import * as Fixed from "@sluice/kernel/limit/Fixed"
import type * as Limit from "@sluice/kernel/limit/Limit"
import * as Limiter from "@sluice/kernel/limiter/Limiter"
import * as Ratio from "@sluice/kernel/stats/Ratio"
import fc from "fast-check"
import { describe, expect, it } from "vitest"

const [CRITICAL_PLUS, CRITICAL, SHEDDABLE_PLUS, SHEDDABLE] = [0, 1, 2, 3]

/** A limit the test sets by hand. */
const settable = (initial: number): Limit.Limit & { limit: number } => ({
  name: "settable",
  limit: initial,
  onSample() {
    return this.limit
  }
})

class Named extends Limiter.Waiter {
  constructor(
    level: number,
    readonly name: string,
    overQuota = false
  ) {
    super(level, overQuota)
  }
}

/** Records whom it granted and whom it displaced, in order. */
class Recording extends Limiter.Limiter<Limiter.Permit, Named> {
  readonly granted: Array<string> = []
  readonly displaced: Array<string> = []
  protected override onGranted(waiter: Named): void {
    this.granted.push(waiter.name)
  }
  protected override onDisplaced(waiter: Named): void {
    this.displaced.push(waiter.name)
  }
  /** Queues a waiter (making room if needed); `false` when the queue is full. */
  wait(level: number, name: string, overQuota = false): Named | undefined {
    if (!this.makeRoom(level, overQuota)) return undefined
    const waiter = new Named(level, name, overQuota)
    this.enqueue(waiter)
    return waiter
  }
}

const make = (limit: Limit.Limit, options: Partial<Limiter.Options> = {}) =>
  new Recording(limit, { maxQueue: 1000, order: "fifo", ...options })

const take = (limiter: Recording, level = CRITICAL): Limiter.Permit => {
  const answer = limiter.tryAcquire(level, 0, undefined)
  if (typeof answer === "string") throw new Error(`expected a permit, got ${answer}`)
  return answer
}

describe("Limiter", () => {
  it("over quota waits behind its level and ahead of less critical levels; displaced first within its level", () => {
    const limiter = make(new Fixed.Fixed(1), { maxQueue: 3 })
    take(limiter)
    limiter.wait(CRITICAL, "over", true)
    limiter.wait(SHEDDABLE_PLUS, "less critical")
    limiter.wait(CRITICAL, "within")
    expect(limiter.queuedAt(CRITICAL)).toBe(2)
    // a full queue: a within-quota CRITICAL displaces the less critical level first ...
    limiter.wait(CRITICAL, "within 2")
    expect(limiter.displaced).toEqual(["less critical"])
    // ... then the over-quota waiter of its own level, never a within-quota one
    limiter.wait(CRITICAL, "within 3")
    expect(limiter.displaced).toEqual(["less critical", "over"])
    expect(limiter.hasRoom(CRITICAL, true)).toBe(false)
    expect(limiter.wait(CRITICAL, "over 2", true)).toBeUndefined()
    // a more critical level's over-quota work still displaces a less critical level's within-quota work
    expect(limiter.hasRoom(CRITICAL_PLUS, true)).toBe(true)
    limiter.wait(CRITICAL_PLUS, "over plus", true)
    expect(limiter.displaced).toEqual(["less critical", "over", "within 3"])
    // served by criticality first, then within quota before over quota
    const fresh = make(new Fixed.Fixed(1))
    let permit = take(fresh)
    const waiters = [
      fresh.wait(SHEDDABLE_PLUS, "sp")!,
      fresh.wait(CRITICAL, "c over", true)!,
      fresh.wait(CRITICAL_PLUS, "cp over", true)!,
      fresh.wait(CRITICAL, "c")!,
      fresh.wait(CRITICAL_PLUS, "cp")!
    ]
    for (let i = 0; i < waiters.length; i++) {
      fresh.release(permit, "success", i + 1, undefined)
      permit = waiters.find((w) => w.name === fresh.granted[i])!.permit!
    }
    expect(fresh.granted).toEqual(["cp", "cp over", "c", "c over", "sp"])
  })

  it("over quota waits only ahead of a waiter: refused at once behind its own level or an empty queue", () => {
    const limiter = make(new Fixed.Fixed(1), { maxQueue: 2 })
    // a free permit: over quota takes it like any other work
    take(limiter)
    // full, nobody waiting: over-quota work would wait for nothing but the next permit
    expect(limiter.tryAcquire(CRITICAL, 0, undefined, true)).toBe("limit")
    expect(limiter.tryAcquire(CRITICAL, 0, undefined)).toBe("wait")
    // behind work of its own level (within quota or over it) or more critical work: refused
    limiter.wait(CRITICAL, "within")
    expect(limiter.tryAcquire(CRITICAL, 0, undefined, true)).toBe("limit")
    expect(limiter.tryAcquire(SHEDDABLE_PLUS, 0, undefined, true)).toBe("limit")
    // ahead of less critical work it waits (and displaces it from a full queue)
    limiter.wait(SHEDDABLE, "less critical")
    expect(limiter.tryAcquire(CRITICAL, 0, undefined, true)).toBe("wait")
    expect(limiter.tryAcquire(SHEDDABLE_PLUS, 0, undefined, true)).toBe("wait")
    expect(limiter.tryAcquire(SHEDDABLE, 0, undefined, true)).toBe("limit")
    limiter.wait(CRITICAL, "over", true)
    expect(limiter.displaced).toEqual(["less critical"])
    // never with maxQueue 0
    const never = make(new Fixed.Fixed(1), { maxQueue: 0 })
    take(never)
    expect(never.tryAcquire(CRITICAL_PLUS, 0, undefined, true)).toBe("limit")
  })

  it("grants while inFlight < limit, then asks to wait; never queues with maxQueue 0", () => {
    const limiter = make(new Fixed.Fixed(2))
    const a = take(limiter)
    take(limiter, SHEDDABLE)
    expect(limiter.tryAcquire(CRITICAL, 0, undefined)).toBe("wait")
    expect(limiter.inFlight).toBe(2)
    expect(limiter.inFlightAt(CRITICAL)).toBe(1)
    expect(limiter.inFlightAt(SHEDDABLE)).toBe(1)
    expect([a.id, limiter.nextId]).toEqual([0, 2])
    const never = make(new Fixed.Fixed(1), { maxQueue: 0 })
    take(never)
    expect(never.tryAcquire(CRITICAL, 0, undefined)).toBe("limit")
  })

  it("nobody jumps the queue: with a waiter, a free permit goes to the waiter", () => {
    const limit = settable(1)
    const limiter = make(limit)
    const held = take(limiter)
    limiter.wait(CRITICAL, "w")
    limit.limit = 2
    expect(limiter.tryAcquire(CRITICAL, 0, undefined)).toBe("wait")
    limiter.release(held, "success", 5, undefined)
    expect(limiter.granted).toEqual(["w"])
  })

  it("serves more critical levels first, FIFO within a level", () => {
    const limiter = make(new Fixed.Fixed(1))
    let held = take(limiter)
    const waiters = [
      limiter.wait(SHEDDABLE, "s1")!,
      limiter.wait(CRITICAL, "c1")!,
      limiter.wait(CRITICAL, "c2")!,
      limiter.wait(CRITICAL_PLUS, "p1")!
    ]
    while (limiter.queued > 0) {
      limiter.release(held, "success", 0, undefined)
      held = waiters.find((w) => w.name === limiter.granted.at(-1))!.permit!
    }
    expect(limiter.granted).toEqual(["p1", "c1", "c2", "s1"])
  })

  it("LIFO serves the newest waiter of a level first", () => {
    const limiter = make(new Fixed.Fixed(1), { order: "lifo" })
    const held = take(limiter)
    const waiters = ["a", "b", "c"].map((name) => limiter.wait(CRITICAL, name)!)
    limiter.release(held, "success", 0, undefined)
    limiter.release(waiters[2]!.permit!, "success", 0, undefined)
    limiter.release(waiters[1]!.permit!, "success", 0, undefined)
    expect(limiter.granted).toEqual(["c", "b", "a"])
  })

  it("a full queue displaces the least critical, newest waiter (FIFO) or oldest (LIFO)", () => {
    for (const [order, victim] of [
      ["fifo", "s2"],
      ["lifo", "s1"]
    ] as const) {
      const limiter = make(new Fixed.Fixed(1), { maxQueue: 3, order })
      take(limiter)
      limiter.wait(SHEDDABLE_PLUS, "sp")
      const s1 = limiter.wait(SHEDDABLE, "s1")!
      const s2 = limiter.wait(SHEDDABLE, "s2")!
      expect(limiter.wait(CRITICAL, "c")).toBeDefined()
      expect(limiter.displaced).toEqual([victim])
      expect((victim === "s1" ? s1 : s2).state).toBe(Limiter.REJECTED)
      expect(limiter.queued).toBe(3)
      expect(limiter.queuedAt(SHEDDABLE)).toBe(1)
    }
  })

  it("queue-full: nothing less critical to displace refuses the newcomer", () => {
    const limiter = make(new Fixed.Fixed(1), { maxQueue: 2 })
    take(limiter)
    limiter.wait(CRITICAL, "c1")
    limiter.wait(SHEDDABLE, "s1")
    expect(limiter.wait(SHEDDABLE, "s2")).toBeUndefined()
    expect(limiter.wait(CRITICAL, "c2")).toBeDefined()
    expect(limiter.displaced).toEqual(["s1"])
    expect(limiter.wait(CRITICAL, "c3")).toBeUndefined()
    expect(limiter.displaced).toEqual(["s1"])
    expect(limiter.queued).toBe(2)
  })

  it("a level below its guaranteed share is served before more critical levels", () => {
    const limiter = make(new Fixed.Fixed(10), { partitions: { CRITICAL: 0.5, SHEDDABLE: 0.3 } })
    const held: Array<Limiter.Permit> = []
    for (let i = 0; i < 10; i++) held.push(take(limiter, CRITICAL))
    limiter.wait(CRITICAL, "c")
    limiter.wait(SHEDDABLE, "s1")
    limiter.wait(SHEDDABLE, "s2")
    limiter.wait(SHEDDABLE, "s3")
    limiter.wait(SHEDDABLE, "s4")
    for (let i = 0; i < 4; i++) limiter.release(held.pop()!, "success", 0, undefined)
    // SHEDDABLE holds 0, 1, 2 of 10 (below 3); at 3 the criticality order is back.
    expect(limiter.granted).toEqual(["s1", "s2", "s3", "c"])
  })

  it("shares are exact for a whole limit: 7 < 0.07 × 100 is false", () => {
    expect(Limiter.belowShare(7, Ratio.make(0.07), 100)).toBe(false)
    expect(Limiter.belowShare(6, Ratio.make(0.07), 100)).toBe(true)
    expect(Limiter.belowShare(1, Ratio.make(0.5), 2.5)).toBe(true)
    expect(Limiter.belowShare(2, Ratio.make(0.5), 2.5)).toBe(false)
  })

  it("feeds one sample per permit, with rtt and departure marks; an unused permit gives none", () => {
    const samples: Array<Limit.Sample> = []
    const limit: Limit.Limit = {
      name: "probe",
      limit: 1,
      onSample: (sample) => (samples.push({ ...sample }), 1),
      onDeparture: (departure) => departure.id * 10 + departure.inFlight
    }
    const limiter = make(limit)
    const a = limiter.tryAcquire(CRITICAL, 100, undefined) as Limiter.Permit
    const w = limiter.wait(CRITICAL, "w")!
    expect(limiter.release(a, "dropped", 130, undefined)).toBe(1)
    expect(samples).toEqual([
      { id: 0, nextId: 1, outcome: "dropped", rtt: 30, inFlight: 1, now: 130, departedAt: 100, mark: 1 }
    ])
    expect(w.permit).toMatchObject({ id: 1, start: 130, queued: true, mark: 11 })
    limiter.releaseUnused(w.permit!, 140, undefined)
    expect(samples).toHaveLength(1)
    expect(limiter.inFlight).toBe(0)
  })

  it("a waiter that leaves is unlinked and never granted", () => {
    const limiter = make(new Fixed.Fixed(1))
    const held = take(limiter)
    const a = limiter.wait(CRITICAL, "a")!
    limiter.wait(CRITICAL, "b")
    limiter.leave(a)
    expect(a.state).toBe(Limiter.DONE)
    limiter.release(held, "success", 0, undefined)
    expect(limiter.granted).toEqual(["b"])
    expect(limiter.queued).toBe(0)
  })

  it("needsClock: not for a time-blind limit with nobody waiting", () => {
    expect(make(settable(1)).needsClock).toBe(true)
    const blind = make(new Fixed.Fixed(1))
    expect(blind.needsClock).toBe(false)
    take(blind)
    blind.wait(CRITICAL, "w")
    expect(blind.needsClock).toBe(true)
  })

  it("property: permits in flight never exceed the limit; counts stay consistent; refusal agrees", () => {
    const op = fc.oneof(
      fc.record({
        t: fc.constant("arrive" as const),
        level: fc.integer({ min: 0, max: 3 }),
        over: fc.boolean()
      }),
      fc.record({ t: fc.constant("release" as const), i: fc.nat(), unused: fc.boolean() }),
      fc.record({ t: fc.constant("leave" as const), i: fc.nat() }),
      fc.record({ t: fc.constant("limit" as const), limit: fc.integer({ min: 1, max: 6 }) })
    )
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 5 }),
        fc.integer({ min: 0, max: 4 }),
        fc.constantFrom("fifo" as const, "lifo" as const),
        fc.boolean(),
        fc.array(op, { maxLength: 80 }),
        (initial, maxQueue, order, partitioned, ops) => {
          const limit = settable(initial)
          const limiter = make(limit, {
            maxQueue,
            order,
            partitions: partitioned ? { CRITICAL_PLUS: 0.25, SHEDDABLE: 0.25 } : undefined
          })
          const held: Array<Limiter.Permit> = []
          const waiting: Array<Named> = []
          let n = 0
          const collect = () => {
            for (const w of waiting.splice(0)) {
              if (w.state === Limiter.GRANTED) {
                w.state = Limiter.DONE
                held.push(w.permit!)
              } else if (w.state === Limiter.QUEUED) waiting.push(w)
            }
          }
          for (const o of ops) {
            const before = limiter.inFlight
            if (o.t === "arrive") {
              // `refusal` answers, without changing anything, what the next two steps refuse.
              const refusal = limiter.refusal(o.level, o.over)
              const answer = limiter.tryAcquire(o.level, 0, undefined, o.over)
              if (typeof answer !== "string") {
                expect(refusal).toBeUndefined()
                held.push(answer)
              } else if (answer === "wait") {
                const w = limiter.wait(o.level, `w${n++}`, o.over)
                expect(refusal).toBe(w === undefined ? "queue-full" : undefined)
                if (w !== undefined) waiting.push(w)
              } else {
                expect(refusal).toBe("limit")
                expect(maxQueue === 0 || o.over).toBe(true)
              }
            } else if (o.t === "release" && held.length > 0) {
              const [permit] = held.splice(o.i % held.length, 1)
              if (o.unused) limiter.releaseUnused(permit!, 0, undefined)
              else limiter.release(permit!, "success", 0, undefined)
            } else if (o.t === "leave" && waiting.length > 0) {
              const w = waiting[o.i % waiting.length]!
              if (w.state === Limiter.QUEUED) limiter.leave(w)
            } else if (o.t === "limit") {
              limit.limit = o.limit
            }
            collect()
            // Grants only ever happen below the limit; a lowered limit is not enforced by revoking.
            if (limiter.inFlight > before) expect(limiter.inFlight).toBeLessThanOrEqual(limit.limit)
            expect(limiter.inFlight).toBe(held.length)
            expect(limiter.queued).toBe(waiting.length)
            expect(limiter.queued).toBeLessThanOrEqual(maxQueue)
            const byLevel = [0, 1, 2, 3].map((l) => limiter.inFlightAt(l) + limiter.queuedAt(l))
            expect(byLevel.reduce((a, b) => a + b, 0)).toBe(held.length + waiting.length)
            // Work conserving: after a release nobody waits while a permit is free.
            if (o.t === "release" && limiter.queued > 0)
              expect(limiter.inFlight).toBeGreaterThanOrEqual(limit.limit)
          }
        }
      )
    )
  })
})

describe("Limiter options", () => {
  const fields = (result: { ok: boolean; issues?: ReadonlyArray<{ path: Array<string> }> }) =>
    result.ok ? [] : result.issues!.map((i) => i.path[0])

  it('the documented defaults: 1000 waiters, FIFO, key "default" or 1024 keys', () => {
    expect(Limiter.configure({})).toEqual({
      ok: true,
      value: { key: "default", maxQueue: 1000, order: "fifo" }
    })
    expect(Limiter.configureService({ order: "lifo", maxQueue: 0 })).toEqual({
      ok: true,
      value: { maxKeys: 1024, maxQueue: 0, order: "lifo" }
    })
  })

  it("bad fields are named; each form checks only its own fields", () => {
    const cases: Array<[object, string]> = [
      [{ maxQueue: -1 }, "maxQueue"],
      [{ maxQueue: 1.5 }, "maxQueue"],
      [{ order: "random" }, "order"],
      [{ partitions: { CRITICAL: 0.8, SHEDDABLE: 0.5 } }, "partitions"],
      [{ partitions: { CRITICAL: 1.5 } }, "partitions"],
      [{ algorithm: 3 }, "algorithm"],
      [{ isDrop: "yes" }, "isDrop"]
    ]
    for (const [input, field] of cases) {
      expect(fields(Limiter.configure(input))).toEqual([field])
      expect(fields(Limiter.configureService(input))).toEqual([field])
    }
    expect(fields(Limiter.configureService({ maxKeys: 0 }))).toEqual(["maxKeys"])
    expect(fields(Limiter.configure({ key: 3 }))).toEqual(["key"])
    // Each form's own keys only: another form's key is not an option of this one.
    expect(Limiter.configure({ maxKeys: 0 })).toEqual({
      ok: false,
      issues: [{ path: ["maxKeys"], message: "is not an option" }]
    })
    expect(Limiter.configureService({ key: "a" })).toEqual({
      ok: false,
      issues: [{ path: ["key"], message: "is not an option" }]
    })
  })

  it("guaranteed shares: ratios by level that add up to at most 1, exactly", () => {
    expect(Limiter.partitionsCheck({ CRITICAL_PLUS: 0.33, CRITICAL: 0.56, SHEDDABLE: 0.11 })).toBeUndefined()
    expect(Limiter.partitionsCheck({ CRITICAL: undefined })).toBeUndefined()
    expect(Limiter.partitionsCheck({ CRITICAL: 1.5 })).toBe("CRITICAL: expected a ratio in [0, 1], got 1.5")
    expect(Limiter.partitionsCheck({ CRITICAL: 0.8, SHEDDABLE: 0.5 })).toBe(
      "guaranteed shares must add up to at most 1, got 0 + 0.8 + 0 + 0.5"
    )
    expect(Limiter.partitionsCheck(0.5)).toMatch(/shares by criticality/)
  })

  it("a limiter is idle with nothing in flight and nobody waiting; counts read by level name", () => {
    const limiter = make(new Fixed.Fixed(1))
    expect(limiter.idle).toBe(true)
    expect(limiter.limit).toBe(1)
    const permit = take(limiter)
    expect(limiter.idle).toBe(false)
    const waiter = limiter.wait(CRITICAL, "w")!
    expect([
      limiter.inFlightOf("CRITICAL"),
      limiter.queuedOf("CRITICAL"),
      limiter.queuedOf("SHEDDABLE")
    ]).toEqual([1, 1, 0])
    limiter.release(permit, "success", 1, undefined)
    expect(limiter.idle).toBe(false)
    limiter.release(waiter.permit!, "success", 2, undefined)
    expect(limiter.idle).toBe(true)
  })
})

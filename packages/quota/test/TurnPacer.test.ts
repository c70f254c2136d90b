import { Quota, QuotaConfig, QuotaStore } from "@sluice/quota"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Layer } from "effect"
import * as TurnPacer from "../src/internal/turnPacer.js"

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve))

describe("TurnPacer", () => {
  it("runs at most perTurn callbacks per event-loop turn, in order, and all of them", async () => {
    const pace = TurnPacer.make(4)
    const ran: Array<number> = []
    for (let i = 0; i < 10; i++) pace(() => ran.push(i))
    expect(ran).toEqual([0, 1, 2, 3])
    await nextTurn()
    expect(ran).toEqual([0, 1, 2, 3, 4, 5, 6, 7])
    await nextTurn()
    expect(ran).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9])
    // a later turn has its own budget
    await nextTurn()
    await nextTurn()
    for (let i = 10; i < 15; i++) pace(() => ran.push(i))
    expect(ran.length).toBe(14)
    await nextTurn()
    expect(ran.length).toBe(15)
  })

  it("keeps the order when callbacks come while others wait", async () => {
    const pace = TurnPacer.make(2)
    const ran: Array<number> = []
    for (let i = 0; i < 5; i++) pace(() => ran.push(i))
    await nextTurn()
    // 4 still waits: 5 goes after it even though this turn's budget is not spent
    pace(() => ran.push(5))
    for (let i = 0; i < 3; i++) await nextTurn()
    expect(ran).toEqual([0, 1, 2, 3, 4, 5])
  })
})

describe("a store that asks for paced resumptions (resumesPerTurn)", () => {
  it.live("decides every check from the store, resuming at most that many per turn", () =>
    Effect.gen(function* () {
      const memory = yield* QuotaStore.makeMemory()
      const pending: Array<() => void> = []
      const store: QuotaStore.Store = {
        name: "batched",
        remote: true,
        ordered: true,
        resumesPerTurn: 4,
        check: () => Effect.never,
        checkCallback: (client, compiled, cost, callback) => {
          pending.push(() => callback(undefined, memory.checkUnsafe(client, compiled, cost)))
        },
        adjust: () => Effect.void,
        block: () => Effect.void,
        reset: () => Effect.void
      }
      const layer = Quota.layer({ mode: "fail-closed", deadline: "5 seconds" }).pipe(
        Layer.provide(Layer.succeed(QuotaStore.QuotaStore, store)),
        Layer.provide(
          QuotaConfig.layer({
            default: { tiers: [{ name: "count", algorithm: "sliding-window", limit: 100, period: "1 hour" }] }
          })
        )
      )
      yield* Effect.gen(function* () {
        const quota = yield* Quota.Quota
        const fibers = yield* Effect.forEach(Array.from({ length: 12 }), () =>
          Effect.forkChild(quota.check("acme"))
        )
        while (pending.length < 12) yield* Effect.promise(nextTurn)
        expect(fibers.some((f) => f.pollUnsafe() !== undefined)).toBe(false)
        // one batch of answers, as one socket read brings them
        for (const answer of pending.splice(0)) answer()
        // how many checks have ended, turn by turn (none before the answers)
        const ended: Array<number> = [0]
        yield* Effect.promise(async () => {
          for (let turn = 0; turn < 50; turn++) {
            const n = fibers.filter((f) => f.pollUnsafe() !== undefined).length
            ended.push(n)
            if (n === 12) return
            await nextTurn()
          }
        })
        expect(ended.at(-1)).toBe(12)
        for (let i = 1; i < ended.length; i++) expect(ended[i]! - ended[i - 1]!).toBeLessThanOrEqual(4)
        const decisions = yield* Effect.forEach(fibers, Fiber.join)
        expect(decisions.map((d) => d.source)).toEqual(Array(12).fill("store"))
        expect(decisions.every((d) => d.allowed)).toBe(true)
      }).pipe(Effect.provide(layer))
    })
  )
})

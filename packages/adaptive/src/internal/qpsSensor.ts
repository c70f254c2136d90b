import { Options } from "@sluice/core"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type * as Q from "../QpsSensor.js"
import { bindMethods } from "./bind.js"

/** @internal */
export const MemorySensorOptions = Schema.Struct({
  window: Schema.optionalWith(Options.PositiveInt, { default: () => 2 })
})

/**
 * Per-second counts, shared by every sensor made from it. Seconds older than
 * `retainSeconds` are dropped on write.
 *
 * @internal
 */
export class MemoryStoreImpl implements Q.MemoryStore {
  protected readonly bound = bindMethods(this, ["unsafeIncrement", "unsafeSum"])
  private readonly counts = new Map<number, number>()
  constructor(readonly retainSeconds = 120) {}
  unsafeIncrement(second: number, n: number): void {
    this.counts.set(second, (this.counts.get(second) ?? 0) + n)
    if (this.counts.size > this.retainSeconds) {
      for (const key of this.counts.keys()) {
        if (key <= second - this.retainSeconds) this.counts.delete(key)
      }
    }
  }
  unsafeSum(fromSecond: number, toSecond: number): number {
    let sum = 0
    for (let s = fromSecond; s <= toSecond; s++) sum += this.counts.get(s) ?? 0
    return sum
  }
}

/**
 * Which complete seconds a reading at `nowMillis` averages: the last `window`
 * seconds that ended at least `settleMillis` ago, but none before the sensor
 * started (`startMillis`), so a fresh sensor does not report a falsely low rate.
 *
 * @internal
 */
export const readableSeconds = (
  nowMillis: number,
  startMillis: number,
  window: number,
  settleMillis: number
): readonly [from: number, to: number] | undefined => {
  const to = Math.floor((nowMillis - settleMillis) / 1000) - 1
  const firstFull = Math.ceil(startMillis / 1000)
  const from = Math.max(to - window + 1, firstFull)
  return to < from ? undefined : [from, to]
}

class MemorySensor implements Q.Service {
  protected readonly bound = bindMethods(this, ["unsafeRecord"])
  constructor(
    private readonly store: Q.MemoryStore,
    private readonly window: number,
    private readonly startMillis: number
  ) {}
  unsafeRecord(nowMillis: number, n: number): void {
    this.store.unsafeIncrement(Math.floor(nowMillis / 1000), n)
  }
  get measure(): Effect.Effect<Option.Option<Q.Reading>> {
    return Effect.map(Clock.currentTimeMillis, (now) => {
      const range = readableSeconds(now, this.startMillis, this.window, 0)
      if (range === undefined) return Option.none()
      const [from, to] = range
      return Option.some({ qps: this.store.unsafeSum(from, to) / (to - from + 1), at: now })
    })
  }
}

const decode = Options.decode(
  "QpsSensor",
  MemorySensorOptions as unknown as Schema.Schema<{ readonly window: number }, Q.MemorySensorOptions>
)

/** @internal */
export const makeMemoryStore = (retainSeconds?: number): Q.MemoryStore => new MemoryStoreImpl(retainSeconds)

/** @internal */
export const makeMemory = (
  options: Q.MemorySensorOptions & { readonly store?: Q.MemoryStore | undefined } = {}
): Effect.Effect<Q.Service, Options.InvalidOptions> =>
  Effect.gen(function* () {
    const { window } = yield* decode({ window: options.window })
    const now = yield* Clock.currentTimeMillis
    return new MemorySensor(options.store ?? new MemoryStoreImpl(window + 10), window, now)
  })

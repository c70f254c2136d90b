import type { Options } from "@sluice/core"
import * as Kernel from "@sluice/kernel/sample/QpsSensor"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type * as Q from "../QpsSensor.js"
import { options, Service, withDefault } from "./service.js"

/** @internal A sensor's `window` (complete seconds averaged), checked by the kernel. */
export const Window = withDefault(Schema.Number, Kernel.defaults.window)

const { decode } = options("QpsSensor", Schema.Struct({ window: Window }), Kernel.issues)

/** @internal */
export const makeMemoryStore = (retainSeconds?: number): Q.MemoryStore => {
  const counts = new Kernel.SecondCounts(retainSeconds)
  return { incrementUnsafe: counts.add, sumUnsafe: counts.sum }
}

class MemorySensor extends Service implements Q.Service {
  constructor(
    private readonly store: Q.MemoryStore,
    private readonly window: number,
    private readonly startMillis: number
  ) {
    super()
  }
  recordUnsafe(nowMillis: number, n: number): void {
    this.store.incrementUnsafe(Kernel.secondOf(nowMillis), n)
  }
  get measure(): Effect.Effect<Option.Option<Q.Reading>> {
    return Effect.map(Clock.currentTimeMillis, (now) =>
      Option.fromNullishOr(
        Kernel.read((from, to) => this.store.sumUnsafe(from, to), now, this.startMillis, this.window)
      )
    )
  }
}

/** @internal */
export const makeMemory = (
  options: Q.MemorySensorOptions & { readonly store?: Q.MemoryStore | undefined } = {}
): Effect.Effect<Q.Service, Options.InvalidOptions> =>
  Effect.gen(function* () {
    const { store, ...rest } = options
    const { window } = yield* decode(rest)
    const now = yield* Clock.currentTimeMillis
    return new MemorySensor(store ?? makeMemoryStore(window + 10), window, now)
  })

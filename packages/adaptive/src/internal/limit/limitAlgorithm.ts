import type { Options } from "@sluice/core"
import * as Fixed from "@sluice/kernel/limit/Fixed"
import type * as Effect from "effect/Effect"
import type * as LA from "../../limit/LimitAlgorithm.js"
import { bindMethods } from "../bind.js"
import { tryConstruct, validator } from "../options.js"

const checkFixed = validator("LimitAlgorithm.fixed", Fixed.configure)

/** @internal */
export const fixed = (limit: number): LA.LimitAlgorithm =>
  bindMethods(new Fixed.Fixed(checkFixed({ limit }).limit), ["onSample"])

/** The methods a limiter or a pacer may call unbound. */
const hooks = ["onSample", "onDeparture", "takeBurst", "onTimer"]

/**
 * @internal The constructors of one algorithm over its kernel class (`build`): `check` is the
 * kernel's validation, the result's methods are bound and `options` is the checked
 * configuration. `factory(options)` never throws when called unless `eager`: the options are
 * validated the first time the factory is used (the limiter calls it inside
 * `ConcurrencyLimiter.make` / `makeService` / `layer`, which turn the `InvalidOptions` it
 * throws into a typed failure).
 */
export const algorithm = <I, C, A extends LA.LimitAlgorithm>(
  check: (input: I) => C,
  build: (config: C) => LA.LimitAlgorithm,
  eager = false
) => {
  const make = (config: C): A => Object.assign(bindMethods(build(config), hooks), { options: config }) as any
  return {
    makeUnsafe: (options: I = {} as I): A => make(check(options)),
    make: (options: I = {} as I): Effect.Effect<A, Options.InvalidOptions> =>
      tryConstruct(() => make(check(options))),
    factory: (options: I = {} as I): LA.Factory => {
      let config = eager ? check(options) : undefined
      return () => make((config ??= check(options)))
    }
  }
}

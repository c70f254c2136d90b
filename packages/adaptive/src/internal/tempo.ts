import { Options } from "@sluice/core"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as Kernel from "@sluice/kernel/limit/Tempo"
import type * as LA from "../LimitAlgorithm.js"
import type * as T from "../Tempo.js"
import { OpenRatio, PositiveOrInfinity } from "./limitAlgorithm.js"
import { bindMethods } from "./bind.js"

/** @internal */
export const TempoOptions = Schema.Struct({
  initial: Schema.optionalWith(Options.PositiveNumber, { default: () => 20 }),
  minLimit: Schema.optionalWith(Options.PositiveNumber, { default: () => 1 }),
  maxLimit: Schema.optionalWith(PositiveOrInfinity, { default: () => Infinity }),
  startupGain: Schema.optionalWith(Options.PositiveNumber, { default: () => 1.25 }),
  cut: Schema.optionalWith(OpenRatio, { default: () => 0.6 }),
  probeSize: Schema.optionalWith(Options.PositiveInt, { default: () => 2 }),
  probeEvery: Schema.optionalWith(Options.PositiveNumber, { default: () => 8 }),
  firstProbe: Schema.optionalWith(Options.PositiveNumber, { default: () => 5 }),
  probeDeadline: Schema.optionalWith(Options.PositiveNumber, { default: () => 1.5 }),
  headroom: Schema.optionalWith(Options.PositiveNumber, { default: () => 1.25 })
}).pipe(Schema.filter(Kernel.issues))

const module = "Tempo"
const decodeSync = Options.decodeSync(module, TempoOptions)
const decodeEffect = Options.decode(module, TempoOptions)

class TempoImpl extends Kernel.Tempo implements T.Tempo {
  protected readonly bound = bindMethods(this, ["onDeparture", "takeBurst", "onTimer", "onSample"])
  constructor(readonly options: T.TempoConfig) {
    super(options)
  }
}

/** @internal */
export const unsafeMake = (options: T.TempoOptions = {}): T.Tempo => new TempoImpl(decodeSync(options))

/** @internal */
export const make = (options: T.TempoOptions = {}): Effect.Effect<T.Tempo, Options.InvalidOptions> =>
  Effect.map(decodeEffect(options), (config) => new TempoImpl(config))

/** @internal */
export const factory = (options: T.TempoOptions = {}): LA.Factory => {
  const config = decodeSync(options)
  return () => new TempoImpl(config)
}

import { Criticality, Options } from "@sluice/core"
import * as Meters from "@sluice/core/shared/Meters"
import type * as Field from "@sluice/kernel/options/Field"
import type * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import { pipeArguments, type Pipeable } from "effect/Pipeable"
import * as Schema from "effect/Schema"
import * as SchemaTransformation from "effect/SchemaTransformation"
import { bindMethods } from "./bind.js"

// The wiring the policy bindings share: options checked by their kernel rule, metric series by
// criticality level, and service objects whose methods work unbound.

/** @internal A duration option in milliseconds, the unit the kernel checks and uses. */
export const Millis: Schema.Codec<number, Duration.Input> = Options.DurationInput.pipe(
  Schema.decodeTo(
    Schema.Number,
    SchemaTransformation.transform({ decode: Duration.toMillis, encode: Duration.millis })
  )
).annotate({ identifier: "DurationInput" })

/** @internal `schema` as an optional field that decodes a missing (or `undefined`) value to `value`. */
export const withDefault = <S extends Schema.Top>(schema: S, value: S["Type"]) =>
  schema.pipe(Schema.withDecodingDefaultType(Effect.succeed(value)))

/**
 * @internal Decoders of a policy's options: `schema` gives the types (durations in ms), the
 * kernel's `issues` the ranges; a problem is an `InvalidOptions` naming the field.
 */
export const options = <A, I>(
  module: string,
  schema: Schema.Codec<A, I>,
  issues: (options: NoInfer<A>) => ReadonlyArray<Field.Issue>
) => {
  // named, so that a report shows the module rather than the whole type spelled out
  const identifier = `${module} options`
  const checked = schema.annotate({ identifier }).check(
    Schema.makeFilter<A>((o) => issues(o).map(({ message, path }) => ({ path, issue: message })), {
      identifier
    })
  )
  return { decode: Options.decode(module, checked), decodeSync: Options.decodeSync(module, checked) }
}

/**
 * @internal The context of a policy made outside any fiber (an `makeUnsafe`): its metrics go
 * to the default registry. A policy made by an Effect keeps the context it was made in, and
 * updates its metrics there (its `MetricRegistry`, its `CurrentMetricAttributes`) from the
 * synchronous bookkeeping that has no fiber at hand.
 */
export const noContext: Context.Context<never> = Context.empty()

/** @internal One series per criticality level, each with `base` and its level's attribute. */
export const byLevel = <M>(
  family: Meters.Family<M>,
  base: Metric.Metric.AttributeSet
): Record<Criticality.Criticality, M> => {
  const series = {} as Record<Criticality.Criticality, M>
  for (const level of Criticality.levels) series[level] = family.of({ ...base, criticality: level })
  return series
}

/**
 * @internal A family's series per criticality level, each bound to `context` (`Meters.bind`): for
 * what a policy counts on every call, in the context it was made in.
 */
export const boundByLevel = <I>(
  family: Meters.Family<Metric.Metric<I, unknown>>,
  base: Metric.Metric.AttributeSet,
  context: Context.Context<never>
): Record<Criticality.Criticality, Meters.Bound<I>> => {
  const series = byLevel(family, base)
  const bound = {} as Record<Criticality.Criticality, Meters.Bound<I>>
  for (const level of Criticality.levels) bound[level] = Meters.bind(series[level], context)
  return bound
}

/** @internal The time an `unsafe…` peek is given, else the reading of `clock`. */
export const peekAt =
  (clock: Clock.Clock) =>
  (nowMillis?: number): number =>
    nowMillis ?? clock.currentTimeMillisUnsafe()

/**
 * @internal A service object: every method (`pipe` included) is bound to the instance once,
 * at construction, so the service's functions work when passed unbound.
 */
export class Service implements Pipeable {
  constructor() {
    const names: Array<string> = []
    let proto: object = Object.getPrototypeOf(this)
    while (proto !== Object.prototype) {
      for (const [name, property] of Object.entries(Object.getOwnPropertyDescriptors(proto))) {
        if (name !== "constructor" && typeof property.value === "function") names.push(name)
      }
      proto = Object.getPrototypeOf(proto)
    }
    bindMethods(this, names)
  }
  pipe() {
    // eslint-disable-next-line prefer-rest-params
    return pipeArguments(this, arguments)
  }
}

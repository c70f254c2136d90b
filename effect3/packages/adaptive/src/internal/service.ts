import { Criticality, Options } from "@sluice/core"
import type * as Field from "@sluice/kernel/options/Field"
import type * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Metric from "effect/Metric"
import * as MetricLabel from "effect/MetricLabel"
import { pipeArguments, type Pipeable } from "effect/Pipeable"
import * as Schema from "effect/Schema"
import { bindMethods } from "./bind.js"

// The wiring the policy bindings share: options checked by their kernel rule, metric
// tags, and service objects whose methods work unbound.

/** @internal A duration option in milliseconds, the unit the kernel checks and uses. */
export const Millis: Schema.Schema<number, Duration.DurationInput> = Schema.transform(
  Options.DurationInput,
  Schema.Number,
  { strict: true, decode: Duration.toMillis, encode: Duration.millis }
).annotations({ identifier: "DurationInput" })

/**
 * @internal Decoders of a policy's options: `schema` gives the types (durations in ms), the
 * kernel's `issues` the ranges; a problem is an `InvalidOptions` naming each field.
 */
export const options = <A, I>(
  module: string,
  schema: Schema.Schema<A, I>,
  issues: (options: A) => ReadonlyArray<Field.Issue>
) => {
  // named, so that a report shows the module rather than the whole type spelled out
  const identifier = `${module} options`
  const checked = schema.annotations({ identifier }).pipe(Schema.filter((o) => issues(o), { identifier }))
  return { decode: Options.decode(module, checked), decodeSync: Options.decodeSync(module, checked) }
}

/** @internal An incremental counter. */
export const counter = (name: string, description: string) =>
  Metric.counter(name, { description, incremental: true })

/** @internal A gauge. */
export const gauge = (name: string, description: string) => Metric.gauge(name, { description })

/** @internal A policy's metric tags: `[name, value]` pairs. */
export const tags = (...pairs: ReadonlyArray<readonly [string, string]>): Array<MetricLabel.MetricLabel> =>
  pairs.map(([key, value]) => MetricLabel.make(key, value))

/** @internal `base` with each criticality level's tag added. */
export const levelTags = (
  base: ReadonlyArray<MetricLabel.MetricLabel>
): Record<Criticality.Criticality, ReadonlyArray<MetricLabel.MetricLabel>> => {
  const byLevel = {} as Record<Criticality.Criticality, ReadonlyArray<MetricLabel.MetricLabel>>
  for (const level of Criticality.levels) byLevel[level] = [...base, MetricLabel.make("criticality", level)]
  return byLevel
}

/** @internal The time an `unsafe…` peek is given, else the reading of `clock`. */
export const peekAt =
  (clock: Clock.Clock) =>
  (nowMillis?: number): number =>
    nowMillis ?? clock.unsafeCurrentTimeMillis()

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

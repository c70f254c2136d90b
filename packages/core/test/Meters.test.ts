import * as Meters from "@sluice/core/shared/Meters"
import { describe, expect, it, vi } from "@effect/vitest"
import { Context, Metric } from "effect"

const contextWith = (registry: Metric.MetricRegistry, attributes: Metric.Metric.AttributeSet = {}) =>
  Context.make(Metric.MetricRegistry, registry).pipe(Context.add(Metric.CurrentMetricAttributes, attributes))

const countOf = (metric: Metric.Counter<number>, context: Context.Context<never>): number =>
  Number(metric.valueUnsafe(context).count)

describe("Meters.bind", () => {
  it("updates the series updateUnsafe updates, with the context's attributes", () => {
    const registry: Metric.MetricRegistry = new Map()
    const context = contextWith(registry, { service: "a" })
    const family = Meters.counter("test_bound_requests", "requests")
    const series = family.of({ key: "k" })
    const bound = Meters.bind(series, context)
    bound.update(1)
    bound.update(2)
    series.updateUnsafe(4, context)
    bound.update(1)
    expect(countOf(series, context)).toBe(8)
    // One series in the registry, keyed by both attribute sets.
    const entries = Metric.snapshotUnsafe(context)
    expect(entries).toHaveLength(1)
    expect(entries[0]!.attributes).toEqual({ key: "k", service: "a" })
    // Another context's attributes are another series, untouched.
    expect(countOf(series, contextWith(registry, { service: "b" }))).toBe(0)
  })

  it("sees the series removed and counts anew, as updateUnsafe does", () => {
    const registry: Metric.MetricRegistry = new Map()
    const context = contextWith(registry)
    const series = Meters.counter("test_bound_removed", "removed").of({ key: "k" })
    const bound = Meters.bind(series, context)
    bound.update(3)
    bound.update(3)
    Metric.removeUnsafe(series, context)
    expect(Metric.snapshotUnsafe(context)).toHaveLength(0)
    bound.update(1)
    expect(countOf(series, context)).toBe(1)
    bound.update(1)
    expect(countOf(series, context)).toBe(2)
    registry.clear()
    bound.update(5)
    expect(countOf(series, context)).toBe(5)
  })

  it("tells series apart by name, description and attributes", () => {
    const registry: Metric.MetricRegistry = new Map()
    const context = contextWith(registry)
    const a = Meters.counter("test_bound_same", "one").of({ key: "a" })
    const b = Meters.counter("test_bound_same", "one").of({ key: "b" })
    const c = Meters.counter("test_bound_same", "other description").of({ key: "a" })
    b.updateUnsafe(10, context)
    c.updateUnsafe(100, context)
    const bound = Meters.bind(a, context)
    bound.update(1)
    bound.update(1)
    expect([countOf(a, context), countOf(b, context), countOf(c, context)]).toEqual([2, 10, 100])
  })

  it("finds the registry's entry at once: updateUnsafe only for the first update and after a removal", () => {
    const registry: Metric.MetricRegistry = new Map()
    const context = contextWith(registry, { zone: "z", app: "x" })
    const series = Meters.counter("test_bound_found", "found").of({ key: "k", a: "1" })
    const spy = vi.spyOn(series, "updateUnsafe")
    const bound = Meters.bind(series, context)
    for (let i = 0; i < 5; i++) bound.update(1)
    expect(spy).toHaveBeenCalledTimes(1)
    Metric.removeUnsafe(series, context)
    for (let i = 0; i < 5; i++) bound.update(1)
    expect(spy).toHaveBeenCalledTimes(2)
    expect(countOf(series, context)).toBe(5)
  })

  it("updates gauges", () => {
    const registry: Metric.MetricRegistry = new Map()
    const context = contextWith(registry)
    const gauge = Meters.gauge("test_bound_gauge", "level").of({ key: "k" })
    const bound = Meters.bind(gauge, context)
    bound.update(3)
    bound.update(7)
    expect(gauge.valueUnsafe(context).value).toBe(7)
  })
})

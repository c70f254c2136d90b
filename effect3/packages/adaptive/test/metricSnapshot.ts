import { Effect, Metric } from "effect"

/** Reads a metric from the global registry by name and tags (whatever its description). */
export const metricValue = (name: string, tags: Record<string, string>) =>
  Effect.map(Metric.snapshot, (pairs) => {
    for (const pair of pairs) {
      if (pair.metricKey.name !== name) continue
      const labels = pair.metricKey.tags
      if (Object.entries(tags).every(([k, v]) => labels.some((l) => l.key === k && l.value === v))) {
        return pair.metricState as any
      }
    }
    return undefined
  })

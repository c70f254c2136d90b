import { Effect, Metric } from "effect"

/** Reads a metric from the registry in context by name and attributes (whatever its description). */
export const metricValue = (name: string, attributes: Record<string, string>) =>
  Effect.map(Metric.snapshot, (snapshots) => {
    for (const snapshot of snapshots) {
      if (snapshot.id !== name) continue
      const own = snapshot.attributes ?? {}
      if (Object.entries(attributes).every(([k, v]) => own[k] === v)) return snapshot.state as any
    }
    return undefined
  })

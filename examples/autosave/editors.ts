/**
 * The editor fleet both autosave modes share: one `AimdInterval` per editor,
 * preferring a save every 125 ms, stretching to at most 8 s under throttling
 * (×1.5 per throttled save, additive increase of the rate when clear).
 */
import { AimdInterval } from "@sluice/adaptive"
import { Duration, Effect, Random, Schedule } from "effect"

export const makeEditorIntervals = (count: number) =>
  Effect.all(
    Array.from({ length: count }, (_, i) =>
      AimdInterval.make({
        name: `editor-${i}`,
        min: "125 millis",
        max: "8 seconds",
        rateStep: 1.6,
        factor: 1.5
      })
    )
  )

/**
 * Each delay of `self` times a factor uniform in 0.95–1.05, drawn from Effect's `Random` (so a
 * seeded run repeats): enough to keep editors that started together from saving in step.
 * (`Schedule.jittered` draws from 0.8–1.2, which would blur the intervals this example shows.)
 */
export const jittered = <Output, Input, Error, Env>(
  self: Schedule.Schedule<Output, Input, Error, Env>
): Schedule.Schedule<Output, Input, Error, Env> =>
  Schedule.modifyDelay(self, ({ duration }) =>
    Effect.map(Random.next, (r) => Duration.millis(Duration.toMillis(duration) * (0.95 + 0.1 * r)))
  )

/**
 * The editor fleet both autosave modes share: one `AimdInterval` per editor,
 * preferring a save every 125 ms, stretching to at most 8 s under throttling
 * (×1.5 per throttled save, additive increase of the rate when clear).
 */
import { AimdInterval } from "@sluice/adaptive"
import { Effect } from "effect"

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

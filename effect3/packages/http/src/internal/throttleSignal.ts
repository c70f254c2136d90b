import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as PubSub from "effect/PubSub"
import * as Stream from "effect/Stream"
import type { Signal, ThrottleSignalService } from "../ThrottleSignal.js"

/** @internal */
export const make = (capacity: number): Effect.Effect<ThrottleSignalService> =>
  Effect.map(PubSub.sliding<Signal>(capacity), (pubsub) => {
    const latest = new Map<string, boolean>()
    const unsafePublish = (key: string, throttled: boolean): void => {
      latest.set(key, throttled)
      const signal = { key, throttled }
      // `unsafeOffer` refuses a signal a lagging subscriber has no room for (the new one would
      // be lost); the sliding strategy, run only then, drops that subscriber's oldest instead
      if (!pubsub.unsafeOffer(signal)) Effect.runSyncExit(PubSub.publish(pubsub, signal))
    }
    return {
      unsafePublish,
      publish: (key, throttled) => Effect.sync(() => unsafePublish(key, throttled)),
      subscribe: PubSub.subscribe(pubsub),
      changes: Stream.fromPubSub(pubsub),
      latest: (key) => Option.fromNullable(latest.get(key))
    }
  })

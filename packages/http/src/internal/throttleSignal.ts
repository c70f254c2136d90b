import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as PubSub from "effect/PubSub"
import * as EventHub from "@sluice/core/EventHub"
import * as Stream from "effect/Stream"
import type { Signal, ThrottleSignalService } from "../ThrottleSignal.js"

/** @internal */
export const make = (capacity: number): Effect.Effect<ThrottleSignalService> =>
  Effect.map(EventHub.make<Signal>(capacity), (pubsub) => {
    const latest = new Map<string, boolean>()
    const publishUnsafe = (key: string, throttled: boolean): void => {
      latest.set(key, throttled)
      EventHub.publish(pubsub, { key, throttled })
    }
    return {
      publishUnsafe,
      publish: (key, throttled) => Effect.sync(() => publishUnsafe(key, throttled)),
      subscribe: PubSub.subscribe(pubsub),
      changes: Stream.fromPubSub(pubsub),
      latest: (key) => Option.fromNullishOr(latest.get(key))
    }
  })

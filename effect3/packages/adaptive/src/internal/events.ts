import * as Effect from "effect/Effect"
import * as PubSub from "effect/PubSub"

/** @internal How many events a slow subscriber may fall behind before the oldest are dropped. */
export const EVENT_CAPACITY = 256

/**
 * @internal A bounded, sliding hub for a policy's events: publishing never blocks and never
 * fails (a subscriber that falls behind loses the oldest events). Building one is
 * synchronous, so synchronous constructors (`unsafeMake`, per-key limiters) can own one.
 */
export const makeHub = <A>(): PubSub.PubSub<A> => Effect.runSync(PubSub.sliding<A>(EVENT_CAPACITY))

/**
 * @internal Publishes synchronously. `unsafeOffer` alone refuses an event a lagging subscriber
 * has no room for (the NEW event is lost); the sliding strategy, run only then, drops that
 * subscriber's oldest instead. A hub shut down takes nothing (the exit is ignored).
 */
export const publish = <A>(hub: PubSub.PubSub<A>, event: NoInfer<A>): void => {
  if (!hub.unsafeOffer(event)) Effect.runSyncExit(PubSub.publish(hub, event))
}

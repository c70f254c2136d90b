/**
 * The hub behind a Sluice policy's `events` stream: a sliding `PubSub` that its synchronous
 * bookkeeping publishes to without blocking or failing, and where a subscriber that falls
 * `capacity` events behind loses its oldest events, never the newest.
 *
 * **Details**
 *
 * - {@link publish} is synchronous: a gate's `settle` or a store callback calls it outside
 *   any fiber.
 * - Each subscriber (e.g. a `Stream.fromPubSub` being run) has its own buffer of `capacity`
 *   events; nothing is kept for subscribers that are not there yet.
 *
 * **Gotchas**
 *
 * - `PubSub.publishUnsafe` alone refuses an event a lagging subscriber has no room for: on a
 *   sliding hub the NEW event is lost, not the oldest. {@link publish} then runs the sliding
 *   strategy (`PubSub.publish`, synchronously), which drops the oldest to make room.
 *
 * @example
 * ```ts
 * import * as EventHub from "@sluice/core/shared/EventHub"
 * import { Effect, PubSub } from "effect"
 *
 * const program = Effect.scoped(
 *   Effect.gen(function* () {
 *     const hub = EventHub.makeUnsafe<number>(2)
 *     const subscription = yield* PubSub.subscribe(hub)
 *     for (let i = 0; i < 5; i++) EventHub.publish(hub, i)
 *     return yield* PubSub.takeAll(subscription)
 *   })
 * )
 * // the subscriber kept the newest two
 * Effect.runPromise(program).then(console.log) // prints: [ 3, 4 ]
 * ```
 *
 * For Sluice's own packages (`@sluice/core/shared/*`): importable, but outside the semver contract.
 *
 * @since 1.0.0
 */
import * as Effect from "effect/Effect"
import * as PubSub from "effect/PubSub"

/**
 * How many events a subscriber may fall behind before it loses the oldest: 256.
 *
 * @since 1.0.0
 * @category constants
 */
export const DEFAULT_CAPACITY = 256

/**
 * A sliding hub of `capacity` events per subscriber (default {@link DEFAULT_CAPACITY}).
 *
 * @since 1.0.0
 * @category constructors
 */
export const make = <A>(capacity: number = DEFAULT_CAPACITY): Effect.Effect<PubSub.PubSub<A>> =>
  PubSub.sliding<A>(capacity)

/**
 * {@link make}, synchronously: for synchronous constructors (a per-key policy made on a key's
 * first use). Shut it down with `PubSub.shutdown` when its owner goes away, if anything may
 * still be subscribed.
 *
 * @since 1.0.0
 * @category constructors
 */
export const makeUnsafe = <A>(capacity: number = DEFAULT_CAPACITY): PubSub.PubSub<A> =>
  Effect.runSync(make<A>(capacity))

/**
 * Publishes an event, synchronously; a subscriber with no room left loses its oldest event.
 * After the hub is shut down, nothing.
 *
 * @since 1.0.0
 * @category publishing
 */
export const publish = <A>(hub: PubSub.PubSub<A>, event: NoInfer<A>): void => {
  if (!PubSub.publishUnsafe(hub, event) && !PubSub.isShutdownUnsafe(hub))
    Effect.runSync(PubSub.publish(hub, event))
}

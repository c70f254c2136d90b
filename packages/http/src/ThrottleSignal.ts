/**
 * Back-pressure heard from servers (`x-sluice-throttle`), published for periodic
 * work to follow.
 *
 * The Sluice client does not fail a request that carries the throttle flag: the
 * request succeeded. It publishes one {@link Signal} per response (throttled or
 * clear) here, keyed by host, and a controller such as `AimdInterval` subscribes
 * and stretches or shrinks its interval.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as PubSub from "effect/PubSub"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as EventHub from "@sluice/core/shared/EventHub"

/**
 * One response's verdict: the backend `key` (the host) asked to slow down or not.
 *
 * @since 0.1.0
 * @category models
 */
export interface Signal {
  readonly key: string
  readonly throttled: boolean
}

/**
 * @since 0.1.0
 * @category models
 */
export interface ThrottleSignalService {
  /** Publishes a signal (never blocks: the hub drops the oldest when full). */
  readonly publish: (key: string, throttled: boolean) => Effect.Effect<void>
  /** Synchronous {@link publish}, for the client's success path. */
  readonly publishUnsafe: (key: string, throttled: boolean) => void
  /** A subscription, valid for the scope. */
  readonly subscribe: Effect.Effect<PubSub.Subscription<Signal>, never, Scope.Scope>
  /** Every signal published from now on. */
  readonly changes: Stream.Stream<Signal>
  /** The last signal seen for a key. */
  readonly latest: (key: string) => Option.Option<boolean>
}

/**
 * The signal hub. Provide it (with {@link layer}) next to the Sluice client to
 * receive throttle signals; without it the client does not publish.
 *
 * @example
 * ```ts
 * // snippet: compile-only — needs the ThrottleSignal layer the app provides
 * import { ThrottleSignal } from "@sluice/http"
 * import { Effect, Stream } from "effect"
 *
 * const logSignals = Effect.gen(function* () {
 *   const hub = yield* ThrottleSignal.ThrottleSignal
 *   yield* hub.changes.pipe(Stream.runForEach((s) => Effect.log(s.key, s.throttled)), Effect.forkScoped)
 * })
 * ```
 * @since 0.1.0
 * @category tags
 */
export class ThrottleSignal extends Context.Service<ThrottleSignal, ThrottleSignalService>()(
  "@sluice/http/ThrottleSignal"
) {}

// The latest state per key beside the hub: a subscriber that joins late still reads where each host stands.
const makeService = (capacity: number): Effect.Effect<ThrottleSignalService> =>
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

/**
 * A hub that keeps the latest `capacity` signals per subscriber (default 1024).
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (
  options: { readonly capacity?: number | undefined } = {}
): Layer.Layer<ThrottleSignal> =>
  Layer.effect(ThrottleSignal, makeService(Math.max(1, Math.floor(options.capacity ?? 1024))))

/**
 * Follows the signals (optionally of one key) in a fiber that lives as long as
 * the scope: e.g. `(throttled) => aimd.signal(throttled)`.
 *
 * @example
 * ```ts
 * // snippet: compile-only — needs the ThrottleSignal layer the app provides
 * import { ThrottleSignal } from "@sluice/http"
 * import { Effect } from "effect"
 *
 * const follow = ThrottleSignal.follow((throttled) => Effect.log(`throttled=${throttled}`), { key: "localhost:8080" })
 * ```
 * @since 0.1.0
 * @category combinators
 */
export const follow = <X, E, R>(
  onSignal: (throttled: boolean, key: string) => Effect.Effect<X, E, R>,
  options: { readonly key?: string | undefined } = {}
): Effect.Effect<void, never, ThrottleSignal | Scope.Scope | R> =>
  Effect.flatMap(ThrottleSignal, (hub) =>
    // Subscribe before forking, so no signal published after `follow` returns is missed.
    Effect.flatMap(hub.subscribe, (subscription) =>
      Stream.fromSubscription(subscription).pipe(
        Stream.filter((s) => options.key === undefined || s.key === options.key),
        Stream.runForEach((s) => Effect.ignore(onSignal(s.throttled, s.key))),
        Effect.forkScoped,
        Effect.asVoid
      )
    )
  )

/**
 * Feeds the signals (optionally of one key) into an `AimdInterval`: a throttled
 * response stretches its interval, a clear one shrinks it.
 *
 * @example
 * ```ts
 * // snippet: compile-only — a fragment of a program, nothing to print
 * import { AimdInterval } from "@sluice/adaptive"
 * import { ThrottleSignal } from "@sluice/http"
 * import { Effect } from "effect"
 *
 * const autosave = Effect.gen(function* () {
 *   const aimd = yield* AimdInterval.make({ min: "2 seconds", max: "1 minute", step: "500 millis" })
 *   yield* ThrottleSignal.followAimd(aimd, { key: "docs.example.com" })
 *   // ... Effect.repeat(save, aimd.schedule)
 * })
 * ```
 * @since 0.1.0
 * @category combinators
 */
export const followAimd = (
  aimd: { readonly signal: (throttled: boolean) => Effect.Effect<unknown> },
  options: { readonly key?: string | undefined } = {}
): Effect.Effect<void, never, ThrottleSignal | Scope.Scope> =>
  follow((throttled) => aimd.signal(throttled), options)

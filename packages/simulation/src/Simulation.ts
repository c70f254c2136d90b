/**
 * The virtual-time simulation engine: run real policies, unchanged, against model
 * servers, and see what they do before production does.
 *
 * {@link run} executes any Effect program on a private scheduler and a virtual
 * `Clock`: `Effect.sleep`, `Schedule`s and everything built on them register timers
 * in a heap, and time jumps from one event to the next instead of passing, so a
 * simulated minute costs milliseconds of wall time. A seed makes `Random` (jitter)
 * reproducible, and a {@link Recorder} samples counters and gauges (such as a
 * congestion window) into a {@link TimeSeries} at a fixed virtual resolution.
 *
 * On top of the engine, {@link runScenario} drives an open-loop {@link Scenario}:
 * operations arrive at a fixed rate, each runs through a client (a strategy such as
 * `Retry.withRetry` over a `ConcurrencyLimiter`) that calls a {@link SlotServer} the
 * way a real client calls a backend: an Effect that fails with `Errors.Overloaded`
 * when rejected. The report has attempts, failed attempts, efficiency, completion
 * time, the computed optimal completion time and Jain's fairness index.
 *
 * **Details**
 *
 * - The program runs as a fiber of its own (`Effect.runForkWith` over the caller's
 *   context), with the engine's `Scheduler` (a FIFO the engine drains) and its
 *   `Clock.Clock`, `Random.Random` and {@link Recorder} provided. Every fiber it
 *   forks inherits them; the caller's own services stay visible.
 * - An instant is processed in two steps: every timer due then fires (a model
 *   server's own events change its state at once), queueing the fibers it wakes, and
 *   only then do the queued fibers run, in the order their timers were set. A
 *   {@link SlotServer} queues its answers the same way, so no caller acts on an
 *   instant before the server has seen all of it.
 * - `seed` draws the same numbers as the Effect 3 line's `Random.make(seed)`, so a
 *   run keeps the figures recorded for it there.
 * - The engine hands control back to the caller's runtime every 5000 instants
 *   (`onProgress` is called then), so a long run does not starve other fibers.
 *
 * **Gotchas**
 *
 * - Only Effect's `Clock` is virtual: `Date.now`, `setTimeout` and promises take real
 *   time. While a fiber waits on one, virtual time still jumps to the other fibers'
 *   timers; the engine waits in real time only when no timer is left.
 * - A fiber of the caller's runtime that completes something the program waits on
 *   (a `Deferred`, a `Queue`) resumes the program's fiber itself, outside the
 *   engine's scheduler, as Effect does; the program's later sleeps still wait for
 *   the engine.
 * - The run ends with the program: fibers it detached (`Effect.forkDetach`) and
 *   never joined are left suspended, their timers dropped.
 * - Spans are off inside a run (virtual spans cost more than the work they wrap);
 *   `tracing: true` turns them on.
 *
 * @since 0.1.0
 */
import type { Errors, Options } from "@sluice/core"
import type * as Context from "effect/Context"
import type * as Duration from "effect/Duration"
import type * as Effect from "effect/Effect"
import type * as Exit from "effect/Exit"
import type * as Scope from "effect/Scope"
import * as internal from "./internal/simulation.js"
import * as model from "./internal/simulationModel.js"

type InvalidOptions = Options.InvalidOptions

// ---------------------------------------------------------------------------
// Engine
// ---------------------------------------------------------------------------

/**
 * What a run recorded. `times[i]` is the start of bucket `i` (millis since the start
 * of the run); `counters[name][i]` is how many events were counted in bucket `i`;
 * `gauges[name][i]` is the gauge's value at the start of bucket `i` (`NaN` before
 * the gauge was registered).
 *
 * @since 0.1.0
 * @category models
 */
export interface TimeSeries {
  readonly startMillis: number
  readonly resolutionMillis: number
  readonly times: ReadonlyArray<number>
  readonly counters: Readonly<Record<string, ReadonlyArray<number>>>
  readonly gauges: Readonly<Record<string, ReadonlyArray<number>>>
}

/**
 * The recording service a simulated program finds in its context.
 * `counterUnsafe(name)` returns a cheap function that counts into the current bucket;
 * `gaugeUnsafe(name, read)` registers a synchronous reading, sampled at every bucket
 * boundary.
 *
 * @since 0.1.0
 * @category models
 */
export interface RecorderService {
  readonly counterUnsafe: (name: string) => (amount?: number) => void
  readonly gaugeUnsafe: (name: string, read: () => number) => void
}

/**
 * The {@link RecorderService} tag, provided by {@link run}.
 *
 * @example
 * ```ts
 * // snippet: compile-only — needs the Recorder that Simulation.run provides
 * import { Simulation } from "@sluice/simulation"
 * import { Effect } from "effect"
 *
 * const program = Effect.gen(function* () {
 *   const recorder = yield* Simulation.Recorder
 *   const ticks = recorder.counterUnsafe("ticks")
 *   let queued = 0
 *   recorder.gaugeUnsafe("queued", () => queued)
 *   for (let i = 0; i < 10; i++) {
 *     yield* Effect.sleep("1 second")
 *     ticks()
 *     queued++
 *   }
 * })
 * ```
 * @since 0.1.0
 * @category tags
 */
export const Recorder: Context.Service<Recorder, RecorderService> = internal.Recorder

/**
 * The identity of the {@link Recorder} service in a context.
 *
 * @since 0.1.0
 * @category tags
 */
export interface Recorder {
  readonly _: unique symbol
}

/**
 * Options of {@link run}: `seed` for `Random` (omit to keep the ambient one),
 * `resolution` of the time series (default 100 ms), `startMillis` (the virtual
 * epoch, default 0), `maxDuration` (virtual time after which the program is
 * interrupted, default unlimited), `onProgress`, called with the elapsed virtual
 * millis each time the engine hands control back to the outer runtime, and
 * `tracing` (spans inside the run, default off).
 *
 * @since 0.1.0
 * @category models
 */
export interface RunOptions {
  readonly seed?: number | string | undefined
  readonly resolution?: Duration.Input | undefined
  readonly startMillis?: number | undefined
  readonly maxDuration?: Duration.Input | undefined
  readonly onProgress?: ((elapsedMillis: number) => void) | undefined
  readonly tracing?: boolean | undefined
}

/**
 * The outcome of {@link run}: the program's exit, the virtual time it took, whether
 * `maxDuration` cut it short, how many distinct timer instants were processed, and
 * the recorded time series.
 *
 * @since 0.1.0
 * @category models
 */
export interface RunResult<A, E> {
  readonly exit: Exit.Exit<A, E>
  readonly elapsedMillis: number
  readonly timedOut: boolean
  readonly events: number
  readonly timeSeries: TimeSeries
}

/**
 * Runs a program in virtual time and returns its exit with the recorded time series.
 * The program may use any service of the enclosing context; the engine provides
 * {@link Recorder}, its own `Clock` and (with `seed`) a seeded `Random`. Time only
 * moves when every fiber of the program is waiting on a timer, so results do not
 * depend on the speed of the machine.
 *
 * @example
 * ```ts
 * import { Simulation } from "@sluice/simulation"
 * import { Clock, Effect, Random } from "effect"
 *
 * const program = Effect.gen(function* () {
 *   yield* Effect.sleep("1 hour")
 *   const jitter = yield* Random.nextIntBetween(0, 1000)
 *   return (yield* Clock.currentTimeMillis) + jitter
 * })
 * // Completes in microseconds; elapsedMillis === 3_600_000; same seed, same value.
 * const result = Simulation.run(program, { seed: 42 })
 * Effect.runPromise(result).then((r) => console.log(r.elapsedMillis, String(r.exit))) // prints: 3600000 Success(3600740)
 * ```
 * @since 0.1.0
 * @category utils
 */
export const run: <A, E, R>(
  effect: Effect.Effect<A, E, R>,
  options?: RunOptions
) => Effect.Effect<RunResult<A, E>, never, Exclude<R, Recorder>> = internal.run

// ---------------------------------------------------------------------------
// Model server
// ---------------------------------------------------------------------------

/**
 * How long an accepted request holds its slot: a fixed duration (`"500 millis"`, or a
 * number of millis), `{ distribution: "exponential", mean }` or
 * `{ distribution: "uniform", min, max }`. Random service times are drawn from a PRNG
 * seeded by the run's seed, so a run stays reproducible.
 *
 * @since 0.1.0
 * @category models
 */
export const ServiceTime = model.ServiceTime

/**
 * @since 0.1.0
 * @category models
 */
export type ServiceTime = typeof ServiceTime.Encoded

/**
 * An optional queue in front of the slots: up to `size` requests wait for a slot
 * (`discipline` `"fifo"`, the default, or `"lifo"`); one that waits longer than
 * `timeout` is answered with `Overloaded` (holding no slot).
 *
 * @since 0.1.0
 * @category models
 */
export const ServerQueue = model.ServerQueue

/**
 * @since 0.1.0
 * @category models
 */
export type ServerQueue = typeof ServerQueue.Encoded

/**
 * Options of a {@link SlotServer}: `maxBusy` slots, optional `capacityChanges`
 * (`{ at, maxBusy }` steps, `at` measured from the server's creation), `travelTime`
 * for a request to reach the server (default 100 ms), `returnTime` for the answer to
 * come back (default 0), `serviceTime` an accepted request holds its slot (500 ms; see
 * {@link ServiceTime}), `rejectTime` a rejection holds a slot before the error leaves
 * (the cost of a rejection, 50 ms) and an optional `queue` ({@link ServerQueue}).
 *
 * @since 0.1.0
 * @category models
 */
export const SlotServerOptions = model.SlotServerOptions

/**
 * @since 0.1.0
 * @category models
 */
export type SlotServerOptions = typeof SlotServerOptions.Encoded

/**
 * A model server with a number of slots. A request arriving while fewer than
 * `maxBusy` slots are busy takes one for its service time and succeeds; otherwise it
 * waits in the queue if there is one with room, or it is rejected, and the rejection
 * itself holds a slot for `rejectTime` before the client sees `Overloaded`, so a retry
 * storm eats the capacity it is waiting for.
 *
 * @since 0.1.0
 * @category models
 */
export interface SlotServer {
  readonly call: (client: number) => Effect.Effect<void, Errors.Overloaded>
  readonly busyUnsafe: () => number
  readonly maxBusyUnsafe: () => number
  readonly queuedUnsafe: () => number
  readonly statsUnsafe: () => { readonly accepted: number; readonly rejected: number }
}

/**
 * Makes a {@link SlotServer}. In {@link run} its events are plain timer callbacks;
 * under any other clock (`TestClock`, the live clock) each event is a fiber sleeping
 * on that clock.
 *
 * @example
 * ```ts
 * import { Simulation } from "@sluice/simulation"
 * import { Effect } from "effect"
 *
 * const program = Effect.gen(function* () {
 *   const server = yield* Simulation.makeSlotServer({ maxBusy: 2 })
 *   const results = yield* Effect.all([server.call(0), server.call(0), server.call(0)], {
 *     concurrency: "unbounded",
 *     mode: "result"
 *   })
 *   // two successes, one Overloaded
 *   console.log(results.map((r) => (r._tag === "Failure" ? r.failure._tag : r._tag))) // prints: [ 'Success', 'Success', 'Overloaded' ]
 * })
 * Effect.runPromise(Simulation.run(program))
 * ```
 * @since 0.1.0
 * @category constructors
 */
export const makeSlotServer: (options: SlotServerOptions) => Effect.Effect<SlotServer, InvalidOptions> =
  model.makeSlotServer

// ---------------------------------------------------------------------------
// Scenarios
// ---------------------------------------------------------------------------

/**
 * A scenario as data: `clients` (default 1) each receive `operationsPerClient`
 * operations at `arrivalsPerSecond` (per client), either `"uniform"` (the clients
 * interleave into one even stream, the default) or `"poisson"` (exponential gaps,
 * drawn from the run's seed), and send them to one shared {@link SlotServer}
 * described by `server`. Write one in a JSON file and run it with
 * `npm run sim -- --scenario ./my-server.json --strategy cwnd-reno`; the built-in
 * scenarios are instances of it.
 *
 * @example
 * ```ts
 * // snippet: compile-only — builds a value for an app to use
 * import { Simulation } from "@sluice/simulation"
 *
 * const mine: Simulation.Scenario = {
 *   name: "my-server",
 *   operationsPerClient: 1000,
 *   arrivalsPerSecond: 500,
 *   arrivals: "poisson",
 *   server: {
 *     maxBusy: 8,
 *     serviceTime: { distribution: "exponential", mean: "80 millis" },
 *     queue: { size: 16, discipline: "fifo", timeout: "200 millis" },
 *     travelTime: "5 millis",
 *     returnTime: "5 millis"
 *   }
 * }
 * ```
 * @since 0.1.0
 * @category scenarios
 */
export const Scenario = model.Scenario

/**
 * @since 0.1.0
 * @category scenarios
 */
export type Scenario = typeof Scenario.Encoded

/**
 * Parses and validates a scenario written as JSON, failing with `InvalidOptions`
 * that names the field (or says the text is not JSON).
 *
 * @example
 * ```ts
 * import { Simulation } from "@sluice/simulation"
 * import { Effect } from "effect"
 *
 * const scenario = Simulation.parseScenarioJson(
 *   '{"name":"tiny","operationsPerClient":10,"arrivalsPerSecond":100,"server":{"maxBusy":2}}'
 * )
 * Effect.runPromise(scenario).then((s) => console.log(s.name, s.server.maxBusy)) // prints: tiny 2
 * ```
 * @since 0.1.0
 * @category scenarios
 */
export const parseScenarioJson: (text: string) => Effect.Effect<Scenario, InvalidOptions> =
  model.parseScenarioJson

/**
 * A client under test: `run` wraps one attempt (the server call) into whatever the
 * strategy does (retries, a concurrency limiter, a budget) and is called once per
 * operation. `gauges` are sampled into the time series (for several clients the
 * name gets the suffix `.<index>`).
 *
 * @since 0.1.0
 * @category scenarios
 */
export interface Client {
  readonly run: <A>(attempt: Effect.Effect<A, Errors.Overloaded>) => Effect.Effect<A, unknown>
  readonly gauges?: Readonly<Record<string, () => number>> | undefined
}

/**
 * Per-client totals; `goodput` is succeeded operations per second of the client's
 * completion time.
 *
 * @since 0.1.0
 * @category scenarios
 */
export interface ClientReport {
  readonly index: number
  readonly operations: number
  readonly succeeded: number
  readonly failedOperations: number
  readonly attempts: number
  readonly failedAttempts: number
  readonly completionMillis: number
  readonly goodput: number
}

/**
 * The result of {@link runScenario}. `efficiency` is successful attempts over all
 * attempts, `completionMillis` the virtual time when the last operation ended,
 * `optimalMillis` the computed best possible completion time, `fairness` Jain's index
 * of per-client goodput (1 for a single client). The time series has the counters
 * `attempts`, `successes`, `rejections`, `completed` (operations), `failed`
 * (operations), and the gauges `inFlight` (attempts), `pending` (operations),
 * `busy`, `maxBusy`, `serverQueued` (with a queue) and the clients' own.
 *
 * @since 0.1.0
 * @category scenarios
 */
export interface ScenarioReport {
  readonly name: string
  readonly operations: number
  readonly succeeded: number
  readonly failedOperations: number
  readonly attempts: number
  readonly failedAttempts: number
  readonly efficiency: number
  readonly completionMillis: number
  readonly optimalMillis: number
  readonly ratioToOptimal: number
  readonly fairness: number
  readonly clients: ReadonlyArray<ClientReport>
  readonly server: { readonly accepted: number; readonly rejected: number }
  readonly timedOut: boolean
  readonly events: number
  readonly timeSeries: TimeSeries
}

/**
 * Runs a scenario in virtual time. `makeClient(index)` builds each client in a scope
 * that lives for the whole run (so Layers and limiters may be built there); it may
 * also use the {@link Recorder}. Options are those of {@link run}; `maxDuration`
 * defaults to one virtual hour.
 *
 * @example
 * ```ts
 * // snippet: compile-only — takes seconds of real time
 * import { Simulation } from "@sluice/simulation"
 * import { Effect, Schedule } from "effect"
 *
 * // retry immediately, up to 20 attempts: a retry storm
 * const naive = () =>
 *   Effect.succeed<Simulation.Client>({ run: (attempt) => Effect.retry(attempt, Schedule.recurs(19)) })
 * const report = Simulation.runScenario(Simulation.overload2000, naive, { seed: 1 })
 * ```
 * @since 0.1.0
 * @category scenarios
 */
export const runScenario: <E, R>(
  scenario: Scenario,
  makeClient: (index: number) => Effect.Effect<Client, E, R | Scope.Scope>,
  options?: RunOptions
) => Effect.Effect<ScenarioReport, E | InvalidOptions, Exclude<Exclude<R, Scope.Scope>, Recorder>> =
  model.runScenario

/**
 * The best possible completion time of a scenario, in millis: a clairvoyant client
 * sends every operation so that it reaches the server exactly when a slot frees
 * up, so nothing is rejected or queued and no slot idles while work waits. With a
 * random service time the mean is used (a reference rather than a strict bound).
 * Poisson arrivals are those of `seed`. About 20.1 s for `overload-2000`.
 *
 * @example
 * ```ts
 * import { Simulation } from "@sluice/simulation"
 * import { Effect } from "effect"
 *
 * const optimal = Simulation.optimalCompletionMillis(Simulation.overload2000)
 * Effect.runPromise(optimal).then(console.log) // prints: 20149
 * ```
 * @since 0.1.0
 * @category scenarios
 */
export const optimalCompletionMillis: (
  scenario: Scenario,
  options?: { readonly seed?: number | string | undefined }
) => Effect.Effect<number, InvalidOptions> = model.optimalCompletionMillis

/**
 * Jain's fairness index `(Σx)² / (n·Σx²)`: 1 when everyone gets the same, `1/n`
 * when one gets everything. 1 for an empty or all-zero input.
 *
 * @example
 * ```ts
 * import { Simulation } from "@sluice/simulation"
 *
 * console.log(Simulation.jainFairness([10, 10, 10])) // prints: 1
 * console.log(Simulation.jainFairness([30, 0, 0])) // prints: 0.333…
 * ```
 * @since 0.1.0
 * @category scenarios
 */
export const jainFairness: (values: ReadonlyArray<number>) => number = model.jainFairness

/**
 * The reference scenario of the demo: 2000 operations arriving at 1000/s; 100 ms to
 * reach the server; 50 slots; an accepted request holds a slot for 500 ms; a
 * rejection holds one for 50 ms.
 *
 * @since 0.1.0
 * @category scenarios
 */
export const overload2000: Scenario = model.overload2000

/**
 * Like {@link overload2000} with 4000 operations; capacity falls from 50 to 20 slots
 * at 10 s and returns to 50 at 30 s.
 *
 * @since 0.1.0
 * @category scenarios
 */
export const capacityDrop: Scenario = model.capacityDrop

/**
 * 10 clients with 300 operations each (1000/s together) sharing one 50-slot server.
 *
 * @since 0.1.0
 * @category scenarios
 */
export const manyClients: Scenario = model.manyClients

/**
 * The built-in scenarios by name: `overload-2000`, `capacity-drop`, `many-clients`.
 *
 * @since 0.1.0
 * @category scenarios
 */
export const scenarios: Readonly<Record<string, Scenario>> = model.scenarios

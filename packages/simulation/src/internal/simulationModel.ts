/**
 * Model servers and open-loop scenarios for the simulation engine.
 */
import { Errors, Options } from "@sluice/core"
import type { Options as OptionsNs } from "@sluice/core"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Random from "effect/Random"
import type * as Scope from "effect/Scope"
import * as Schema from "effect/Schema"
import type * as S from "../Simulation.js"
import { Recorder, run, type RunOptions, VirtualClock } from "./simulation.js"

type InvalidOptions = OptionsNs.InvalidOptions
const Overloaded = Errors.Overloaded
type Overloaded = Errors.Overloaded

/** @internal */
export const CapacityChange = Schema.Struct({
  at: Options.NonNegativeDuration,
  maxBusy: Options.NonNegativeInt
})

/** @internal */
export const ServiceTime = Schema.Union([
  Options.PositiveDuration,
  Schema.Struct({ distribution: Schema.Literal("exponential"), mean: Options.PositiveDuration }),
  Schema.Struct({
    distribution: Schema.Literal("uniform"),
    min: Options.NonNegativeDuration,
    max: Options.PositiveDuration
  }).check(
    Schema.makeFilter((u) =>
      Duration.isLessThanOrEqualTo(u.min, u.max)
        ? undefined
        : { path: ["min"], issue: "min must not exceed max" }
    )
  )
])

/** @internal */
export const ServerQueue = Schema.Struct({
  size: Options.PositiveInt,
  discipline: Schema.Literals(["fifo", "lifo"]).pipe(
    Schema.withDecodingDefaultType(Effect.succeed("fifo" as const))
  ),
  timeout: Schema.optional(Options.PositiveDuration)
})

/** @internal */
export const SlotServerOptions = Schema.Struct({
  maxBusy: Options.PositiveInt,
  capacityChanges: Schema.Array(CapacityChange).pipe(Schema.withDecodingDefaultType(Effect.succeed([]))),
  travelTime: Options.NonNegativeDuration.pipe(
    Schema.withDecodingDefaultType(Effect.succeed(Duration.millis(100)))
  ),
  returnTime: Options.NonNegativeDuration.pipe(Schema.withDecodingDefaultType(Effect.succeed(Duration.zero))),
  serviceTime: ServiceTime.pipe(
    Schema.withDecodingDefaultType(Effect.succeed<typeof ServiceTime.Type>(Duration.millis(500)))
  ),
  rejectTime: Options.NonNegativeDuration.pipe(
    Schema.withDecodingDefaultType(Effect.succeed(Duration.millis(50)))
  ),
  queue: Schema.optional(ServerQueue)
})

/** @internal */
export const Scenario = Schema.Struct({
  name: Schema.String,
  description: Schema.String.pipe(Schema.withDecodingDefaultType(Effect.succeed(""))),
  clients: Options.PositiveInt.pipe(Schema.withDecodingDefaultType(Effect.succeed(1))),
  operationsPerClient: Options.PositiveInt,
  arrivalsPerSecond: Options.PositiveNumber,
  arrivals: Schema.Literals(["uniform", "poisson"]).pipe(
    Schema.withDecodingDefaultType(Effect.succeed("uniform" as const))
  ),
  server: SlotServerOptions
})

type DecodedServer = typeof SlotServerOptions.Type
type DecodedScenario = typeof Scenario.Type

/** @internal */
export interface SlotServer {
  readonly call: (client: number) => Effect.Effect<void, Overloaded>
  readonly busyUnsafe: () => number
  readonly maxBusyUnsafe: () => number
  readonly queuedUnsafe: () => number
  readonly statsUnsafe: () => { readonly accepted: number; readonly rejected: number }
}

const decodeServer = Options.decode("Simulation.SlotServer", SlotServerOptions)
const decodeScenario = Options.decode("Simulation.Scenario", Scenario)

/** Capacity as a step function of the time since the server started. */
const capacityProfile = (server: DecodedServer): ((sinceStart: number) => number) => {
  const steps = server.capacityChanges
    .map((c) => ({ at: Duration.toMillis(c.at), maxBusy: c.maxBusy }))
    .sort((a, b) => a.at - b.at)
  if (steps.length === 0) return () => server.maxBusy
  return (t) => {
    let value = server.maxBusy
    for (const step of steps) {
      if (step.at > t) break
      value = step.maxBusy
    }
    return value
  }
}

const rejection = new Overloaded({ reason: "server busy" })
const queueTimeout = new Overloaded({ reason: "server queue timeout" })

/** Synchronous hooks a scenario uses to count attempts without wrapping every call. */
interface CallObserver {
  readonly onSend: (client: number) => void
  readonly onResult: (client: number, accepted: boolean) => void
}

/** A small seeded PRNG (mulberry32): model randomness must not consume the program's `Random`. */
export const prng = (seed: number): (() => number) => {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/** A stable 32-bit seed from a run's seed and a salt (FNV-1a). */
export const seedOf = (seed: number | string | undefined, salt: string): number => {
  const text = `${String(seed ?? 0)}/${salt}`
  let h = 0x811c9dc5
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i)
    h = Math.imul(h, 0x01000193)
  }
  return h >>> 0
}

type ServiceTimeType = typeof ServiceTime.Type

const isRandomService = (s: ServiceTimeType): boolean => !Duration.isDuration(s)

/** The mean service time in millis. */
const meanServiceMillis = (s: ServiceTimeType): number =>
  Duration.isDuration(s)
    ? Duration.toMillis(s)
    : s.distribution === "exponential"
      ? Duration.toMillis(s.mean)
      : (Duration.toMillis(s.min) + Duration.toMillis(s.max)) / 2

/** Draws service times (millis) from the distribution. */
const serviceSampler = (s: ServiceTimeType, random: () => number): (() => number) => {
  if (Duration.isDuration(s)) {
    const millis = Duration.toMillis(s)
    return () => millis
  }
  if (s.distribution === "exponential") {
    const mean = Duration.toMillis(s.mean)
    return () => -mean * Math.log(1 - random())
  }
  const min = Duration.toMillis(s.min)
  const span = Duration.toMillis(s.max) - min
  return () => min + span * random()
}

interface Queued {
  readonly respond: (error: Overloaded | undefined) => void
  done: boolean
}

const makeServerImpl = (
  server: DecodedServer,
  seed: number,
  observer?: CallObserver
): Effect.Effect<SlotServer> =>
  Effect.withFiber((fiber) =>
    Effect.sync(() => {
      const clock = fiber.getRef(Clock.Clock)
      const start = clock.currentTimeMillisUnsafe()
      const capacity = capacityProfile(server)
      let busy = 0
      let accepted = 0
      let rejected = 0
      const travelMillis = Duration.toMillis(server.travelTime)
      const returnMillis = Duration.toMillis(server.returnTime)
      const rejectMillis = Duration.toMillis(server.rejectTime)
      const serviceMillis = serviceSampler(server.serviceTime, prng(seed))
      const queue = server.queue
      const queueTimeoutMillis = queue?.timeout === undefined ? undefined : Duration.toMillis(queue.timeout)
      const lifo = queue?.discipline === "lifo"
      const waiting: Array<Queued> = []
      let queued = 0
      // In virtual time the server is plain timer callbacks, and an answer is queued on
      // the run's scheduler behind the other events of its instant; under any other clock
      // each event is a fiber sleeping on that clock (with the caller's services, so a
      // TestClock's scheduler sees it), and an answer resumes its caller at once. Once a
      // request is sent it runs to its end, as a real server does not notice that the
      // caller gave up (an interrupted caller ignores the late answer).
      const virtual = clock instanceof VirtualClock ? clock : undefined
      const fork = Effect.runForkWith(fiber.context)
      const schedule: (delayMillis: number, f: () => void) => void =
        virtual !== undefined
          ? (delayMillis, f) => virtual.scheduleUnsafe(delayMillis, f)
          : (delayMillis, f) => {
              fork(Effect.andThen(clock.sleep(Duration.millis(delayMillis)), Effect.sync(f)))
            }
      const answer: (f: () => void) => void =
        virtual !== undefined ? (f) => virtual.dispatchUnsafe(f) : (f) => f()
      const now = () => clock.currentTimeMillisUnsafe()
      /** Starts service on a free slot; the answer reaches the client `returnTime` after. */
      const serve = (respond: (error: Overloaded | undefined) => void) => {
        busy++
        accepted++
        schedule(serviceMillis(), () => {
          busy--
          pull()
          respond(undefined)
        })
      }
      /** A freed slot takes the next queued request (FIFO or LIFO). */
      const pull = () => {
        while (queued > 0 && busy < capacity(now() - start)) {
          const next = lifo ? waiting.pop()! : waiting.shift()!
          if (next.done) continue
          next.done = true
          queued--
          serve(next.respond)
        }
        // drop timed-out entries left behind
        while (waiting.length > 0 && (lifo ? waiting[waiting.length - 1]! : waiting[0]!).done) {
          if (lifo) waiting.pop()
          else waiting.shift()
        }
      }
      /** Decides at arrival; a rejection holds a slot too, so a retry storm eats the capacity it needs. */
      const arrive = (respond: (error: Overloaded | undefined) => void) => {
        if (busy < capacity(now() - start)) return serve(respond)
        if (queue !== undefined && queued < queue.size) {
          const entry: Queued = { respond, done: false }
          waiting.push(entry)
          queued++
          if (queueTimeoutMillis !== undefined) {
            schedule(queueTimeoutMillis, () => {
              if (entry.done) return
              entry.done = true
              queued--
              rejected++
              respond(queueTimeout)
            })
          }
          return
        }
        busy++
        rejected++
        schedule(rejectMillis, () => {
          busy--
          pull()
          respond(rejection)
        })
      }
      const calls = new Map<number, Effect.Effect<void, Overloaded>>()
      const makeCall = (client: number): Effect.Effect<void, Overloaded> =>
        Effect.callback<void, Overloaded>((resume) => {
          observer?.onSend(client)
          const deliver = (error: Overloaded | undefined) => {
            observer?.onResult(client, error === undefined)
            answer(() => resume(error === undefined ? Effect.void : Effect.fail(error)))
          }
          schedule(travelMillis, () =>
            arrive((error) => {
              if (returnMillis === 0) deliver(error)
              else schedule(returnMillis, () => deliver(error))
            })
          )
        })
      const call = (client: number): Effect.Effect<void, Overloaded> => {
        let effect = calls.get(client)
        if (effect === undefined) {
          effect = makeCall(client)
          calls.set(client, effect)
        }
        return effect
      }
      return {
        call,
        busyUnsafe: () => busy,
        maxBusyUnsafe: () => capacity(now() - start),
        queuedUnsafe: () => queued,
        statsUnsafe: () => ({ accepted, rejected })
      }
    })
  )

/** Draws the model's seed from the program's `Random` only when the model needs randomness. */
const serverSeed = (server: DecodedServer): Effect.Effect<number> =>
  isRandomService(server.serviceTime) ? Random.nextInt : Effect.succeed(0)

/** @internal */
export const makeSlotServer = (
  options: typeof SlotServerOptions.Encoded
): Effect.Effect<SlotServer, InvalidOptions> =>
  Effect.flatMap(decodeServer(options), (server) =>
    Effect.flatMap(serverSeed(server), (seed) => makeServerImpl(server, seed))
  )

// The report shapes are declared once, in the public module.
/** @internal */
export type Client = S.Client
/** @internal */
export type ClientReport = S.ClientReport
/** @internal */
export type ScenarioReport = S.ScenarioReport

interface ClientStats {
  operations: number
  succeeded: number
  failedOperations: number
  attempts: number
  failedAttempts: number
  lastDone: number
}

/** @internal */
export interface ScenarioRunOptions extends RunOptions {}

/**
 * Arrival offsets (ms) per client. Uniform: the clients interleave into one even stream.
 * Poisson: exponential gaps at each client's rate, drawn from a PRNG seeded by the run's
 * seed and the scenario's name, so every strategy sees the same arrivals.
 */
const arrivalTimes = (w: DecodedScenario, seed: number | string | undefined): Array<Array<number>> => {
  const out: Array<Array<number>> = []
  const random = prng(seedOf(seed, `arrivals/${w.name}`))
  for (let c = 0; c < w.clients; c++) {
    const times: Array<number> = []
    let t = 0
    for (let k = 0; k < w.operationsPerClient; k++) {
      if (w.arrivals === "uniform") {
        times.push(((k * w.clients + c) * 1000) / (w.arrivalsPerSecond * w.clients))
      } else {
        times.push(t)
        t += (-1000 / w.arrivalsPerSecond) * Math.log(1 - random())
      }
    }
    out.push(times)
  }
  return out
}

/** @internal */
export const jainFairness = (values: ReadonlyArray<number>): number => {
  let sum = 0
  let squares = 0
  for (const v of values) {
    sum += v
    squares += v * v
  }
  return values.length === 0 || squares === 0 ? 1 : (sum * sum) / (values.length * squares)
}

/**
 * The earliest time every operation can be done: a clairvoyant client sends each
 * operation so that it reaches the server exactly when a slot is free, never gets
 * rejected, and the server is never idle while work is waiting (greedy list
 * scheduling, optimal for identical jobs).
 */
const optimalFor = (w: DecodedScenario, arrivals: Array<Array<number>>): number => {
  const capacity = capacityProfile(w.server)
  const changes = w.server.capacityChanges.map((c) => Duration.toMillis(c.at)).sort((a, b) => a - b)
  const travel = Duration.toMillis(w.server.travelTime)
  const service = meanServiceMillis(w.server.serviceTime)
  const ready: Array<number> = []
  for (let c = 0; c < w.clients; c++) {
    for (let k = 0; k < w.operationsPerClient; k++) ready.push(arrivals[c]![k]! + travel)
  }
  ready.sort((a, b) => a - b)
  const running = new MinHeap()
  let end = 0
  let t = 0
  for (const earliest of ready) {
    // Starts are in arrival order, so time only moves forward.
    t = Math.max(t, earliest)
    for (;;) {
      while (running.size > 0 && running.peek() <= t) running.pop()
      if (running.size < capacity(t)) break
      const nextChange = changes.find((at) => at > t) ?? Number.POSITIVE_INFINITY
      const next = Math.min(running.size > 0 ? running.peek() : Number.POSITIVE_INFINITY, nextChange)
      if (next === Number.POSITIVE_INFINITY) return Number.POSITIVE_INFINITY
      t = next
    }
    running.push(t + service)
    end = t + service
  }
  return end
}

class MinHeap {
  private readonly items: Array<number> = []
  get size(): number {
    return this.items.length
  }
  peek(): number {
    return this.items[0]!
  }
  push(value: number): void {
    const items = this.items
    let i = items.length
    items.push(value)
    while (i > 0) {
      const parent = (i - 1) >> 1
      if (items[parent]! <= value) break
      items[i] = items[parent]!
      i = parent
    }
    items[i] = value
  }
  pop(): void {
    const items = this.items
    const last = items.pop()!
    if (items.length === 0) return
    let i = 0
    for (;;) {
      const l = 2 * i + 1
      if (l >= items.length) break
      const r = l + 1
      const c = r < items.length && items[r]! < items[l]! ? r : l
      if (items[c]! >= last) break
      items[i] = items[c]!
      i = c
    }
    items[i] = last
  }
}

/** @internal */
export const optimalCompletionMillis = (
  scenario: typeof Scenario.Encoded,
  options: { readonly seed?: number | string | undefined } = {}
): Effect.Effect<number, InvalidOptions> =>
  Effect.map(decodeScenario(scenario), (w) => optimalFor(w, arrivalTimes(w, options.seed)))

/** @internal */
export const runScenario = <E, R>(
  scenario: typeof Scenario.Encoded,
  makeClient: (index: number) => Effect.Effect<Client, E, R | Scope.Scope>,
  options: ScenarioRunOptions = {}
): Effect.Effect<ScenarioReport, E | InvalidOptions, Exclude<Exclude<R, Scope.Scope>, Recorder>> =>
  Effect.flatMap(decodeScenario(scenario), (w) => {
    const arrivalOffsets = arrivalTimes(w, options.seed)
    const stats: Array<ClientStats> = []
    for (let c = 0; c < w.clients; c++) {
      stats.push({
        operations: w.operationsPerClient,
        succeeded: 0,
        failedOperations: 0,
        attempts: 0,
        failedAttempts: 0,
        lastDone: 0
      })
    }
    let serverStats = { accepted: 0, rejected: 0 }
    const program = Effect.gen(function* () {
      const recorder = yield* Recorder
      const attemptsCounter = recorder.counterUnsafe("attempts")
      const successesCounter = recorder.counterUnsafe("successes")
      const rejectionsCounter = recorder.counterUnsafe("rejections")
      const completedCounter = recorder.counterUnsafe("completed")
      const failedCounter = recorder.counterUnsafe("failed")
      let inFlight = 0
      let pending = 0
      const server = yield* makeServerImpl(w.server, seedOf(options.seed, `server/${w.name}`), {
        onSend: (c) => {
          stats[c]!.attempts++
          inFlight++
          attemptsCounter()
        },
        onResult: (c, accepted) => {
          inFlight--
          if (accepted) {
            successesCounter()
          } else {
            stats[c]!.failedAttempts++
            rejectionsCounter()
          }
        }
      })
      const start = yield* Clock.currentTimeMillis
      const clients: Array<Client> = []
      for (let c = 0; c < w.clients; c++) clients.push(yield* makeClient(c))
      recorder.gaugeUnsafe("inFlight", () => inFlight)
      recorder.gaugeUnsafe("pending", () => pending)
      recorder.gaugeUnsafe("busy", server.busyUnsafe)
      recorder.gaugeUnsafe("maxBusy", server.maxBusyUnsafe)
      if (w.server.queue !== undefined) recorder.gaugeUnsafe("serverQueued", server.queuedUnsafe)
      clients.forEach((client, c) => {
        for (const [name, read] of Object.entries(client.gauges ?? {})) {
          recorder.gaugeUnsafe(w.clients === 1 ? name : `${name}.${c}`, read)
        }
      })
      const clock = yield* Clock.Clock
      const ops = clients.map((client, c) => {
        const s = stats[c]!
        return client.run(server.call(c)).pipe(
          Effect.exit,
          Effect.map((exit) => {
            pending--
            s.lastDone = clock.currentTimeMillisUnsafe() - start
            if (Exit.isSuccess(exit)) {
              s.succeeded++
              completedCounter()
            } else {
              s.failedOperations++
              failedCounter()
            }
          })
        )
      })
      const arrivals: Array<Effect.Effect<void>> = []
      for (let k = 0; k < w.operationsPerClient; k++) {
        for (let c = 0; c < w.clients; c++) {
          const op = ops[c]!
          arrivals.push(
            Effect.andThen(
              Effect.sleep(arrivalOffsets[c]![k]!),
              Effect.suspend(() => {
                pending++
                return op
              })
            )
          )
        }
      }
      yield* Effect.all(arrivals, { concurrency: "unbounded", discard: true })
      serverStats = server.statsUnsafe()
    }).pipe(Effect.scoped)
    return Effect.flatMap(
      run(program, { maxDuration: Duration.hours(1), ...options }),
      (result): Effect.Effect<ScenarioReport, E> => {
        if (Exit.isFailure(result.exit) && !result.timedOut) return Effect.failCause(result.exit.cause)
        const totals = stats.reduce(
          (acc, s) => ({
            succeeded: acc.succeeded + s.succeeded,
            failedOperations: acc.failedOperations + s.failedOperations,
            attempts: acc.attempts + s.attempts,
            failedAttempts: acc.failedAttempts + s.failedAttempts,
            completionMillis: Math.max(acc.completionMillis, s.lastDone)
          }),
          { succeeded: 0, failedOperations: 0, attempts: 0, failedAttempts: 0, completionMillis: 0 }
        )
        const clients = stats.map((s, index) => ({
          index,
          operations: s.operations,
          succeeded: s.succeeded,
          failedOperations: s.failedOperations,
          attempts: s.attempts,
          failedAttempts: s.failedAttempts,
          completionMillis: s.lastDone,
          goodput: s.lastDone > 0 ? (s.succeeded * 1000) / s.lastDone : 0
        }))
        const optimalMillis = optimalFor(w, arrivalOffsets)
        const completionMillis = result.timedOut ? result.elapsedMillis : totals.completionMillis
        return Effect.succeed({
          name: w.name,
          operations: w.clients * w.operationsPerClient,
          ...totals,
          completionMillis,
          efficiency: totals.attempts === 0 ? 0 : (totals.attempts - totals.failedAttempts) / totals.attempts,
          optimalMillis,
          ratioToOptimal: completionMillis / optimalMillis,
          fairness: jainFairness(clients.map((c) => c.goodput)),
          clients,
          server: serverStats,
          timedOut: result.timedOut,
          events: result.events,
          timeSeries: result.timeSeries
        })
      }
    )
  })

/** @internal */
export const overload2000: typeof Scenario.Encoded = {
  name: "overload-2000",
  description:
    "2000 operations arriving at 1000/s; 100 ms to reach the server; 50 slots; 500 ms per accepted request; a rejection holds a slot for 50 ms",
  operationsPerClient: 2000,
  arrivalsPerSecond: 1000,
  server: { maxBusy: 50, travelTime: "100 millis", serviceTime: "500 millis", rejectTime: "50 millis" }
}

/** @internal */
export const capacityDrop: typeof Scenario.Encoded = {
  name: "capacity-drop",
  description:
    "like overload-2000 with 4000 operations; capacity falls from 50 to 20 slots at 10 s and returns at 30 s",
  operationsPerClient: 4000,
  arrivalsPerSecond: 1000,
  server: {
    maxBusy: 50,
    capacityChanges: [
      { at: "10 seconds", maxBusy: 20 },
      { at: "30 seconds", maxBusy: 50 }
    ],
    travelTime: "100 millis",
    serviceTime: "500 millis",
    rejectTime: "50 millis"
  }
}

/** @internal */
export const manyClients: typeof Scenario.Encoded = {
  name: "many-clients",
  description: "10 clients with 300 operations each (1000/s together) sharing one server of 50 slots",
  clients: 10,
  operationsPerClient: 300,
  arrivalsPerSecond: 100,
  server: { maxBusy: 50, travelTime: "100 millis", serviceTime: "500 millis", rejectTime: "50 millis" }
}

/** @internal */
export const scenarios: Readonly<Record<string, typeof Scenario.Encoded>> = {
  "overload-2000": overload2000,
  "capacity-drop": capacityDrop,
  "many-clients": manyClients
}

/** @internal */
export const parseScenarioJson = (text: string): Effect.Effect<typeof Scenario.Encoded, InvalidOptions> =>
  Effect.suspend(() => {
    let json: unknown
    try {
      json = JSON.parse(text)
    } catch (error) {
      return Effect.fail(
        new Options.InvalidOptions({
          module: "Simulation.Scenario",
          message: `not valid JSON: ${(error as Error).message}`
        })
      )
    }
    return Effect.as(decodeScenario(json as typeof Scenario.Encoded), json as typeof Scenario.Encoded)
  })

/**
 * Model servers and open-loop workloads for the simulation engine.
 */
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type * as Scope from "effect/Scope"
import * as Schema from "effect/Schema"
import { Overloaded } from "../Errors.js"
import * as Options from "./options.js"
import type { InvalidOptions } from "./options.js"
import { Recorder, run, type RunOptions, type TimeSeries, VirtualClock } from "./simulation.js"

/** @internal */
export const CapacityChange = Schema.Struct({
  at: Options.NonNegativeDuration,
  maxBusy: Options.NonNegativeInt
})

/** @internal */
export const SlotServerOptions = Schema.Struct({
  maxBusy: Options.PositiveInt,
  capacityChanges: Schema.optionalWith(Schema.Array(CapacityChange), { default: () => [] }),
  travelTime: Schema.optionalWith(Options.NonNegativeDuration, { default: () => Duration.millis(100) }),
  serviceTime: Schema.optionalWith(Options.PositiveDuration, { default: () => Duration.millis(500) }),
  rejectTime: Schema.optionalWith(Options.NonNegativeDuration, { default: () => Duration.millis(50) })
})

/** @internal */
export const Workload = Schema.Struct({
  name: Schema.String,
  description: Schema.optionalWith(Schema.String, { default: () => "" }),
  clients: Schema.optionalWith(Options.PositiveInt, { default: () => 1 }),
  operationsPerClient: Options.PositiveInt,
  arrivalsPerSecond: Options.PositiveNumber,
  server: SlotServerOptions
})

type DecodedServer = typeof SlotServerOptions.Type
type DecodedWorkload = typeof Workload.Type

/** @internal */
export interface SlotServer {
  readonly call: (client: number) => Effect.Effect<void, Overloaded>
  readonly unsafeBusy: () => number
  readonly unsafeMaxBusy: () => number
  readonly unsafeStats: () => { readonly accepted: number; readonly rejected: number }
}

const decodeServer = Options.decode("Simulation.SlotServer", SlotServerOptions)
const decodeWorkload = Options.decode("Simulation.Workload", Workload)

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

/** Synchronous hooks a workload uses to count attempts without wrapping every call. */
interface CallObserver {
  readonly onSend: (client: number) => void
  readonly onResult: (client: number, accepted: boolean) => void
}

const makeServerImpl = (server: DecodedServer, observer?: CallObserver): Effect.Effect<SlotServer> =>
  Effect.clockWith((clock) =>
    Effect.sync(() => {
      const start = clock.unsafeCurrentTimeMillis()
      const capacity = capacityProfile(server)
      let busy = 0
      let accepted = 0
      let rejected = 0
      /** Decides at arrival; the rejection holds a slot too, so a retry storm eats the capacity it needs. */
      const admit = (now: number): boolean => {
        const busyBefore = busy
        busy++
        if (busyBefore < capacity(now - start)) {
          accepted++
          return true
        }
        rejected++
        return false
      }
      const failed = Effect.fail(rejection)
      const travelMillis = Duration.toMillis(server.travelTime)
      const serviceMillis = Duration.toMillis(server.serviceTime)
      const rejectMillis = Duration.toMillis(server.rejectTime)
      // In virtual time the server is plain timer callbacks and a call is a single async
      // wait: the same decisions as the Effect version below at a fraction of the cost.
      // Once a request is sent it runs to its end, as a real server does not notice that
      // the caller gave up (an interrupted caller ignores the late answer).
      const virtualCall = (vclock: VirtualClock, client: number): Effect.Effect<void, Overloaded> =>
        Effect.async<void, Overloaded>((resume) => {
          observer?.onSend(client)
          vclock.unsafeSchedule(travelMillis, () => {
            if (admit(vclock.now)) {
              vclock.unsafeSchedule(serviceMillis, () => {
                busy--
                observer?.onResult(client, true)
                resume(Effect.void)
              })
            } else {
              vclock.unsafeSchedule(rejectMillis, () => {
                busy--
                observer?.onResult(client, false)
                resume(failed)
              })
            }
          })
        })
      const effectCall = (client: number): Effect.Effect<void, Overloaded> => {
        const accept = Effect.zipRight(
          Effect.sleep(server.serviceTime),
          Effect.sync(() => {
            busy--
            observer?.onResult(client, true)
          })
        )
        const refuse = Effect.zipRight(
          Effect.sleep(server.rejectTime),
          Effect.suspend(() => {
            busy--
            observer?.onResult(client, false)
            return failed
          })
        )
        return Effect.suspend(() => {
          observer?.onSend(client)
          return Effect.zipRight(
            Effect.sleep(server.travelTime),
            // Use `Effect.disconnect` around the call for client timeouts.
            Effect.uninterruptible(
              Effect.clockWith((now) => (admit(now.unsafeCurrentTimeMillis()) ? accept : refuse))
            )
          )
        })
      }
      const calls = new Map<number, Effect.Effect<void, Overloaded>>()
      const call = (client: number): Effect.Effect<void, Overloaded> => {
        let effect = calls.get(client)
        if (effect === undefined) {
          effect = clock instanceof VirtualClock ? virtualCall(clock, client) : effectCall(client)
          calls.set(client, effect)
        }
        return effect
      }
      return {
        call,
        unsafeBusy: () => busy,
        unsafeMaxBusy: () => capacity(clock.unsafeCurrentTimeMillis() - start),
        unsafeStats: () => ({ accepted, rejected })
      }
    })
  )

/** @internal */
export const makeSlotServer = (
  options: typeof SlotServerOptions.Encoded
): Effect.Effect<SlotServer, InvalidOptions> => Effect.flatMap(decodeServer(options), makeServerImpl)

/** @internal */
export interface Client {
  readonly run: <A>(attempt: Effect.Effect<A, Overloaded>) => Effect.Effect<A, unknown>
  readonly gauges?: Readonly<Record<string, () => number>> | undefined
}

/** @internal */
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

/** @internal */
export interface WorkloadReport {
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

interface ClientStats {
  operations: number
  succeeded: number
  failedOperations: number
  attempts: number
  failedAttempts: number
  lastDone: number
}

/** @internal */
export interface WorkloadRunOptions extends RunOptions {}

/** Arrival offset (ms) of operation `k` of client `c`: the clients interleave into one even stream. */
const arrivalMillis = (w: DecodedWorkload, c: number, k: number): number =>
  ((k * w.clients + c) * 1000) / (w.arrivalsPerSecond * w.clients)

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
const optimalFor = (w: DecodedWorkload): number => {
  const capacity = capacityProfile(w.server)
  const changes = w.server.capacityChanges.map((c) => Duration.toMillis(c.at)).sort((a, b) => a - b)
  const travel = Duration.toMillis(w.server.travelTime)
  const service = Duration.toMillis(w.server.serviceTime)
  const ready: Array<number> = []
  for (let c = 0; c < w.clients; c++) {
    for (let k = 0; k < w.operationsPerClient; k++) ready.push(arrivalMillis(w, c, k) + travel)
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
  workload: typeof Workload.Encoded
): Effect.Effect<number, InvalidOptions> => Effect.map(decodeWorkload(workload), optimalFor)

/** @internal */
export const runWorkload = <E, R>(
  workload: typeof Workload.Encoded,
  makeClient: (index: number) => Effect.Effect<Client, E, R | Scope.Scope>,
  options: WorkloadRunOptions = {}
): Effect.Effect<WorkloadReport, E | InvalidOptions, Exclude<Exclude<R, Scope.Scope>, Recorder>> =>
  Effect.flatMap(decodeWorkload(workload), (w) => {
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
      const attemptsCounter = recorder.unsafeCounter("attempts")
      const successesCounter = recorder.unsafeCounter("successes")
      const rejectionsCounter = recorder.unsafeCounter("rejections")
      const completedCounter = recorder.unsafeCounter("completed")
      const failedCounter = recorder.unsafeCounter("failed")
      let inFlight = 0
      let pending = 0
      const server = yield* makeServerImpl(w.server, {
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
      recorder.unsafeGauge("inFlight", () => inFlight)
      recorder.unsafeGauge("pending", () => pending)
      recorder.unsafeGauge("busy", server.unsafeBusy)
      recorder.unsafeGauge("maxBusy", server.unsafeMaxBusy)
      clients.forEach((client, c) => {
        for (const [name, read] of Object.entries(client.gauges ?? {})) {
          recorder.unsafeGauge(w.clients === 1 ? name : `${name}.${c}`, read)
        }
      })
      const clock = yield* Effect.clock
      const ops = clients.map((client, c) => {
        const s = stats[c]!
        return client.run(server.call(c)).pipe(
          Effect.exit,
          Effect.map((exit) => {
            pending--
            s.lastDone = clock.unsafeCurrentTimeMillis() - start
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
            Effect.zipRight(
              Effect.sleep(arrivalMillis(w, c, k)),
              Effect.suspend(() => {
                pending++
                return op
              })
            )
          )
        }
      }
      yield* Effect.all(arrivals, { concurrency: "unbounded", discard: true })
      serverStats = server.unsafeStats()
    }).pipe(Effect.scoped)
    return Effect.flatMap(
      run(program, { maxDuration: Duration.hours(1), ...options }),
      (result): Effect.Effect<WorkloadReport, E> => {
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
        const optimalMillis = optimalFor(w)
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
export const overload2000: typeof Workload.Encoded = {
  name: "overload-2000",
  description:
    "2000 operations arriving at 1000/s; 100 ms to reach the server; 50 slots; 500 ms per accepted request; a rejection holds a slot for 50 ms",
  operationsPerClient: 2000,
  arrivalsPerSecond: 1000,
  server: { maxBusy: 50, travelTime: "100 millis", serviceTime: "500 millis", rejectTime: "50 millis" }
}

/** @internal */
export const capacityDrop: typeof Workload.Encoded = {
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
export const manyClients: typeof Workload.Encoded = {
  name: "many-clients",
  description: "10 clients with 300 operations each (1000/s together) sharing one server of 50 slots",
  clients: 10,
  operationsPerClient: 300,
  arrivalsPerSecond: 100,
  server: { maxBusy: 50, travelTime: "100 millis", serviceTime: "500 millis", rejectTime: "50 millis" }
}

/** @internal */
export const workloads: Readonly<Record<string, typeof Workload.Encoded>> = {
  "overload-2000": overload2000,
  "capacity-drop": capacityDrop,
  "many-clients": manyClients
}

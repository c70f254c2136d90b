/**
 * The virtual-time engine. A program runs on a private `Scheduler` (a plain FIFO of
 * fiber tasks) and a private `Clock` whose `sleep` registers a timer in a binary heap.
 * The driver runs every ready task; when none is left and the program is still
 * running, it pops the earliest timer(s), moves virtual `now` there and resumes them.
 * Nothing waits for real time, so a simulated minute costs milliseconds.
 */
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Exit from "effect/Exit"
import * as FiberId from "effect/FiberId"
import * as Random from "effect/Random"
import * as Runtime from "effect/Runtime"
import * as Scheduler from "effect/Scheduler"
import type * as Fiber from "effect/Fiber"
import type * as Sim from "../Simulation.js"

/** @internal */
export type TimeSeries = Sim.TimeSeries

/** @internal */
export type RecorderService = Sim.RecorderService

/** @internal */
export type Recorder = Sim.Recorder

/** @internal */
export const Recorder = Context.GenericTag<Sim.Recorder, RecorderService>(
  "@sluice/simulation/Simulation/Recorder"
)

/** @internal */
export type RunOptions = Sim.RunOptions

/** @internal */
export type RunResult<A, E> = Sim.RunResult<A, E>

interface Timer {
  readonly at: number
  readonly seq: number
  readonly fire: () => void
}

const before = (a: Timer, b: Timer): boolean => a.at < b.at || (a.at === b.at && a.seq < b.seq)

/** A binary min-heap of timers ordered by (time, insertion order), so equal times fire FIFO. */
class TimerHeap {
  private readonly items: Array<Timer> = []
  private seq = 0
  get size(): number {
    return this.items.length
  }
  push(at: number, fire: () => void): void {
    const timer: Timer = { at, seq: this.seq++, fire }
    const items = this.items
    let i = items.length
    items.push(timer)
    while (i > 0) {
      const parent = (i - 1) >> 1
      const p = items[parent]!
      if (!before(timer, p)) break
      items[i] = p
      i = parent
    }
    items[i] = timer
  }
  peek(): Timer | undefined {
    return this.items[0]
  }
  pop(): Timer | undefined {
    const items = this.items
    const top = items[0]
    const last = items.pop()
    if (top === undefined || last === undefined || items.length === 0) return top
    let i = 0
    const n = items.length
    for (;;) {
      const l = 2 * i + 1
      if (l >= n) break
      const r = l + 1
      const c = r < n && before(items[r]!, items[l]!) ? r : l
      if (!before(items[c]!, last)) break
      items[i] = items[c]!
      i = c
    }
    items[i] = last
    return top
  }
}

/** Runs fiber tasks from a FIFO that the driver drains; never touches real timers. */
class VirtualScheduler implements Scheduler.Scheduler {
  tasks: Array<Scheduler.Task> = []
  head = 0
  wake: (() => void) | undefined = undefined
  scheduleTask(task: Scheduler.Task): void {
    this.tasks.push(task)
    if (this.wake !== undefined) {
      const wake = this.wake
      this.wake = undefined
      wake()
    }
  }
  shouldYield(fiber: Fiber.RuntimeFiber<unknown, unknown>): number | false {
    return Scheduler.defaultShouldYield(fiber)
  }
  /** Runs every queued task, including the ones they schedule. */
  drain(): void {
    while (this.head < this.tasks.length) {
      const task = this.tasks[this.head]!
      this.tasks[this.head++] = undefined as any
      task()
      if (this.head > 4096 && this.head * 2 > this.tasks.length) {
        this.tasks = this.tasks.slice(this.head)
        this.head = 0
      }
    }
    this.tasks.length = 0
    this.head = 0
  }
}

const NEVER_MILLIS = Number.POSITIVE_INFINITY

/** @internal */
export class VirtualClock implements Clock.Clock {
  readonly [Clock.ClockTypeId]: Clock.ClockTypeId = Clock.ClockTypeId
  constructor(
    public now: number,
    readonly timers: TimerHeap
  ) {}
  unsafeCurrentTimeMillis(): number {
    return this.now
  }
  unsafeCurrentTimeNanos(): bigint {
    return BigInt(Math.round(this.now * 1_000_000))
  }
  /** Calls `f` (outside any fiber) after `delayMillis` of virtual time; for model servers. */
  unsafeSchedule(delayMillis: number, f: () => void): void {
    this.timers.push(this.now + Math.max(0, delayMillis), f)
  }
  readonly currentTimeMillis: Effect.Effect<number> = Effect.sync(() => this.now)
  readonly currentTimeNanos: Effect.Effect<bigint> = Effect.sync(() => this.unsafeCurrentTimeNanos())
  sleep(duration: Duration.Duration): Effect.Effect<void> {
    const millis = Duration.toMillis(duration)
    if (millis === NEVER_MILLIS) return Effect.never
    // No canceler on purpose: a canceler wraps the wait in `onInterrupt`, which doubles the
    // cost of every sleep. An interrupted fiber ignores a late resume (the runtime guards
    // its async callback), so a stale timer fires harmlessly.
    return Effect.async<void>((resume) => {
      this.timers.push(this.now + Math.max(0, millis), () => resume(Effect.void))
    })
  }
}

class SeriesRecorder implements RecorderService {
  private readonly counters = new Map<string, Array<number>>()
  private readonly gaugeReads = new Map<string, () => number>()
  private readonly gaugeValues = new Map<string, Array<number>>()
  /** Index of the next sample boundary to record. */
  sampled = 0
  constructor(
    readonly clock: VirtualClock,
    readonly startMillis: number,
    readonly resolutionMillis: number
  ) {}
  readonly unsafeCounter = (name: string): ((amount?: number) => void) => {
    let series = this.counters.get(name)
    if (series === undefined) {
      series = []
      this.counters.set(name, series)
    }
    const values = series
    return (amount = 1) => {
      const index = Math.floor((this.clock.now - this.startMillis) / this.resolutionMillis)
      while (values.length <= index) values.push(0)
      values[index]! += amount
    }
  }
  readonly unsafeGauge = (name: string, read: () => number): void => {
    this.gaugeReads.set(name, read)
    if (!this.gaugeValues.has(name)) this.gaugeValues.set(name, [])
  }
  /** Samples every gauge at each boundary strictly before `until` (state is constant up to it). */
  sampleBefore(until: number): void {
    while (this.startMillis + this.sampled * this.resolutionMillis < until) {
      for (const [name, read] of this.gaugeReads) {
        const values = this.gaugeValues.get(name)!
        while (values.length < this.sampled) values.push(Number.NaN)
        values.push(read())
      }
      this.sampled++
    }
  }
  toTimeSeries(endMillis: number): TimeSeries {
    this.sampleBefore(endMillis + Number.EPSILON * Math.max(1, Math.abs(endMillis)) + 1e-9)
    const length = Math.max(this.sampled, ...Array.from(this.counters.values(), (v) => v.length))
    const pad = (values: Array<number>, fill: number) => {
      const out = values.slice(0, length)
      while (out.length < length) out.push(fill)
      return out
    }
    const counters: Record<string, ReadonlyArray<number>> = {}
    for (const [name, values] of this.counters) counters[name] = pad(values, 0)
    const gauges: Record<string, ReadonlyArray<number>> = {}
    for (const [name, values] of this.gaugeValues) {
      const last = values.length > 0 ? values[values.length - 1]! : Number.NaN
      gauges[name] = pad(values, last)
    }
    const times: Array<number> = []
    for (let i = 0; i < length; i++) times.push(i * this.resolutionMillis)
    return {
      startMillis: this.startMillis,
      resolutionMillis: this.resolutionMillis,
      times,
      counters,
      gauges
    }
  }
}

/** How many timer instants the driver processes before yielding to the outer runtime. */
const CHUNK = 5_000

/** @internal */
export const run = <A, E, R>(
  effect: Effect.Effect<A, E, R>,
  options: RunOptions = {}
): Effect.Effect<RunResult<A, E>, never, Exclude<R, Recorder>> =>
  Effect.flatMap(Effect.runtime<Exclude<R, Recorder>>(), (runtime) =>
    Effect.suspend(() => {
      const startMillis = options.startMillis ?? 0
      const resolutionMillis = Duration.toMillis(options.resolution ?? Duration.millis(100))
      if (!(resolutionMillis > 0) || !Number.isFinite(resolutionMillis)) {
        return Effect.dieMessage("Simulation.run: resolution must be a positive finite duration")
      }
      const deadline =
        options.maxDuration === undefined
          ? Number.POSITIVE_INFINITY
          : startMillis + Duration.toMillis(options.maxDuration)
      const timers = new TimerHeap()
      const clock = new VirtualClock(startMillis, timers)
      const scheduler = new VirtualScheduler()
      const recorder = new SeriesRecorder(clock, startMillis, resolutionMillis)
      let program = effect.pipe(
        Effect.provideService(Recorder, recorder),
        Effect.withClock(clock)
      ) as Effect.Effect<A, E, Exclude<R, Recorder>>
      if (options.seed !== undefined) program = Effect.withRandom(program, Random.make(options.seed))
      // Spans of virtual time are rarely wanted and cost more than the work they wrap.
      if (options.tracing !== true) program = Effect.withTracerEnabled(program, false)
      let exit: Exit.Exit<A, E> | undefined = undefined
      let events = 0
      let timedOut = false
      const fiber = Runtime.runFork(runtime)(program, { scheduler })
      fiber.addObserver((e) => {
        exit = e
      })

      /** Drives until the program ends, the chunk is used up, or nothing is runnable. */
      const step = (): "done" | "more" | "idle" => {
        for (let n = 0; n < CHUNK; n++) {
          scheduler.drain()
          if (exit !== undefined) return "done"
          const next = timers.peek()
          if (next === undefined) return "idle"
          if (next.at > deadline && !timedOut) {
            timedOut = true
            fiber.unsafeInterruptAsFork(FiberId.none)
            continue
          }
          recorder.sampleBefore(next.at)
          clock.now = next.at
          events++
          // Every timer due at this instant becomes runnable before any of them runs.
          for (let due = timers.peek(); due !== undefined && due.at === clock.now; due = timers.peek()) {
            timers.pop()
            due.fire()
          }
        }
        return "more"
      }

      const finish = (): RunResult<A, E> => ({
        exit: exit!,
        elapsedMillis: clock.now - startMillis,
        timedOut,
        events,
        timeSeries: recorder.toTimeSeries(clock.now)
      })

      const loop: Effect.Effect<RunResult<A, E>> = Effect.suspend(() => {
        const state = step()
        options.onProgress?.(clock.now - startMillis)
        if (state === "done") return Effect.succeed(finish())
        if (state === "more") return Effect.zipRight(Effect.yieldNow(), loop)
        // Nothing runnable in virtual time: the program waits on something outside
        // (a fiber of the enclosing runtime). Sleep until a task arrives.
        return Effect.zipRight(
          Effect.async<void>((resume) => {
            scheduler.wake = () => resume(Effect.void)
            return Effect.sync(() => {
              scheduler.wake = undefined
            })
          }),
          loop
        )
      })

      return Effect.onInterrupt(loop, () =>
        Effect.sync(() => {
          fiber.unsafeInterruptAsFork(FiberId.none)
          scheduler.drain()
        })
      )
    })
  )

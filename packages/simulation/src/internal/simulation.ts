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
import type * as Fiber from "effect/Fiber"
import * as Random from "effect/Random"
import type * as Scheduler from "effect/Scheduler"
import type * as Sim from "../Simulation.js"
import { seededRandom } from "./seededRandom.js"

/** @internal */
export type TimeSeries = Sim.TimeSeries

/** @internal */
export type RecorderService = Sim.RecorderService

/** @internal */
export type Recorder = Sim.Recorder

/** @internal */
export const Recorder = Context.Service<Sim.Recorder, RecorderService>(
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
  /** Called after every push: the driver may be idle, waiting for something to do. */
  onPush: (() => void) | undefined = undefined
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
    this.onPush?.()
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

/** The tasks of one priority, first in first out. */
class TaskQueue {
  tasks: Array<(() => void) | undefined> = []
  head = 0
  constructor(readonly priority: number) {}
}

/**
 * Runs fiber tasks from queues that the driver drains; never touches real timers.
 * Every fiber of the run gets this one dispatcher (`makeDispatcher` returns itself),
 * so the forks, yields and resumptions of all its fibers share one FIFO per priority.
 */
class VirtualScheduler implements Scheduler.Scheduler, Scheduler.SchedulerDispatcher {
  readonly executionMode = "sync" as const
  /** By ascending priority; the runtime's own tasks (forks, yields, latches) are all 0. */
  private readonly queues: Array<TaskQueue> = [new TaskQueue(0)]
  /** Called when a task arrives; the driver may be idle, waiting for something to do. */
  wake: (() => void) | undefined = undefined
  shouldYield(fiber: Fiber.Fiber<unknown, unknown>): boolean {
    // The same operation budget as Effect's default scheduler, so fibers interleave alike.
    return fiber.currentOpCount >= fiber.cache.maxOpsBeforeYield
  }
  makeDispatcher(): Scheduler.SchedulerDispatcher {
    return this
  }
  scheduleTask(task: () => void, priority: number): void {
    const queues = this.queues
    let i = 0
    while (i < queues.length && queues[i]!.priority < priority) i++
    if (i === queues.length || queues[i]!.priority !== priority) queues.splice(i, 0, new TaskQueue(priority))
    queues[i]!.tasks.push(task)
    this.wake?.()
  }
  flush(): void {
    this.drain()
  }
  /** Runs every queued task, including the ones they schedule: lowest priority first, FIFO within one. */
  drain(): void {
    const queues = this.queues
    for (;;) {
      let queue: TaskQueue | undefined = undefined
      for (let i = 0; i < queues.length; i++) {
        if (queues[i]!.head < queues[i]!.tasks.length) {
          queue = queues[i]!
          break
        }
      }
      if (queue === undefined) break
      const task = queue.tasks[queue.head]!
      queue.tasks[queue.head++] = undefined
      task()
      if (queue.head > 4096 && queue.head * 2 > queue.tasks.length) {
        queue.tasks = queue.tasks.slice(queue.head)
        queue.head = 0
      }
    }
    for (const queue of queues) {
      queue.tasks.length = 0
      queue.head = 0
    }
  }
}

const NEVER_MILLIS = Number.POSITIVE_INFINITY

/** @internal */
export class VirtualClock implements Clock.Clock {
  constructor(
    public now: number,
    readonly timers: TimerHeap,
    readonly scheduler: VirtualScheduler
  ) {}
  currentTimeMillisUnsafe(): number {
    return this.now
  }
  currentTimeNanosUnsafe(): bigint {
    return BigInt(Math.round(this.now * 1_000_000))
  }
  /** Virtual time never goes back, so it is its own monotonic time. */
  monotonicTimeNanosUnsafe(): bigint {
    return this.currentTimeNanosUnsafe()
  }
  /** Calls `f` (outside any fiber) after `delayMillis` of virtual time; for model servers. */
  scheduleUnsafe(delayMillis: number, f: () => void): void {
    this.timers.push(this.now + Math.max(0, delayMillis), f)
  }
  /**
   * Queues `f` as a task of the run's scheduler. A model server resumes its callers
   * through it: an Effect 4 `resume` runs the fiber at once, and a resumption queued
   * behind the other events of the same instant keeps them in the order they happened.
   */
  dispatchUnsafe(f: () => void): void {
    this.scheduler.scheduleTask(f, 0)
  }
  readonly currentTimeMillis: Effect.Effect<number> = Effect.sync(() => this.now)
  readonly currentTimeNanos: Effect.Effect<bigint> = Effect.sync(() => this.currentTimeNanosUnsafe())
  readonly monotonicTimeNanos: Effect.Effect<bigint> = this.currentTimeNanos
  sleep(duration: Duration.Duration): Effect.Effect<void> {
    const millis = Duration.toMillis(duration)
    if (millis === NEVER_MILLIS) return Effect.never
    // No canceler on purpose: a canceler adds an interrupt finalizer to every sleep.
    // An interrupted fiber ignores a late resume (the runtime marks its callback
    // resumed), so a stale timer fires harmlessly.
    return Effect.callback<void>((resume) => {
      // The timer queues the resumption instead of resuming: every timer due at an
      // instant becomes runnable before any of the fibers it wakes runs.
      this.timers.push(this.now + Math.max(0, millis), () =>
        this.scheduler.scheduleTask(() => resume(Effect.void), 0)
      )
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
  readonly counterUnsafe = (name: string): ((amount?: number) => void) => {
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
  readonly gaugeUnsafe = (name: string, read: () => number): void => {
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
): Effect.Effect<RunResult<A, E>, never, Exclude<R, Sim.Recorder>> =>
  Effect.flatMap(Effect.context<Exclude<R, Sim.Recorder>>(), (context) => {
    const startMillis = options.startMillis ?? 0
    const resolutionMillis = Duration.toMillis(
      Duration.fromInputUnsafe(options.resolution ?? Duration.millis(100))
    )
    if (!(resolutionMillis > 0) || !Number.isFinite(resolutionMillis)) {
      return Effect.die(new Error("Simulation.run: resolution must be a positive finite duration"))
    }
    const deadline =
      options.maxDuration === undefined
        ? Number.POSITIVE_INFINITY
        : startMillis + Duration.toMillis(Duration.fromInputUnsafe(options.maxDuration))
    const timers = new TimerHeap()
    const scheduler = new VirtualScheduler()
    const clock = new VirtualClock(startMillis, timers, scheduler)
    const recorder = new SeriesRecorder(clock, startMillis, resolutionMillis)
    let program: Effect.Effect<A, E, Exclude<R, Sim.Recorder>> = effect.pipe(
      Effect.provideService(Recorder, recorder),
      Effect.provideService(Clock.Clock, clock)
    )
    // The seeded generator draws what the Effect 3 line's `Random.make(seed)` drew.
    if (options.seed !== undefined)
      program = Effect.provideService(program, Random.Random, seededRandom(options.seed))
    // Spans of virtual time are rarely wanted and cost more than the work they wrap.
    if (options.tracing !== true) program = Effect.withTracerEnabled(program, false)
    let exit: Exit.Exit<A, E> | undefined = undefined
    let events = 0
    let timedOut = false
    /** Wakes the driver when it is idle and something happened (a task, a timer, the end). */
    let wake: (() => void) | undefined = undefined
    const poke = () => {
      if (wake === undefined) return
      const f = wake
      wake = undefined
      f()
    }
    scheduler.wake = poke
    timers.onPush = poke
    // The program sees the caller's context (its services), on the virtual scheduler. It
    // starts at once, on this stack; what it forks or yields waits for the first drain.
    const fiber = Effect.runForkWith(context)(program, { scheduler })
    fiber.addObserver((e) => {
      exit = e
      poke()
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
          fiber.interruptUnsafe()
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

    /**
     * Nothing runnable in virtual time: the program waits on something outside (a fiber
     * of the enclosing runtime). Sleeps until a task, a timer or the program's end
     * arrives; the driver is resumed through the outer fiber's dispatcher, not on the
     * stack of whatever woke it.
     */
    const idle = Effect.withFiber((driver) =>
      Effect.callback<void>((resume) => {
        wake = () => driver.currentDispatcher.scheduleTask(() => resume(Effect.void), 0)
        return Effect.sync(() => {
          wake = undefined
        })
      })
    )

    const loop: Effect.Effect<RunResult<A, E>> = Effect.suspend(() => {
      const state = step()
      options.onProgress?.(clock.now - startMillis)
      if (state === "done") return Effect.succeed(finish())
      if (state === "more") return Effect.andThen(Effect.yieldNow, loop)
      return Effect.andThen(idle, loop)
    })

    return Effect.onInterrupt(loop, () =>
      Effect.sync(() => {
        fiber.interruptUnsafe()
        scheduler.drain()
      })
    )
  })

import { ConcurrencyLimiter, CongestionWindow, LimitAlgorithm } from "@sluice/adaptive"
import { Criticality, Errors, Options } from "@sluice/core"
import { describe, expect, it } from "@effect/vitest"
import { Cause, Deferred, Duration, Effect, Exit, Fiber, Metric, Option } from "effect"
import { TestClock } from "effect/testing"
import { metricValue as metricState } from "./metricSnapshot.js"

/** Wraps an algorithm and records every sample it receives. */
const recording = (inner: LimitAlgorithm.LimitAlgorithm) => {
  const samples: Array<LimitAlgorithm.Sample> = []
  const algorithm: LimitAlgorithm.LimitAlgorithm = {
    name: `recording(${inner.name})`,
    get limit() {
      return inner.limit
    },
    onSample: (sample) => {
      samples.push({ ...sample })
      return inner.onSample(sample)
    }
  }
  return { algorithm, samples }
}

/** Lets forked fibers run until they block. */
const settle = Effect.repeat(Effect.yieldNow, { times: 20 })

/** A request that holds its permit until `gate` is completed. */
const gated = <A>(gate: Deferred.Deferred<A>, log?: Array<string>, name?: string) =>
  Effect.suspend(() => {
    if (log !== undefined && name !== undefined) log.push(name)
    return Deferred.await(gate)
  })

const failureOf = <A, E>(exit: Exit.Exit<A, E>): E | undefined =>
  Option.getOrUndefined(Exit.findErrorOption(exit))

describe("ConcurrencyLimiter", () => {
  it.effect("runs an uncontended effect and releases its permit", () =>
    Effect.gen(function* () {
      const { algorithm, samples } = recording(CongestionWindow.makeUnsafe())
      const limiter = yield* ConcurrencyLimiter.make({ algorithm: () => algorithm, key: "uncontended" })
      expect(yield* limiter.withLimiter(Effect.succeed(42))).toBe(42)
      expect(limiter.inFlight).toBe(0)
      expect(limiter.queued).toBe(0)
      expect(limiter.nextId).toBe(1)
      expect(samples).toEqual([{ id: 0, nextId: 1, outcome: "success", rtt: 0, inFlight: 1, now: 0 }])
      // one request at a time: in-flight + 1 = 2 caps growth, the window stays at 20
      expect(limiter.limit).toBe(20)
    })
  )

  it.effect("measures the round-trip time with the Clock and classifies outcomes", () =>
    Effect.gen(function* () {
      const { algorithm, samples } = recording(LimitAlgorithm.fixed(10))
      const limiter = yield* ConcurrencyLimiter.make({
        algorithm: () => algorithm,
        isDrop: (e) => e === "custom-drop"
      })
      const fiber = yield* Effect.forkChild(limiter.withLimiter(Effect.sleep(Duration.millis(50))))
      yield* TestClock.adjust(Duration.millis(50))
      yield* Fiber.join(fiber)
      yield* Effect.exit(limiter.withLimiter(Effect.fail(new Errors.Overloaded({ reason: "503" }))))
      yield* Effect.exit(limiter.withLimiter(Effect.fail(new Cause.TimeoutError())))
      yield* Effect.exit(
        limiter.withLimiter(
          Effect.fail(
            new Errors.DontRetry({ reason: "attempts", cause: new Errors.Overloaded({ reason: "503" }) })
          )
        )
      )
      yield* Effect.exit(limiter.withLimiter(Effect.fail(new Errors.DontRetry({ reason: "server" }))))
      yield* Effect.exit(limiter.withLimiter(Effect.fail("custom-drop")))
      yield* Effect.exit(limiter.withLimiter(Effect.fail("other")))
      yield* Effect.exit(limiter.withLimiter(Effect.die("defect")))
      yield* Effect.exit(limiter.withLimiter(Effect.interrupt))
      expect(samples.map((s) => s.outcome)).toEqual([
        "success",
        "dropped",
        "dropped",
        "dropped",
        "ignored",
        "dropped",
        "ignored",
        "ignored",
        "ignored"
      ])
      expect(samples[0]!.rtt).toBe(50)
      expect(samples.map((s) => s.id)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8])
      expect(limiter.inFlight).toBe(0)
    })
  )

  it.effect("waits for a permit at the limit and hands it over on release", () =>
    Effect.gen(function* () {
      const limiter = yield* ConcurrencyLimiter.make({ algorithm: () => LimitAlgorithm.fixed(2) })
      const gates = yield* Effect.all([Deferred.make<void>(), Deferred.make<void>(), Deferred.make<void>()])
      const log: Array<string> = []
      const fibers = yield* Effect.forEach(gates, (gate, i) =>
        Effect.forkChild(limiter.withLimiter(gated(gate, log, `r${i}`)))
      )
      yield* settle
      expect(log).toEqual(["r0", "r1"])
      expect(limiter.inFlight).toBe(2)
      expect(limiter.queued).toBe(1)
      yield* Deferred.succeed(gates[1], undefined)
      yield* settle
      expect(log).toEqual(["r0", "r1", "r2"])
      expect(limiter.inFlight).toBe(2)
      expect(limiter.queued).toBe(0)
      yield* Deferred.succeed(gates[0], undefined)
      yield* Deferred.succeed(gates[2], undefined)
      yield* Fiber.joinAll(fibers)
      expect(limiter.inFlight).toBe(0)
    })
  )

  it.effect("every refusal of a reason is one Overloaded value, each one counted", () =>
    Effect.gen(function* () {
      const key = "queue-full-shared"
      const limiter = yield* ConcurrencyLimiter.make({
        key,
        algorithm: () => LimitAlgorithm.fixed(1),
        maxQueue: 1
      })
      const gate = yield* Deferred.make<void>()
      const first = yield* Effect.forkChild(limiter.withLimiter(Deferred.await(gate)))
      const second = yield* Effect.forkChild(limiter.withLimiter(Deferred.await(gate)))
      yield* settle
      // a server answers the same error value once encoded: one value per reason, made once
      const a = failureOf(yield* Effect.exit(limiter.withLimiter(Effect.void)))
      const b = failureOf(yield* Effect.exit(limiter.withLimiter(Effect.void)))
      expect(a).toBeInstanceOf(Errors.Overloaded)
      expect(b).toBe(a)
      expect(
        yield* metricState("sluice_concurrency_limiter_rejected", { key, reason: "queue-full" })
      ).toMatchObject({ count: 2 })
      yield* Deferred.succeed(gate, undefined)
      yield* Fiber.joinAll([first, second])
      expect(limiter.inFlight).toBe(0)
    })
  )

  it.effect("a full queue fails with Overloaded without running the effect", () =>
    Effect.gen(function* () {
      const key = "queue-full-test"
      const limiter = yield* ConcurrencyLimiter.make({
        key,
        algorithm: () => LimitAlgorithm.fixed(1),
        maxQueue: 1
      })
      const gate = yield* Deferred.make<void>()
      const first = yield* Effect.forkChild(limiter.withLimiter(Deferred.await(gate)))
      const second = yield* Effect.forkChild(limiter.withLimiter(Deferred.await(gate)))
      yield* settle
      let ran = false
      const exit = yield* Effect.exit(limiter.withLimiter(Effect.sync(() => (ran = true))))
      expect(ran).toBe(false)
      const error = failureOf(exit)
      expect(error).toBeInstanceOf(Errors.Overloaded)
      expect((error as Errors.Overloaded).reason).toMatch(/queue-full/)
      expect(
        yield* metricState("sluice_concurrency_limiter_rejected", { key, reason: "queue-full" })
      ).toMatchObject({
        count: 1
      })
      yield* Deferred.succeed(gate, undefined)
      yield* Fiber.joinAll([first, second])
      expect(limiter.inFlight).toBe(0)
    })
  )

  it.effect("maxQueue 0 rejects at the limit immediately", () =>
    Effect.gen(function* () {
      const limiter = yield* ConcurrencyLimiter.make({
        algorithm: () => LimitAlgorithm.fixed(1),
        maxQueue: 0
      })
      const gate = yield* Deferred.make<void>()
      const first = yield* Effect.forkChild(limiter.withLimiter(Deferred.await(gate)))
      yield* settle
      const error = failureOf(yield* Effect.exit(limiter.withLimiter(Effect.void)))
      expect((error as Errors.Overloaded).reason).toMatch(/limit/)
      yield* Deferred.succeed(gate, undefined)
      yield* Fiber.join(first)
    })
  )

  it.effect("a wait longer than maxWait fails with Overloaded and leaves the queue", () =>
    Effect.gen(function* () {
      const key = "timeout-test"
      const limiter = yield* ConcurrencyLimiter.make({
        key,
        algorithm: () => LimitAlgorithm.fixed(1),
        maxWait: "100 millis"
      })
      const gate = yield* Deferred.make<void>()
      const first = yield* Effect.forkChild(limiter.withLimiter(Deferred.await(gate)))
      let ran = false
      const waiter = yield* Effect.forkChild(limiter.withLimiter(Effect.sync(() => (ran = true))))
      yield* settle
      expect(limiter.queued).toBe(1)
      yield* TestClock.adjust(Duration.millis(99))
      expect(limiter.queued).toBe(1)
      yield* TestClock.adjust(Duration.millis(1))
      const error = failureOf(yield* Fiber.await(waiter))
      expect((error as Errors.Overloaded).reason).toMatch(/queue-timeout/)
      expect(ran).toBe(false)
      expect(limiter.queued).toBe(0)
      expect(
        yield* metricState("sluice_concurrency_limiter_rejected", { key, reason: "queue-timeout" })
      ).toMatchObject({ count: 1 })
      yield* Deferred.succeed(gate, undefined)
      yield* Fiber.join(first)
      expect(limiter.inFlight).toBe(0)
      expect(limiter.nextId).toBe(1)
    })
  )

  const order = (order: "fifo" | "lifo") =>
    Effect.gen(function* () {
      const limiter = yield* ConcurrencyLimiter.make({ algorithm: () => LimitAlgorithm.fixed(1), order })
      const gate = yield* Deferred.make<void>()
      const log: Array<string> = []
      const holder = yield* Effect.forkChild(limiter.withLimiter(Deferred.await(gate)))
      yield* settle
      const waiters: Array<Fiber.Fiber<void, Errors.Overloaded>> = []
      for (const name of ["a", "b", "c"]) {
        waiters.push(yield* Effect.forkChild(limiter.withLimiter(Effect.sync(() => void log.push(name)))))
        yield* settle
      }
      yield* Deferred.succeed(gate, undefined)
      yield* Fiber.joinAll([holder, ...waiters])
      return log
    })

  it.effect("serves waiters FIFO by default", () =>
    Effect.map(order("fifo"), (log) => expect(log).toEqual(["a", "b", "c"]))
  )
  it.effect("serves waiters LIFO as an option", () =>
    Effect.map(order("lifo"), (log) => expect(log).toEqual(["c", "b", "a"]))
  )

  it.effect("serves the most critical waiter first", () =>
    Effect.gen(function* () {
      const limiter = yield* ConcurrencyLimiter.make({ algorithm: () => LimitAlgorithm.fixed(1) })
      const gate = yield* Deferred.make<void>()
      const log: Array<string> = []
      const holder = yield* Effect.forkChild(limiter.withLimiter(Deferred.await(gate)))
      yield* settle
      const levels: Array<Criticality.Criticality> = [
        "SHEDDABLE",
        "CRITICAL",
        "SHEDDABLE_PLUS",
        "CRITICAL_PLUS"
      ]
      const waiters = []
      for (const level of levels) {
        waiters.push(
          yield* Effect.forkChild(
            limiter
              .withLimiter(Effect.sync(() => void log.push(level)))
              .pipe(Criticality.withCriticality(level))
          )
        )
        yield* settle
      }
      expect(limiter.queuedOf("SHEDDABLE")).toBe(1)
      yield* Deferred.succeed(gate, undefined)
      yield* Fiber.joinAll([holder, ...waiters])
      expect(log).toEqual(["CRITICAL_PLUS", "CRITICAL", "SHEDDABLE_PLUS", "SHEDDABLE"])
    })
  )

  it.effect("a level below its guaranteed share is served first; unused shares are borrowed", () =>
    Effect.gen(function* () {
      const limiter = yield* ConcurrencyLimiter.make({
        algorithm: () => LimitAlgorithm.fixed(4),
        partitions: { CRITICAL: 0.5, SHEDDABLE: 0.5 }
      })
      const gate = yield* Deferred.make<void>()
      const log: Array<string> = []
      // below the limit, CRITICAL borrows SHEDDABLE's unused share: all four run
      const holders = yield* Effect.forEach([0, 1, 2, 3], () =>
        Effect.forkChild(limiter.withLimiter(Deferred.await(gate)))
      )
      yield* settle
      expect(limiter.inFlightOf("CRITICAL")).toBe(4)
      const critical = yield* Effect.forkChild(
        limiter.withLimiter(Effect.sync(() => void log.push("critical")))
      )
      yield* settle
      const sheddable = yield* Effect.forkChild(
        limiter
          .withLimiter(Effect.sync(() => void log.push("sheddable")))
          .pipe(Criticality.withCriticality("SHEDDABLE"))
      )
      yield* settle
      expect(limiter.queued).toBe(2)
      // at the limit, SHEDDABLE (0 of its 2 guaranteed) goes before the more critical waiter
      yield* Deferred.succeed(gate, undefined)
      yield* Fiber.joinAll([...holders, critical, sheddable])
      expect(log).toEqual(["sheddable", "critical"])
      expect(limiter.inFlight).toBe(0)
    })
  )

  it.effect("a share met exactly is met: 7 of 100 at 0.07 (7 < 0.07 × 100 in floating point)", () =>
    Effect.gen(function* () {
      const limiter = yield* ConcurrencyLimiter.make({
        algorithm: () => LimitAlgorithm.fixed(100),
        partitions: { SHEDDABLE: 0.07 }
      })
      const gate = yield* Deferred.make<void>()
      const first = yield* Deferred.make<void>()
      const log: Array<string> = []
      const sheddable = <A, E, R>(self: Effect.Effect<A, E, R>) =>
        self.pipe(Criticality.withCriticality("SHEDDABLE"))
      const released = yield* Effect.forkChild(limiter.withLimiter(Deferred.await(first)))
      const holders = yield* Effect.forEach(
        Array.from({ length: 99 }, (_, i) => i),
        (i) =>
          Effect.forkChild(
            i < 7
              ? sheddable(limiter.withLimiter(Deferred.await(gate)))
              : limiter.withLimiter(Deferred.await(gate))
          )
      )
      yield* settle
      expect(limiter.inFlightOf("SHEDDABLE")).toBe(7)
      const waiters = [
        yield* Effect.forkChild(
          sheddable(limiter.withLimiter(Effect.sync(() => void log.push("sheddable"))))
        ),
        yield* Effect.forkChild(limiter.withLimiter(Effect.sync(() => void log.push("critical"))))
      ]
      yield* settle
      expect(limiter.queued).toBe(2)
      // One slot frees: SHEDDABLE holds exactly its guaranteed 7, so criticality decides.
      yield* Deferred.succeed(first, undefined)
      yield* Fiber.join(released)
      yield* settle
      // (the CRITICAL waiter runs at once and frees its slot for the SHEDDABLE one)
      expect(log).toEqual(["critical", "sheddable"])
      yield* Deferred.succeed(gate, undefined)
      yield* Fiber.joinAll([...holders, ...waiters])
      expect(log).toEqual(["critical", "sheddable"])
    })
  )

  it.effect("without partitions the same scenario serves by criticality", () =>
    Effect.gen(function* () {
      const limiter = yield* ConcurrencyLimiter.make({ algorithm: () => LimitAlgorithm.fixed(4) })
      const gate = yield* Deferred.make<void>()
      const log: Array<string> = []
      const holders = yield* Effect.forEach([0, 1, 2, 3], () =>
        Effect.forkChild(limiter.withLimiter(Deferred.await(gate)))
      )
      yield* settle
      const critical = yield* Effect.forkChild(
        limiter.withLimiter(Effect.sync(() => void log.push("critical")))
      )
      yield* settle
      const sheddable = yield* Effect.forkChild(
        limiter
          .withLimiter(Effect.sync(() => void log.push("sheddable")))
          .pipe(Criticality.withCriticality("SHEDDABLE"))
      )
      yield* settle
      yield* Deferred.succeed(gate, undefined)
      yield* Fiber.joinAll([...holders, critical, sheddable])
      expect(log).toEqual(["critical", "sheddable"])
    })
  )

  it.effect("a full queue displaces the least critical waiter for more critical work", () =>
    Effect.gen(function* () {
      const limiter = yield* ConcurrencyLimiter.make({
        algorithm: () => LimitAlgorithm.fixed(1),
        maxQueue: 1
      })
      const gate = yield* Deferred.make<void>()
      const holder = yield* Effect.forkChild(limiter.withLimiter(Deferred.await(gate)))
      yield* settle
      let sheddableRan = false
      const sheddable = yield* Effect.forkChild(
        limiter
          .withLimiter(Effect.sync(() => (sheddableRan = true)))
          .pipe(Criticality.withCriticality("SHEDDABLE"))
      )
      yield* settle
      const critical = yield* Effect.forkChild(limiter.withLimiter(Effect.succeed("critical")))
      yield* settle
      const error = failureOf(yield* Fiber.await(sheddable))
      expect((error as Errors.Overloaded).reason).toMatch(/displaced/)
      expect(sheddableRan).toBe(false)
      // a SHEDDABLE arrival cannot displace a CRITICAL waiter: it is rejected
      const rejected = failureOf(
        yield* Effect.exit(limiter.withLimiter(Effect.void).pipe(Criticality.withCriticality("SHEDDABLE")))
      )
      expect((rejected as Errors.Overloaded).reason).toMatch(/queue-full/)
      yield* Deferred.succeed(gate, undefined)
      expect(yield* Fiber.join(critical)).toBe("critical")
      yield* Fiber.join(holder)
      expect(limiter.inFlight).toBe(0)
      expect(limiter.queued).toBe(0)
    })
  )

  it.effect(
    "an interrupted waiter leaves the queue; an interrupted runner releases and reports ignored",
    () =>
      Effect.gen(function* () {
        const { algorithm, samples } = recording(LimitAlgorithm.fixed(1))
        const limiter = yield* ConcurrencyLimiter.make({ algorithm: () => algorithm })
        const gate = yield* Deferred.make<void>()
        const runner = yield* Effect.forkChild(limiter.withLimiter(Deferred.await(gate)))
        let waiterRan = false
        const waiter = yield* Effect.forkChild(limiter.withLimiter(Effect.sync(() => (waiterRan = true))))
        yield* settle
        expect(limiter.queued).toBe(1)
        yield* Fiber.interrupt(waiter)
        expect(limiter.queued).toBe(0)
        expect(limiter.inFlight).toBe(1)
        yield* TestClock.adjust(Duration.millis(30))
        yield* Fiber.interrupt(runner)
        expect(limiter.inFlight).toBe(0)
        expect(waiterRan).toBe(false)
        expect(samples).toEqual([{ id: 0, nextId: 1, outcome: "ignored", rtt: 30, inFlight: 1, now: 30 }])
      })
  )

  it.effect("a caller interrupted before it reaches the gate never queues nor gets a permit", () =>
    Effect.gen(function* () {
      // The interruption is pending while the caller runs uninterruptibly (as Effect's HTTP
      // server runs middleware): the wait for a permit is interruptible on its own.
      for (const maxWait of [undefined, "1 second"] as const) {
        const limiter = yield* ConcurrencyLimiter.make({
          algorithm: () => LimitAlgorithm.fixed(1),
          maxQueue: 4,
          ...(maxWait === undefined ? {} : { maxWait })
        })
        const gate = yield* Deferred.make<void>()
        const holder = yield* Effect.forkChild(limiter.withLimiter(Deferred.await(gate)))
        yield* settle
        let ran = 0
        const late = yield* Effect.forkChild(
          Effect.uninterruptible(
            Effect.andThen(Effect.sleep("20 millis"), limiter.withLimiter(Effect.sync(() => ran++)))
          )
        )
        yield* settle
        const interrupting = yield* Effect.forkChild(Fiber.interrupt(late))
        yield* TestClock.adjust("20 millis")
        yield* Fiber.join(interrupting)
        expect(Exit.hasInterrupts(yield* Fiber.await(late))).toBe(true)
        expect(limiter.queued).toBe(0)
        yield* Deferred.succeed(gate, undefined)
        yield* Fiber.join(holder)
        yield* TestClock.adjust("2 seconds")
        expect(ran).toBe(0)
        expect(limiter.inFlight).toBe(0)
        expect(limiter.queued).toBe(0)
        expect(yield* limiter.withLimiter(Effect.succeed("next"))).toBe("next")
      }
    })
  )

  it.effect("a waiter interrupted just after being granted a permit gives it back", () =>
    Effect.gen(function* () {
      // k scheduler turns between the release and the interruption cover the window where
      // the permit is handed over but the waiter has not resumed yet
      for (let k = 0; k < 6; k++) {
        for (const maxWait of [undefined, "1 second"] as const) {
          const { algorithm, samples } = recording(LimitAlgorithm.fixed(1))
          const limiter = yield* ConcurrencyLimiter.make({
            algorithm: () => algorithm,
            ...(maxWait === undefined ? {} : { maxWait })
          })
          const gate = yield* Deferred.make<void>()
          const holder = yield* Effect.forkChild(limiter.withLimiter(Deferred.await(gate)))
          const waiter = yield* Effect.forkChild(limiter.withLimiter(Effect.void))
          yield* settle
          yield* Deferred.succeed(gate, undefined)
          for (let i = 0; i < k; i++) yield* Effect.yieldNow
          yield* Fiber.interrupt(waiter)
          yield* Fiber.join(holder)
          expect(limiter.inFlight).toBe(0)
          expect(limiter.queued).toBe(0)
          expect(limiter.nextId).toBe(2)
          // the holder reports; the waiter reports only if its effect got to run
          expect(samples.length).toBeGreaterThanOrEqual(1)
          expect(samples.length).toBeLessThanOrEqual(2)
          // the permit is usable again
          expect(yield* limiter.withLimiter(Effect.succeed("again"))).toBe("again")
        }
      }
    })
  )

  it.effect("drives the congestion window: one burst of overload errors counts once", () =>
    Effect.gen(function* () {
      const cw = CongestionWindow.makeUnsafe({ initial: 4 })
      const limiter = yield* ConcurrencyLimiter.make({ algorithm: () => cw })
      const gates = yield* Effect.forEach([0, 1, 2, 3], () => Deferred.make<void, Errors.Overloaded>())
      const fibers = yield* Effect.forEach(gates, (gate) =>
        Effect.forkChild(Effect.exit(limiter.withLimiter(Deferred.await(gate))))
      )
      yield* settle
      expect(limiter.inFlight).toBe(4)
      // the whole burst fails: only the first error halves the window
      for (const gate of gates) yield* Deferred.fail(gate, new Errors.Overloaded({ reason: "503" }))
      yield* Fiber.joinAll(fibers)
      expect(cw.cwnd).toBe(2)
      expect(cw.ssthresh).toBe(2)
      expect(limiter.inFlight).toBe(0)
      // a failure of a request sent after the burst is a new signal
      yield* Effect.exit(limiter.withLimiter(Effect.fail(new Errors.Overloaded({ reason: "503" }))))
      expect(cw.cwnd).toBe(1)
    })
  )

  it.effect("updates its metrics in the registry of the context it was made in", () =>
    Effect.gen(function* () {
      const key = "registry-test"
      const registry: Metric.MetricRegistry = new Map()
      const limiter = yield* ConcurrencyLimiter.make({
        key,
        maxQueue: 0,
        algorithm: () => LimitAlgorithm.fixed(1)
      }).pipe(Effect.provideService(Metric.MetricRegistry, registry))
      const gate = yield* Deferred.make<void>()
      const holder = yield* Effect.forkChild(limiter.withLimiter(Deferred.await(gate)))
      yield* settle
      expect(failureOf(yield* Effect.exit(limiter.withLimiter(Effect.void)))).toBeInstanceOf(
        Errors.Overloaded
      )
      const rejected = metricState("sluice_concurrency_limiter_rejected", { key, reason: "limit" })
      expect(yield* rejected.pipe(Effect.provideService(Metric.MetricRegistry, registry))).toMatchObject({
        count: 1
      })
      expect(yield* rejected).toBeUndefined()
      yield* Deferred.succeed(gate, undefined)
      yield* Fiber.join(holder)
    })
  )

  it.effect("reports limit, in-flight and queued gauges", () =>
    Effect.gen(function* () {
      const key = "gauges-test"
      const limiter = yield* ConcurrencyLimiter.make({ key, algorithm: () => LimitAlgorithm.fixed(1) })
      const gate = yield* Deferred.make<void>()
      const fibers = yield* Effect.forEach([0, 1], () =>
        Effect.forkChild(limiter.withLimiter(Deferred.await(gate)))
      )
      yield* settle
      expect(yield* metricState("sluice_concurrency_limiter_limit", { key })).toMatchObject({ value: 1 })
      expect(yield* metricState("sluice_concurrency_limiter_in_flight", { key })).toMatchObject({ value: 1 })
      expect(yield* metricState("sluice_concurrency_limiter_queued", { key })).toMatchObject({ value: 1 })
      yield* Deferred.succeed(gate, undefined)
      yield* Fiber.joinAll(fibers)
      expect(yield* metricState("sluice_concurrency_limiter_in_flight", { key })).toMatchObject({ value: 0 })
      expect(yield* metricState("sluice_concurrency_limiter_queued", { key })).toMatchObject({ value: 0 })
    })
  )

  it.effect("the service keeps one limiter per key, bounded in number", () =>
    Effect.gen(function* () {
      const service = yield* ConcurrencyLimiter.ConcurrencyLimiter
      const a = yield* service.get("a")
      expect(yield* service.get("a")).toBe(a)
      expect(yield* Effect.succeed(1).pipe(ConcurrencyLimiter.withLimiter("b"))).toBe(1)
      expect(yield* ConcurrencyLimiter.withLimiter(Effect.succeed(2), "a")).toBe(2)
      expect(yield* ConcurrencyLimiter.withLimiter(Effect.succeed(3))).toBe(3)
      // "a", "b" and "default" exist; maxKeys is 3, so a fourth key forgets the least recently used
      expect(service.size).toBe(3)
      yield* service.get("c")
      expect(service.size).toBe(3)
      expect([...service.keys()].sort()).toEqual(["a", "c", "default"])
      expect(a.limit).toBe(7)
    }).pipe(
      Effect.provide(ConcurrencyLimiter.layer({ maxKeys: 3, algorithm: () => LimitAlgorithm.fixed(7) }))
    )
  )

  it.effect("eviction prefers idle keys over busy ones", () =>
    Effect.gen(function* () {
      const service = yield* ConcurrencyLimiter.makeService({ maxKeys: 2 })
      const gate = yield* Deferred.make<void>()
      const busy = yield* Effect.forkChild(service.withLimiter(Deferred.await(gate), "busy"))
      yield* settle
      yield* service.get("idle")
      yield* service.get("new")
      expect([...service.keys()].sort()).toEqual(["busy", "new"])
      yield* Deferred.succeed(gate, undefined)
      yield* Fiber.join(busy)
    })
  )

  it.effect("withLimiter is dual", () =>
    Effect.gen(function* () {
      const limiter = ConcurrencyLimiter.makeUnsafe()
      expect(yield* Effect.succeed(1).pipe(ConcurrencyLimiter.withLimiter(limiter))).toBe(1)
      expect(yield* ConcurrencyLimiter.withLimiter(Effect.succeed(2), limiter)).toBe(2)
    })
  )

  it.effect("rejects bad options naming the field", () =>
    Effect.gen(function* () {
      const cases: Array<[ConcurrencyLimiter.ServiceOptions, RegExp]> = [
        [{ maxQueue: -1 }, /maxQueue/],
        [{ maxQueue: 1.5 }, /maxQueue/],
        [{ maxWait: -5 }, /maxWait/],
        [{ order: "random" as any }, /order/],
        [{ partitions: { CRITICAL: 0.8, SHEDDABLE: 0.5 } }, /partitions/],
        [{ partitions: { CRITICAL: 1.5 } }, /CRITICAL/],
        [{ algorithm: 3 as any }, /algorithm/],
        [{ isDrop: "yes" as any }, /isDrop/],
        [{ maxKeys: 0 }, /maxKeys/]
      ]
      for (const [bad, field] of cases) {
        const exit = yield* Effect.exit(ConcurrencyLimiter.makeService(bad))
        expect(Exit.isFailure(exit)).toBe(true)
        const error = failureOf(exit)
        expect(error).toBeInstanceOf(Options.InvalidOptions)
        expect((error as Options.InvalidOptions).message).toMatch(field)
        const layerExit = yield* Effect.exit(
          Effect.provide(ConcurrencyLimiter.ConcurrencyLimiter, ConcurrencyLimiter.layer(bad))
        )
        expect(failureOf(layerExit)).toBeInstanceOf(Options.InvalidOptions)
      }
      expect(() => ConcurrencyLimiter.makeUnsafe({ maxQueue: -1 })).toThrow(/maxQueue/)
      // a factory that throws InvalidOptions fails construction, not the first call
      const badFactory = () => CongestionWindow.makeUnsafe({ backoffRatio: 2 })
      const serviceError = failureOf(
        yield* Effect.exit(ConcurrencyLimiter.makeService({ algorithm: badFactory }))
      )
      expect((serviceError as Options.InvalidOptions).message).toMatch(/backoffRatio/)
      const limiterError = failureOf(yield* Effect.exit(ConcurrencyLimiter.make({ algorithm: badFactory })))
      expect((limiterError as Options.InvalidOptions).message).toMatch(/backoffRatio/)
    })
  )
})

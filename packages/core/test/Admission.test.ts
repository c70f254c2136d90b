import { describe, expect, it } from "@effect/vitest"
import { Admission, CircuitBreaker, Criticality, Errors } from "@sluice/core"
import { Deferred, Effect, Exit, Fiber, Option } from "effect"
import { TestClock } from "effect/testing"
import * as fc from "fast-check"

/** A gate that records what it was told; refuses, waits or admits as scripted. */
const recorder = (name: string, mode: () => "admit" | "refuse" | "wait") => {
  const log: Array<string> = []
  let open = 0
  const gate: Admission.Gate<number, Errors.Overloaded> = {
    tryEnter: (entry) => {
      const m = mode()
      log.push(`${name}:try:${entry.criticality}`)
      if (m === "refuse") return Admission.refuse(new Errors.Overloaded({ reason: name, origin: "local" }))
      if (m === "wait") return Admission.Wait
      open++
      return entry.now
    },
    enter: () =>
      Effect.sync(() => {
        open++
        return 0
      }),
    settle: (_ticket, outcome) => {
      open--
      log.push(`${name}:${outcome}`)
    }
  }
  return { gate, log, open: () => open }
}

describe("Admission.guard", () => {
  it.effect("enters outermost first, settles innermost first, with the outcome computed once", () =>
    Effect.gen(function* () {
      const a = recorder("a", () => "admit")
      const b = recorder("b", () => "admit")
      const guard = Admission.guard([a.gate, b.gate])
      expect(yield* guard(Effect.succeed(1)).pipe(Criticality.withCriticality("SHEDDABLE"))).toBe(1)
      yield* Effect.exit(guard(Effect.fail(new Errors.Overloaded({ reason: "503" }))))
      expect(a.log).toEqual(["a:try:SHEDDABLE", "a:success", "a:try:CRITICAL", "a:dropped"])
      expect(b.log).toEqual(["b:try:SHEDDABLE", "b:success", "b:try:CRITICAL", "b:dropped"])
    })
  )

  it.effect("a refusal settles the gates already passed as refused and fails with the refusal", () =>
    Effect.gen(function* () {
      const a = recorder("a", () => "admit")
      const b = recorder("b", () => "refuse")
      let ran = false
      const exit = yield* Effect.exit(Admission.guard([a.gate, b.gate])(Effect.sync(() => (ran = true))))
      expect(ran).toBe(false)
      expect(Exit.isFailure(exit) && Option.isSome(Exit.getCause(exit))).toBeTruthy()
      expect(a.log).toEqual(["a:try:CRITICAL", "a:refused"])
      expect(a.open()).toBe(0)
    })
  )

  it.effect("orElse continues after a failure like Effect.catch", () =>
    Effect.gen(function* () {
      const a = recorder("a", () => "admit")
      const guarded = Admission.guard([a.gate], (error) =>
        Effect.succeed(`recovered ${(error as Error).message}`)
      )
      expect(yield* guarded(Effect.fail(new Error("x")))).toBe("recovered x")
      expect(a.log).toEqual(["a:try:CRITICAL", "a:failed"])
    })
  )

  it.effect("interrupting the work settles every ticket as ignored", () =>
    Effect.gen(function* () {
      const a = recorder("a", () => "admit")
      const fiber = yield* Effect.forkChild(Admission.guard([a.gate])(Effect.never))
      yield* TestClock.adjust("1 millis")
      yield* Fiber.interrupt(fiber)
      expect(a.log).toEqual(["a:try:CRITICAL", "a:ignored"])
      expect(a.open()).toBe(0)
    })
  )

  it("property: every ticket is settled exactly once, whatever refuses, waits, fails or is interrupted", async () => {
    const modes = fc.constantFrom("admit" as const, "refuse" as const, "wait" as const)
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(modes, modes, fc.constantFrom("ok", "fail", "die", "interrupt")), {
          maxLength: 30
        }),
        async (script) => {
          let i = 0
          let current: readonly [string, string, string] = ["admit", "admit", "ok"]
          const a = recorder("a", () => current[0] as "admit")
          const b = recorder("b", () => current[1] as "admit")
          const guard = Admission.guard([a.gate, b.gate])
          await Effect.runPromise(
            Effect.gen(function* () {
              for (const step of script) {
                current = step
                i++
                const gate = yield* Deferred.make<void>()
                const work =
                  step[2] === "ok"
                    ? Effect.succeed(i)
                    : step[2] === "fail"
                      ? Effect.fail(new Errors.Overloaded({ reason: "503" }))
                      : step[2] === "die"
                        ? Effect.die("bug")
                        : Deferred.await(gate)
                const fiber = yield* Effect.forkChild(guard(work))
                if (step[2] === "interrupt") {
                  yield* Effect.yieldNow
                  yield* Fiber.interrupt(fiber)
                } else yield* Fiber.await(fiber)
              }
            })
          )
          expect(a.open()).toBe(0)
          expect(b.open()).toBe(0)
          // a settles once per step it admitted (b refusing settles a as refused)
          const settles = (log: Array<string>) => log.filter((l) => !l.includes(":try:")).length
          const admitted = script.filter(([m]) => m !== "refuse").length
          expect(settles(a.log)).toBe(admitted)
        }
      ),
      { numRuns: 60 }
    )
  })

  it.effect(
    "the breaker's gate: a refusal of a gate inside it and the caller's interruption count nothing",
    () =>
      Effect.gen(function* () {
        const breaker = yield* CircuitBreaker.make({ name: "gates", consecutiveFailures: 1 })
        const inner = recorder("inner", () => "refuse")
        const guard = Admission.guard([breaker.gate, inner.gate])
        for (let i = 0; i < 10; i++) yield* Effect.exit(guard(Effect.fail(new Error("never runs"))))
        expect(yield* breaker.state).toBe("closed")
        const fiber = yield* Effect.forkChild(Admission.guard([breaker.gate])(Effect.never))
        yield* TestClock.adjust("1 millis")
        yield* Fiber.interrupt(fiber)
        expect(yield* breaker.state).toBe("closed")
        // A remote drop and an application error count; a 4xx-like "ignored" does not.
        const ignored = { _tag: "ResponseError", response: { status: 404 } }
        yield* Effect.exit(Admission.guard([breaker.gate])(Effect.fail(ignored)))
        expect(yield* breaker.state).toBe("closed")
        yield* Effect.exit(
          Admission.guard([breaker.gate])(Effect.fail(new Errors.Overloaded({ reason: "503" })))
        )
        expect(yield* breaker.state).toBe("open")
        const refused = yield* Effect.exit(Admission.guard([breaker.gate])(Effect.succeed(1)))
        expect(Exit.isFailure(refused) && Option.isSome(Exit.getCause(refused))).toBeTruthy()
      })
  )

  it.effect("the breaker's gate: isFailure judges the typed error settle is given", () =>
    Effect.gen(function* () {
      const breaker = yield* CircuitBreaker.make({
        name: "gates-isFailure",
        consecutiveFailures: 2,
        isFailure: (e) => !(e instanceof Errors.Overloaded)
      })
      const guard = Admission.guard([breaker.gate])
      const drop = Effect.fail(new Errors.Overloaded({ reason: "503" }))
      for (let i = 0; i < 5; i++) yield* Effect.exit(guard(drop))
      expect(yield* breaker.state).toBe("closed")
      yield* Effect.exit(guard(Effect.fail(new Error("x"))))
      yield* Effect.exit(guard(drop)) // counts as a success: resets the run
      yield* Effect.exit(guard(Effect.fail(new Error("x"))))
      expect(yield* breaker.state).toBe("closed")
      yield* Effect.exit(guard(Effect.die("bug")))
      expect(yield* breaker.state).toBe("open")
    })
  )

  it("property: a breaker between two gates settles every ticket once and never counts a refusal or an interruption", async () => {
    const modes = fc.constantFrom("admit" as const, "refuse" as const, "wait" as const)
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(modes, modes, fc.constantFrom("ok", "fail", "die", "interrupt")), {
          maxLength: 30
        }),
        async (script) => {
          let current: readonly [string, string, string] = ["admit", "admit", "ok"]
          const a = recorder("a", () => current[0] as "admit")
          const b = recorder("b", () => current[1] as "admit")
          const breaker = Effect.runSync(
            CircuitBreaker.make({ name: "property", consecutiveFailures: 1, openFor: "1 millis" })
          )
          // Counts the breaker's open tickets around its own gate.
          let open = 0
          let settled = 0
          const counted: Admission.Gate<CircuitBreaker.Ticket, Errors.CircuitOpen> = {
            tryEnter: (entry) => {
              const result = breaker.gate.tryEnter(entry)
              if (result !== Admission.Wait && (result as { _tag?: unknown })._tag !== "Refused") open++
              return result
            },
            enter: (entry) => Effect.tap(breaker.gate.enter(entry), () => Effect.sync(() => open++)),
            settle: (ticket, outcome, cause) => {
              open--
              settled++
              breaker.gate.settle(ticket, outcome, cause)
            }
          }
          const guard = Admission.guard([a.gate, counted, b.gate])
          let failures = 0
          await Effect.runPromise(
            Effect.gen(function* () {
              for (const step of script) {
                current = step
                const gate = yield* Deferred.make<void>()
                const work =
                  step[2] === "ok"
                    ? Effect.void
                    : step[2] === "fail"
                      ? Effect.fail(new Errors.Overloaded({ reason: "503" }))
                      : step[2] === "die"
                        ? Effect.die("bug")
                        : Deferred.await(gate)
                const before = settled
                const fiber = yield* Effect.forkChild(guard(work))
                if (step[2] === "interrupt") {
                  yield* Effect.yieldNow
                  yield* Fiber.interrupt(fiber)
                } else yield* Fiber.await(fiber)
                // Only work that ran and failed may open the breaker.
                const ran = settled > before && step[1] !== "refuse" && step[2] !== "interrupt"
                if (ran && (step[2] === "fail" || step[2] === "die")) failures++
                if (failures === 0) expect(yield* breaker.state).toBe("closed")
                yield* TestClock.adjust("1 millis")
              }
            }).pipe(Effect.provide(TestClock.layer()))
          )
          expect(open).toBe(0)
          expect(a.open()).toBe(0)
          expect(b.open()).toBe(0)
        }
      ),
      { numRuns: 30 }
    )
  })
})

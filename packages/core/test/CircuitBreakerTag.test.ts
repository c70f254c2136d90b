import { CircuitBreaker, type Errors, type Options } from "@sluice/core"
import { describe, expect, expectTypeOf, it } from "@effect/vitest"
import { Effect, Layer } from "effect"

class Postgres extends CircuitBreaker.Tag("postgres")<Postgres>() {}
class Redis extends CircuitBreaker.Tag("redis")<Redis>() {}

const program = Effect.flatMap(Postgres, (breaker) => breaker.withBreaker(Effect.succeed(breaker.name)))

describe("CircuitBreaker tags", () => {
  it("a keyed breaker is a requirement of its own type", () => {
    expectTypeOf(program).toEqualTypeOf<Effect.Effect<string, Errors.CircuitOpen, Postgres>>()
    const withRedis = program.pipe(Effect.provide(CircuitBreaker.layer({ name: "redis" }, Redis)))
    // providing the "redis" breaker leaves the "postgres" one required
    expectTypeOf<Effect.Services<typeof withRedis>>().toEqualTypeOf<Postgres>()
    const runWithoutPostgres = () =>
      // @ts-expect-error: Postgres is missing from the context
      Effect.runPromise(withRedis)
    expect(typeof runWithoutPostgres).toBe("function")
    // the default tag does not stand in for a keyed one either
    expectTypeOf(program.pipe(Effect.provide(CircuitBreaker.layer({ name: "default" })))).toEqualTypeOf<
      Effect.Effect<string, Errors.CircuitOpen | Options.InvalidOptions, Postgres>
    >()
    expectTypeOf(Postgres.key).toEqualTypeOf<"@sluice/core/CircuitBreaker/postgres">()
  })

  it.effect("keyed breakers are provided and looked up by their class", () =>
    Effect.gen(function* () {
      const name = yield* program
      expect(name).toBe("postgres")
      const both = yield* Effect.all([Postgres, Redis, CircuitBreaker.CircuitBreaker])
      expect(both.map((b) => b.name)).toEqual(["postgres", "redis", "default"])
    }).pipe(
      Effect.provide(
        Layer.mergeAll(
          CircuitBreaker.layer({ name: "postgres" }, Postgres),
          CircuitBreaker.layer({ name: "redis" }, Redis),
          CircuitBreaker.layer({ name: "default" })
        )
      )
    )
  )

  it("layer's error channel is InvalidOptions", () => {
    expectTypeOf(CircuitBreaker.layer({ name: "p" }, Postgres)).toEqualTypeOf<
      Layer.Layer<Postgres, Options.InvalidOptions>
    >()
  })
})

import { Duration, Effect, Exit, Pull, Schedule } from "effect"

/** Steps a schedule with the given inputs, returning the delay (ms) of each recurrence until it stops. */
export const delaysOf = <Out, In, E, R>(
  schedule: Schedule.Schedule<Out, In, E, R>,
  inputs: ReadonlyArray<In>
) =>
  Effect.gen(function* () {
    const step = yield* Schedule.toStep(schedule)
    let now = 0
    const delays: Array<number> = []
    for (const input of inputs) {
      const exit = yield* Effect.exit(step(now, input))
      if (Exit.isFailure(exit)) {
        if (Pull.isDoneCause(exit.cause)) break
        return yield* Effect.failCause(exit.cause)
      }
      const delay = Duration.toMillis(exit.value[1])
      delays.push(delay)
      now += delay
    }
    return delays
  })

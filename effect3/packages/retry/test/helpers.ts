import { Effect, Schedule, ScheduleDecision, ScheduleIntervals } from "effect"

/** Steps a schedule with the given inputs, returning the delay (ms) of each recurrence until it stops. */
export const delaysOf = <Out, In, R>(schedule: Schedule.Schedule<Out, In, R>, inputs: ReadonlyArray<In>) =>
  Effect.gen(function* () {
    let state = schedule.initial
    let now = 0
    const delays: Array<number> = []
    for (const input of inputs) {
      const [next, , decision] = yield* schedule.step(now, input, state)
      state = next
      if (ScheduleDecision.isDone(decision)) break
      const delay = ScheduleIntervals.start(decision.intervals) - now
      delays.push(delay)
      now += delay
    }
    return delays
  })

import * as Deadlines from "@sluice/kernel/quota/Deadlines"
import { describe, expect, it } from "vitest"

/** A queue and a log of what its steps and expiries did, driven by a time the test sets. */
const harness = (options: Omit<Deadlines.Options, "onBusy">) => {
  let busy = 0
  const queue = new Deadlines.DeadlineQueue({ ...options, onBusy: () => busy++ })
  const expired: Array<[string, boolean]> = []
  const call = (name: string, start: number) =>
    queue.register(start, (stalled) => {
      expired.push([name, stalled])
    })
  return { queue, expired, call, busy: () => busy }
}

describe("DeadlineQueue", () => {
  it("wakes its timer once per busy period; sleeps until the oldest deadline less the slack", () => {
    const { busy, call, queue } = harness({ timeoutMs: 15 })
    call("a", 0)
    call("b", 2)
    expect(busy()).toBe(1)
    // the slack is a third of the timeout, between 0.5 and 5 ms
    expect(Deadlines.slackFor(15)).toBe(5)
    expect(Deadlines.slackFor(5)).toBeCloseTo(5 / 3)
    expect(Deadlines.slackFor(1)).toBe(0.5)
    expect(queue.step(0)).toEqual({ _tag: "Sleep", ms: 10 })
  })

  it("gives one I/O turn before expiring, then expires what is still due, in order", () => {
    const { call, expired, queue } = harness({ timeoutMs: 15 })
    const a = call("a", 0)
    call("b", 1)
    call("c", 30)
    expect(queue.step(0)).toEqual({ _tag: "Sleep", ms: 10 })
    expect(queue.step(10)).toEqual({ _tag: "IoTurn" })
    // an answer read during the I/O turn settles its call first
    expect(queue.settle(a)).toBe(true)
    expect(queue.settle(a)).toBe(false)
    // b is due at 1 + 15: the timer wakes the slack (5 ms) before
    expect(queue.step(10)).toEqual({ _tag: "Sleep", ms: 16 - 5 - 10 })
    expect(queue.step(11)).toEqual({ _tag: "IoTurn" })
    expect(queue.step(11)).toEqual({ _tag: "Sleep", ms: 45 - 5 - 11 })
    expect(expired).toEqual([["b", false]])
    expect(queue.step(40)).toEqual({ _tag: "IoTurn" })
    expect(queue.step(40)).toEqual({ _tag: "Idle" })
    expect(expired).toEqual([
      ["b", false],
      ["c", false]
    ])
  })

  it("a late wake marks the calls it expires stalled; a hard bound expires them at the deadline anyway", () => {
    const { call, expired, queue } = harness({ timeoutMs: 15 })
    call("a", 0)
    expect(queue.step(0)).toEqual({ _tag: "Sleep", ms: 10 })
    // the timer meant for 10 ms fires at 60: the process did not run
    expect(queue.step(60)).toEqual({ _tag: "IoTurn" })
    expect(queue.step(60)).toEqual({ _tag: "Idle" })
    expect(expired).toEqual([["a", true]])
  })

  it("with maxTimeout above the timeout: a stall is not the calls' time, and a long one is granted again", () => {
    const { call, expired, queue } = harness({ timeoutMs: 15, maxTimeoutMs: 1000 })
    call("a", 0)
    expect(queue.step(0)).toEqual({ _tag: "Sleep", ms: 10 })
    // 50 ms late: 50 ms are not counted against the call, and none expires before 60 + 50
    expect(queue.step(60)).toEqual({ _tag: "Sleep", ms: 110 - 5 - 60 })
    expect(expired).toEqual([])
    expect(queue.step(105)).toEqual({ _tag: "IoTurn" })
    expect(queue.step(105)).toEqual({ _tag: "Idle" })
    expect(expired).toEqual([["a", false]])
  })

  it("an ordered queue learns the silences the store came back from, up to maxTimeout", () => {
    const { call, expired, queue } = harness({ timeoutMs: 15, maxTimeoutMs: 100, ordered: true })
    const a = call("a", 0)
    expect(queue.step(0)).toEqual({ _tag: "Sleep", ms: 10 })
    // answered after 12 ms of silence: later calls may wait 24 ms of silence
    queue.settle(a)
    queue.progress(12, a)
    call("b", 12)
    expect(queue.step(12)).toEqual({ _tag: "Sleep", ms: 12 + 24 - 5 - 12 })
    // another answer moves the silence's start: b now expires 24 ms after it
    queue.progress(30)
    expect(queue.step(31)).toEqual({ _tag: "Sleep", ms: 30 + 24 - 5 - 31 })
    expect(expired).toEqual([])
  })
})

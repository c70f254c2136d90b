import * as Stall from "@sluice/kernel/deadline/Stall"
import { describe, expect, it } from "vitest"

describe("Stall", () => {
  it("counts the time since the later of the due time and the last time the process ran", () => {
    expect(Stall.stalledFor(500, 100, -Infinity)).toBe(400)
    expect(Stall.stalledFor(500, 100, 498)).toBe(2)
    expect(Stall.stalledFor(101, 100, -Infinity)).toBe(1)
    // a timer read before its due time has not stalled
    expect(Stall.stalledFor(90, 100, -Infinity)).toBe(0)
  })

  it("a stall is more than 3 ms: a timer's granularity and a busy VM's hiccups are not", () => {
    expect(Stall.STALL_MS).toBe(3)
    expect(Stall.isStall(3)).toBe(false)
    expect(Stall.isStall(3.01)).toBe(true)
    expect(Stall.isStall(Stall.stalledFor(500, 100, 498))).toBe(false)
    expect(Stall.isStall(Stall.stalledFor(500, 100, -Infinity))).toBe(true)
  })

  it("a miss is the process's own only for a stall at least as long as the timeout", () => {
    // the shape: a 400 ms stall past a 100 ms attempt timeout
    expect(Stall.isOwnMiss(Stall.stalledFor(500, 100, -Infinity), 100)).toBe(true)
    // a timer 30 ms late on a loaded host, against a 50 ms timeout: the backend had its time
    expect(Stall.isOwnMiss(30, 50)).toBe(false)
    expect(Stall.isOwnMiss(50, 50)).toBe(true)
    // never below the stall rule itself, however short the timeout
    expect(Stall.isOwnMiss(3, 2)).toBe(false)
  })
})

import * as Outgoing from "@sluice/kernel/wire/Outgoing"
import { describe, expect, it } from "vitest"

describe("Outgoing", () => {
  it("a request's key is its URL's host and port, lower case; anything else is default", () => {
    expect(Outgoing.hostOf("http://Backend:8080/x?y#z")).toBe("backend:8080")
    expect(Outgoing.hostOf("https://api.example.com")).toBe("api.example.com")
    expect(Outgoing.hostOf("unix+http://sock/path")).toBe("sock")
    expect(Outgoing.hostOf("/relative")).toBe("default")
    expect(Outgoing.hostOf("")).toBe("default")
  })

  it("only idempotent methods are retried by default; a client or a call may say otherwise", () => {
    for (const m of ["GET", "HEAD", "OPTIONS", "PUT", "DELETE", "TRACE"])
      expect(Outgoing.isRetried(m, undefined, false)).toBe(true)
    for (const m of ["POST", "PATCH", "get"]) expect(Outgoing.isRetried(m, undefined, false)).toBe(false)
    expect(Outgoing.isRetried("POST", undefined, true)).toBe(true)
    expect(Outgoing.isRetried("POST", true, false)).toBe(true)
    expect(Outgoing.isRetried("GET", false, true)).toBe(false)
  })
})

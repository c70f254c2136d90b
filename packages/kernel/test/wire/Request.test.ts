import * as Request from "@sluice/kernel/wire/Request"
import { describe, expect, it } from "vitest"

describe("Request", () => {
  it("a request's key is its URL's host and port, lower case; anything else is default", () => {
    expect(Request.hostOf("http://Backend:8080/x?y#z")).toBe("backend:8080")
    expect(Request.hostOf("https://api.example.com")).toBe("api.example.com")
    expect(Request.hostOf("unix+http://sock/path")).toBe("sock")
    expect(Request.hostOf("/relative")).toBe("default")
    expect(Request.hostOf("")).toBe("default")
  })

  it("only idempotent methods are retried by default; a client or a call may say otherwise", () => {
    for (const m of ["GET", "HEAD", "OPTIONS", "PUT", "DELETE", "TRACE"])
      expect(Request.isRetried(m, undefined, false)).toBe(true)
    for (const m of ["POST", "PATCH", "get"]) expect(Request.isRetried(m, undefined, false)).toBe(false)
    expect(Request.isRetried("POST", undefined, true)).toBe(true)
    expect(Request.isRetried("POST", true, false)).toBe(true)
    expect(Request.isRetried("GET", false, true)).toBe(false)
  })
})

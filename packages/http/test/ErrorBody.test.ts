// Sluice's own encoding of its errors in response bodies: what `Middleware.errorResponse`
// writes, the client (`ResponseDecoder.withBody`) reads back into the same typed error,
// and what one hop decoded the next re-encodes without loss.
import { describe, expect, it } from "@effect/vitest"
import { Errors } from "@sluice/core"
import { Middleware, Protocol, ResponseDecoder } from "@sluice/http"
import { Cause, Duration, Option } from "effect"
import fc from "fast-check"

const settings = Protocol.make()
const text = new TextDecoder()

/** The response `errorResponse` makes of an error, as a client receives it. */
const wire = (error: Errors.SluiceError) => {
  const response = Middleware.errorResponse(error, settings)
  const body = response.body
  if (body._tag !== "Uint8Array") throw new Error(`expected a JSON body, got ${body._tag}`)
  return { status: response.status, headers: response.headers, body: text.decode(body.body) }
}

/** What the client makes of that response: the headers' verdict, then the body. */
const decoded = (error: Errors.SluiceError, overrides = settings) => {
  const response = wire(error)
  const verdict = ResponseDecoder.verdict(response, 0, overrides).error
  if (verdict === undefined) throw new Error(`no error decoded from ${response.status}`)
  return ResponseDecoder.withBody(verdict, response.body, overrides)
}

const LONG_REASON =
  `orders database busy: shard "eu-7" {"queue": 412} — replica lag 3.2 s; ` + "retry later; ".repeat(20)

const quota = new Errors.QuotaExceeded({
  tier: "per-key",
  limit: 5,
  remaining: 0,
  retryAfter: Duration.millis(750.25)
})

// Every error a Sluice server answers with that the caller reads as itself.
const sameOnBothSides: ReadonlyArray<readonly [string, Errors.SluiceError]> = [
  ["Overloaded", new Errors.Overloaded({ reason: "busy" })],
  ["Overloaded with a hint", new Errors.Overloaded({ reason: "busy", retryAfter: Duration.millis(1500) })],
  ["Overloaded with a long reason", new Errors.Overloaded({ reason: LONG_REASON })],
  ["QuotaExceeded", quota],
  [
    "QuotaExceeded without a limit",
    new Errors.QuotaExceeded({ tier: "t", limit: Infinity, remaining: 3, retryAfter: Duration.seconds(2) })
  ],
  [
    "DontRetry(Overloaded)",
    new Errors.DontRetry({
      reason: "attempts",
      attempts: 3,
      cause: new Errors.Overloaded({ reason: LONG_REASON, retryAfter: Duration.seconds(1) })
    })
  ],
  ["DontRetry(QuotaExceeded)", new Errors.DontRetry({ reason: "not-retryable", attempts: 1, cause: quota })],
  ["DontRetry(budget, QuotaExceeded)", new Errors.DontRetry({ reason: "budget", attempts: 2, cause: quota })],
  [
    "DontRetry(server, Overloaded)",
    new Errors.DontRetry({ reason: "server", cause: new Errors.Overloaded({ reason: "histogram" }) })
  ]
]

describe("error bodies: Sluice's own encoding", () => {
  it.each(sameOnBothSides)("%s: errorResponse → client decode gives the same typed error", (_, error) => {
    expect(decoded(error)).toEqual(error)
  })

  it.each(sameOnBothSides)("%s: what one hop decoded, the next re-encodes without loss", (_, error) => {
    const once = decoded(error)
    expect(decoded(once as Errors.SluiceError)).toEqual(error)
    expect(wire(once as Errors.SluiceError)).toEqual(wire(error))
  })

  it('durations are plain milliseconds, an infinite one the string "Infinity"', () => {
    expect(
      JSON.parse(wire(new Errors.Overloaded({ reason: "busy", retryAfter: Duration.millis(1500) })).body)
    ).toEqual({ error: { _tag: "Overloaded", reason: "busy", retryAfterMs: 1500 } })
    expect(
      JSON.parse(wire(new Errors.DontRetry({ reason: "attempts", attempts: 2, cause: quota })).body)
    ).toEqual({
      error: {
        _tag: "DontRetry",
        reason: "attempts",
        attempts: 2,
        cause: { _tag: "QuotaExceeded", tier: "per-key", limit: 5, remaining: 0, retryAfterMs: 750.25 }
      }
    })
    const isolated = new Errors.CircuitOpen({
      name: "db",
      halfOpenAt: Infinity,
      retryAfter: Duration.infinity
    })
    expect(Protocol.formatErrorBody(isolated)).toEqual({
      error: { _tag: "CircuitOpen", name: "db", halfOpenAt: "Infinity", retryAfterMs: "Infinity" }
    })
  })

  it("the codec alone is lossless for every tag (origin aside: every error read from a body is remote)", () => {
    const all: ReadonlyArray<Errors.SluiceError> = [
      ...sameOnBothSides.map(([, e]) => e),
      new Errors.Throttled({ key: "backend:8080" }),
      new Errors.Throttled({ key: "backend:8080", probability: 0.25 }),
      new Errors.CircuitOpen({ name: "db", halfOpenAt: 1_700_000_000_000, retryAfter: Duration.seconds(4) }),
      new Errors.CircuitOpen({ name: "db", halfOpenAt: Infinity, retryAfter: Duration.infinity }),
      new Errors.DontRetry({ reason: "timeout" }),
      new Errors.DontRetry({ reason: "refused", attempts: 1, cause: new Errors.Throttled({ key: "k" }) })
    ]
    for (const error of all) {
      const json = JSON.parse(JSON.stringify(Protocol.formatErrorBody(error)))
      expect(Protocol.parseErrorBody(json)).toEqual(Option.some(error))
      expect(Protocol.parseErrorBody(JSON.stringify(json))).toEqual(Option.some(error))
    }
    const local = new Errors.Overloaded({ reason: "queue full", origin: "local" })
    expect(Protocol.parseErrorBody(JSON.stringify(Protocol.formatErrorBody(local)))).toEqual(
      Option.some(new Errors.Overloaded({ reason: "queue full" }))
    )
  })

  it("what stays behind: a quota's client id, and a non-Sluice cause's message (named by its tag)", () => {
    const withClient = new Errors.QuotaExceeded({ ...quota, client: "api-key-of-the-tier-below" })
    expect(wire(withClient).body).not.toContain("api-key-of-the-tier-below")
    const transport = new Errors.DontRetry({
      reason: "attempts",
      attempts: 3,
      cause: {
        _tag: "RequestError",
        reason: "Transport",
        message: "Transport error (GET http://10.0.0.7:8080/x)"
      }
    })
    expect(wire(transport).body).not.toContain("10.0.0.7")
    expect(decoded(transport)).toEqual(
      new Errors.DontRetry({
        reason: "attempts",
        attempts: 3,
        cause: new Errors.Overloaded({ reason: "RequestError" })
      })
    )
    const timeout = new Errors.DontRetry({
      reason: "attempts",
      attempts: 3,
      cause: new Cause.TimeoutError()
    })
    expect(decoded(timeout)).toEqual(
      new Errors.DontRetry({
        reason: "attempts",
        attempts: 3,
        cause: new Errors.Overloaded({ reason: "TimeoutException" })
      })
    )
  })

  it("the server's own throttle and breaker reach its caller as the server refusing the work", () => {
    expect(decoded(new Errors.Throttled({ key: "backend" }))).toEqual(
      new Errors.DontRetry({
        reason: "server",
        cause: new Errors.Overloaded({ reason: "throttled: backend" })
      })
    )
    expect(
      decoded(new Errors.CircuitOpen({ name: "db", halfOpenAt: 0, retryAfter: Duration.millis(2500) }))
    ).toEqual(new Errors.Overloaded({ reason: "circuit open: db", retryAfter: Duration.millis(2500) }))
    expect(
      decoded(new Errors.CircuitOpen({ name: "db", halfOpenAt: Infinity, retryAfter: Duration.infinity }))
    ).toEqual(
      new Errors.DontRetry({ reason: "server", cause: new Errors.Overloaded({ reason: "circuit open: db" }) })
    )
  })

  it("hints are clamped to the reader's maxRetryAfter; long strings are cut; unknown DontRetry reasons read as server", () => {
    const short = Protocol.make({ maxRetryAfter: "10 seconds" })
    expect(decoded(new Errors.Overloaded({ reason: "x", retryAfter: Duration.hours(5) }), short)).toEqual(
      new Errors.Overloaded({ reason: "x", retryAfter: Duration.seconds(10) })
    )
    const never = new Errors.QuotaExceeded({
      tier: "t",
      limit: 1,
      remaining: 0,
      retryAfter: Duration.infinity
    })
    expect(decoded(never, short)).toEqual(
      new Errors.DontRetry({
        reason: "server",
        cause: new Errors.QuotaExceeded({
          tier: "t",
          limit: 1,
          remaining: 0,
          retryAfter: Duration.seconds(10)
        })
      })
    )
    const huge = Protocol.parseErrorBody(
      JSON.stringify({ error: { _tag: "Overloaded", reason: "r".repeat(5000) } })
    )
    expect(Option.map(huge, (e) => (e as Errors.Overloaded).reason.length)).toEqual(Option.some(1025))
    expect(
      Protocol.parseErrorBody(
        `{"error":{"_tag":"DontRetry","reason":"a-reason-from-a-later-version","attempts":2}}`
      )
    ).toEqual(Option.some(new Errors.DontRetry({ reason: "server", attempts: 2 })))
  })

  it("anything else is not Sluice's encoding: None, and the client reads it as a foreign body", () => {
    const foreign = [
      "",
      "Service Unavailable",
      "{not json",
      "[]",
      "null",
      `{"error":"db down"}`,
      `{"reason":"busy"}`,
      `{"error":{"_tag":"Nope","reason":"x"}}`,
      `{"error":{"_tag":"__proto__"}}`,
      `{"error":{"_tag":"Overloaded","reason":5}}`,
      `{"error":{"_tag":"Overloaded"}}`,
      // Effect Schema's own encoding of a Duration is not ours
      `{"error":{"_tag":"QuotaExceeded","tier":"t","limit":1,"remaining":0,"retryAfter":{"_tag":"Millis","millis":5}}}`,
      `{"error":{"_tag":"QuotaExceeded","tier":"t","limit":-1,"remaining":0,"retryAfterMs":5}}`,
      `{"error":{"_tag":"CircuitOpen","name":"db","halfOpenAt":0,"retryAfterMs":"soon"}}`
    ]
    for (const body of foreign) expect(Protocol.parseErrorBody(body), body).toEqual(Option.none())
    // a negative or mistyped optional hint is dropped, the rest is kept
    expect(Protocol.parseErrorBody(`{"error":{"_tag":"Overloaded","reason":"x","retryAfterMs":-5}}`)).toEqual(
      Option.some(new Errors.Overloaded({ reason: "x" }))
    )

    // Foreign servers' words still reach the error: `reason`, `message`, `error` strings, or the text.
    const { error } = ResponseDecoder.verdict({ status: 503, headers: {} }, 0, settings)
    const read = (body: string) => ResponseDecoder.withBody(error!, body, settings)
    expect(read(`{"message":"maintenance"}`)).toEqual(new Errors.Overloaded({ reason: "maintenance" }))
    expect(read(`{"error":"db down"}`)).toEqual(new Errors.Overloaded({ reason: "db down" }))
    expect(read(`{"reason":"busy","error":{"code":7}}`)).toEqual(new Errors.Overloaded({ reason: "busy" }))
    expect(read("upstream timed out")).toEqual(new Errors.Overloaded({ reason: "upstream timed out" }))
    expect(read("")).toEqual(new Errors.Overloaded({ reason: "server" }))
  })

  it("a body that disagrees with its status fills in only what agrees", () => {
    // a quota body on a 503: the status says overloaded
    const { error } = ResponseDecoder.verdict({ status: 503, headers: { "retry-after": "2" } }, 0, settings)
    const body = JSON.stringify(Protocol.formatErrorBody(quota))
    expect(ResponseDecoder.withBody(error!, body, settings)).toEqual(
      new Errors.Overloaded({ reason: "server", retryAfter: Duration.seconds(2) })
    )
    // a DontRetry body without the header: the status says retry
    const gaveUp = JSON.stringify(
      Protocol.formatErrorBody(
        new Errors.DontRetry({
          reason: "attempts",
          attempts: 3,
          cause: new Errors.Overloaded({ reason: "busy" })
        })
      )
    )
    expect(ResponseDecoder.withBody(error!, gaveUp, settings)).toEqual(
      new Errors.Overloaded({ reason: "busy", retryAfter: Duration.seconds(2) })
    )
  })

  it("property: any Overloaded, QuotaExceeded or DontRetry of them survives errorResponse → decode", () => {
    // whole milliseconds, and microseconds (Effect tells a whole number of milliseconds held as
    // nanoseconds from the same held as milliseconds: not a difference a wire can keep)
    const millis = fc.oneof(
      fc.nat({ max: 86_400_000 }),
      fc.nat({ max: 86_400_000_000 }).map((micros) => micros / 1000)
    )
    const overloaded = fc
      .record({ reason: fc.string({ maxLength: 300 }), retryAfter: fc.option(millis, { nil: undefined }) })
      .map(
        ({ reason, retryAfter }) =>
          new Errors.Overloaded(
            retryAfter === undefined ? { reason } : { reason, retryAfter: Duration.millis(retryAfter) }
          )
      )
    const quotaExceeded = fc
      .record({
        tier: fc.string({ maxLength: 64 }),
        limit: fc.nat(),
        remaining: fc.nat(),
        retryAfter: millis
      })
      .map((q) => new Errors.QuotaExceeded({ ...q, retryAfter: Duration.millis(q.retryAfter) }))
    const cause = fc.oneof(overloaded, quotaExceeded)
    const dontRetry = fc
      .record({
        reason: fc.constantFrom(...Errors.DontRetryReason.literals),
        attempts: fc.option(fc.integer({ min: 1, max: 10 }), { nil: undefined }),
        cause
      })
      .map(
        ({ attempts, cause, reason }) =>
          new Errors.DontRetry({ reason, cause, ...(attempts !== undefined ? { attempts } : {}) })
      )
    fc.assert(
      fc.property(fc.oneof(overloaded, quotaExceeded, dontRetry), (error) => {
        expect(decoded(error)).toEqual(error)
      }),
      { numRuns: 300 }
    )
  })
})

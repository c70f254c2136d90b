/**
 * TempoLimit: a rate-paced limit that runs a backend near its physical limit. Where a window
 * (Reno, AIMD) learns capacity by overshooting it and cutting, TempoLimit learns a rate, as BBR
 * does for TCP: it paces departures at `window / minRtt` and tells the pacer when to hold, to
 * burst and to pause. Its rules, with the default parameter set:
 *
 * 1. Start-up: the initial window leaves as one burst; nothing else leaves until a round
 *    trip is measured (`pacingInterval = Infinity`). Then departures are paced at
 *    `startupGain` × window per shortest round trip, and every success of a used window
 *    adds one.
 * 2. Exit: the first overload error sets the window to what that request saw in flight when
 *    it left (the server was full when it arrived), never above the current window. Errors
 *    of requests in flight then, or sent within one round trip after, belong to the same
 *    overshoot and do not count.
 * 3. Steady state: paced at window / `minRtt`; the limiter's cap is `headroom` × window
 *    (+ a probe), so pacing, not the cap, sets the departures. A counted error sets the
 *    window to at most what that request saw in flight and pauses the schedule one interval,
 *    so the rejected request's retry does not start a cascade.
 * 4. Cut: when most outcomes of a round trip are errors (at least 3), the window is
 *    multiplied by `cut`: a capacity drop.
 * 5. Probes: `firstProbe` round trips after start-up, then `probeEvery` round trips after a
 *    failed probe or a counted error, the next `probeSize` departures leave at once as a
 *    burst, marked. If none is rejected within `probeDeadline` × the shortest rejection
 *    round trip after the last left (a timer), the window grows by the probe and the next
 *    probe, twice as large, follows at once; a rejected probe request fails it (no cut).
 *
 * @since 0.2.0
 */
import * as Field from "../options/Field.js"
import { type Issue, orderIssues } from "../options/Field.js"
import type { Departure, Limit, Sample } from "./Limit.js"

/**
 * A resolved configuration (the defaults {@link configure} fills in are in brackets): `initial`
 * window (20), `minLimit` (1), `maxLimit` (∞), `startupGain` (1.25), `cut` in (0, 1) (0.6),
 * `probeSize` (2, an integer), `probeEvery` (8 round trips), `firstProbe` (5 round trips),
 * `probeDeadline` (1.5 × the shortest rejection round trip), `headroom` (1.25).
 *
 * @since 0.2.0
 */
export interface Config {
  readonly initial: number
  readonly minLimit: number
  readonly maxLimit: number
  readonly startupGain: number
  readonly cut: number
  readonly probeSize: number
  readonly probeEvery: number
  readonly firstProbe: number
  readonly probeDeadline: number
  readonly headroom: number
}

/**
 * Issues of a configuration beyond each field's own range: `minLimit ≤ initial ≤ maxLimit`.
 *
 * @since 0.2.0
 */
export const issues = (config: Config): Array<Issue> =>
  orderIssues([
    ["minLimit", config.minLimit],
    ["initial", config.initial],
    ["maxLimit", config.maxLimit]
  ])

/**
 * Validates TempoLimit's options: each field's range (`probeSize` an integer, `cut` in (0, 1),
 * `maxLimit` may be `Infinity`, the rest positive numbers), the defaults, then {@link issues}.
 *
 * @since 0.2.0
 */
export const configure = (input: object): Field.Result<Config> =>
  Field.resolve(
    {
      initial: Field.withDefault(Field.positive, 20),
      minLimit: Field.withDefault(Field.positive, 1),
      maxLimit: Field.withDefault(Field.positiveOrInfinity, Infinity),
      startupGain: Field.withDefault(Field.positive, 1.25),
      cut: Field.withDefault(Field.openRatio, 0.6),
      probeSize: Field.withDefault(Field.positiveInt, 2),
      probeEvery: Field.withDefault(Field.positive, 8),
      firstProbe: Field.withDefault(Field.positive, 5),
      probeDeadline: Field.withDefault(Field.positive, 1.5),
      headroom: Field.withDefault(Field.positive, 1.25)
    },
    input,
    issues
  )

interface Probe {
  readonly number: number
  readonly size: number
  /** departures still to be marked as part of the probe */
  toMark: number
  /** when the probe is judged accepted (set at its last departure) */
  deadline: number | undefined
  failed: boolean
}

/**
 * A TempoLimit limit. `window` is the target in flight, `phase` `"startup"` or `"steady"`,
 * `minRtt` / `minRejectRtt` the shortest success and rejection round trips seen.
 *
 * @since 0.2.0
 */
export class TempoLimit implements Limit {
  readonly name = "tempo"
  window: number
  phase: "startup" | "steady" = "startup"
  minRtt: number | undefined = undefined
  minRejectRtt: number | undefined = undefined
  private ignoreBelow = 0
  private ignoreDepartedBefore = Number.NEGATIVE_INFINITY
  private readonly seen = new Map<number, number>()
  private roundStart = 0
  private roundSuccesses = 0
  private roundErrors = 0
  private probe: Probe | undefined = undefined
  private probes = 0
  private probeSize: number
  private nextProbeAt = 0
  private pendingBurst = 0

  constructor(readonly config: Config) {
    this.window = config.initial
    this.probeSize = config.probeSize
    this.pendingBurst = Math.ceil(config.initial)
  }

  get limit(): number {
    // Until a round trip is measured there is nothing to pace with: the window gates.
    if (this.minRtt === undefined) return this.window
    const gain = this.phase === "startup" ? this.config.startupGain : 1
    return Math.ceil(this.window * gain * this.config.headroom) + (this.probe?.size ?? 0)
  }

  get pacingInterval(): number | undefined {
    // The initial window leaves as one burst; the rest waits for a measured round trip.
    if (this.minRtt === undefined) return Number.POSITIVE_INFINITY
    const gain = this.phase === "startup" ? this.config.startupGain : 1
    return this.minRtt / (this.window * gain)
  }

  get nextTimer(): number | undefined {
    return this.probe?.deadline
  }

  private clamp(w: number): number {
    return Math.min(this.config.maxLimit, Math.max(this.config.minLimit, w))
  }

  onDeparture(d: Departure): number | undefined {
    this.seen.set(d.id, d.inFlight)
    const probe = this.probe
    if (probe !== undefined && probe.toMark > 0) {
      probe.toMark--
      if (probe.toMark === 0)
        probe.deadline = d.now + this.config.probeDeadline * (this.minRejectRtt ?? this.minRtt ?? 0)
      return probe.number
    }
    return 0
  }

  takeBurst(_now: number): number {
    const k = this.pendingBurst
    this.pendingBurst = 0
    return k
  }

  onTimer(now: number): void {
    const probe = this.probe
    if (probe === undefined || probe.deadline === undefined || now < probe.deadline) return
    this.probe = undefined
    if (probe.failed) return
    // No rejection came back in time: the server took the extra requests.
    this.window = this.clamp(this.window + probe.size)
    this.probeSize = Math.min(probe.size * 2, Math.max(this.config.probeSize, Math.floor(this.window / 2)))
    this.nextProbeAt = now
  }

  onSample(sample: Sample): number {
    const now = sample.now
    const seen = this.seen.get(sample.id) ?? sample.inFlight
    this.seen.delete(sample.id)
    const probe = this.probe
    const isProbe = sample.mark !== undefined && sample.mark > 0
    if (sample.outcome === "success") {
      this.minRtt = this.minRtt === undefined ? sample.rtt : Math.min(this.minRtt, sample.rtt)
      this.roundSuccesses++
      // Paced slow start: one more per success while the window is used.
      if (this.phase === "startup" && seen + 1 >= this.window / 2) this.window = this.clamp(this.window + 1)
    } else if (sample.outcome === "dropped") {
      this.minRejectRtt =
        this.minRejectRtt === undefined ? sample.rtt : Math.min(this.minRejectRtt, sample.rtt)
      this.roundErrors++
      if (isProbe) {
        if (probe !== undefined && sample.mark === probe.number && !probe.failed) {
          probe.failed = true
          this.probeSize = this.config.probeSize
          this.nextProbeAt = now + this.config.probeEvery * (this.minRtt ?? sample.rtt)
          this.pendingBurst -= 1
        }
      } else if (sample.id >= this.ignoreBelow && (sample.departedAt ?? now) >= this.ignoreDepartedBefore) {
        // The server was full when this request arrived: at most what it saw in flight fits.
        this.window = this.clamp(Math.min(this.window, seen))
        const rtt = this.minRtt ?? sample.rtt
        if (this.phase === "startup") {
          this.phase = "steady"
          this.ignoreBelow = sample.nextId
          // What left within a round trip of the exit was sent into the same overshoot.
          this.ignoreDepartedBefore = now + rtt
          this.nextProbeAt = now + this.config.firstProbe * rtt
        } else {
          this.nextProbeAt = Math.max(this.nextProbeAt, now + this.config.probeEvery * rtt)
        }
        // one interval's pause, so the rejected request's retry does not start a cascade
        this.pendingBurst -= 1
      }
    }
    const minRtt = this.minRtt
    if (minRtt !== undefined && now - this.roundStart >= minRtt) {
      if (this.roundErrors > this.roundSuccesses && this.roundErrors >= 3) {
        this.window = this.clamp(this.window * this.config.cut)
        this.phase = "steady"
        this.ignoreBelow = sample.nextId
      }
      this.roundStart = now
      this.roundErrors = 0
      this.roundSuccesses = 0
    }
    if (
      this.phase === "steady" &&
      this.probe === undefined &&
      minRtt !== undefined &&
      now >= this.nextProbeAt &&
      sample.outcome === "success"
    ) {
      const size = this.probeSize
      this.probe = { number: ++this.probes, size, toMark: size, deadline: undefined, failed: false }
      this.pendingBurst = size
    }
    return this.limit
  }
}

import { Options } from "@sluice/core"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type * as LA from "../LimitAlgorithm.js"
import type * as T from "../Tempo.js"
import { checkBounds, OpenRatio, PositiveOrInfinity } from "./limitAlgorithm.js"
import { bindMethods } from "./bind.js"

/** @internal */
export const TempoOptions = Schema.Struct({
  initial: Schema.optionalWith(Options.PositiveNumber, { default: () => 20 }),
  minLimit: Schema.optionalWith(Options.PositiveNumber, { default: () => 1 }),
  maxLimit: Schema.optionalWith(PositiveOrInfinity, { default: () => Infinity }),
  startupGain: Schema.optionalWith(Options.PositiveNumber, { default: () => 1.25 }),
  cut: Schema.optionalWith(OpenRatio, { default: () => 0.6 }),
  probeSize: Schema.optionalWith(Options.PositiveInt, { default: () => 2 }),
  probeEvery: Schema.optionalWith(Options.PositiveNumber, { default: () => 8 }),
  firstProbe: Schema.optionalWith(Options.PositiveNumber, { default: () => 5 }),
  probeDeadline: Schema.optionalWith(Options.PositiveNumber, { default: () => 1.5 }),
  headroom: Schema.optionalWith(Options.PositiveNumber, { default: () => 1.25 })
}).pipe(
  Schema.filter((o) =>
    checkBounds([
      ["minLimit", o.minLimit],
      ["initial", o.initial],
      ["maxLimit", o.maxLimit]
    ])
  )
)

const module = "Tempo"
const decodeSync = Options.decodeSync(module, TempoOptions)
const decodeEffect = Options.decode(module, TempoOptions)

interface Probe {
  readonly number: number
  readonly size: number
  /** departures still to be marked as part of the probe */
  toMark: number
  /** when the probe is judged accepted (set at its last departure) */
  deadline: number | undefined
  failed: boolean
}

class TempoImpl implements T.Tempo {
  protected readonly bound = bindMethods(this, ["onDeparture", "takeBurst", "onTimer", "onSample"])
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

  constructor(readonly options: T.TempoConfig) {
    this.window = options.initial
    this.probeSize = options.probeSize
    this.pendingBurst = Math.ceil(options.initial)
  }

  get limit(): number {
    // Until a round trip is measured there is nothing to pace with: the window gates.
    if (this.minRtt === undefined) return this.window
    const gain = this.phase === "startup" ? this.options.startupGain : 1
    return Math.ceil(this.window * gain * this.options.headroom) + (this.probe?.size ?? 0)
  }

  get pacingInterval(): number | undefined {
    // The initial window leaves as one burst; the rest waits for a measured round trip.
    if (this.minRtt === undefined) return Number.POSITIVE_INFINITY
    const gain = this.phase === "startup" ? this.options.startupGain : 1
    return this.minRtt / (this.window * gain)
  }

  get nextTimer(): number | undefined {
    return this.probe?.deadline
  }

  private clamp(w: number): number {
    return Math.min(this.options.maxLimit, Math.max(this.options.minLimit, w))
  }

  onDeparture(d: LA.Departure): number | undefined {
    this.seen.set(d.id, d.inFlight)
    const probe = this.probe
    if (probe !== undefined && probe.toMark > 0) {
      probe.toMark--
      if (probe.toMark === 0)
        probe.deadline = d.now + this.options.probeDeadline * (this.minRejectRtt ?? this.minRtt ?? 0)
      return probe.number
    }
    return 0
  }

  takeBurst(): number {
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
    this.probeSize = Math.min(probe.size * 2, Math.max(this.options.probeSize, Math.floor(this.window / 2)))
    this.nextProbeAt = now
  }

  onSample(sample: LA.Sample): number {
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
          this.probeSize = this.options.probeSize
          this.nextProbeAt = now + this.options.probeEvery * (this.minRtt ?? sample.rtt)
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
          this.nextProbeAt = now + this.options.firstProbe * rtt
        } else {
          this.nextProbeAt = Math.max(this.nextProbeAt, now + this.options.probeEvery * rtt)
        }
        // one interval's pause, so the rejected request's retry does not start a cascade
        this.pendingBurst -= 1
      }
    }
    const minRtt = this.minRtt
    if (minRtt !== undefined && now - this.roundStart >= minRtt) {
      if (this.roundErrors > this.roundSuccesses && this.roundErrors >= 3) {
        this.window = this.clamp(this.window * this.options.cut)
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

/** @internal */
export const unsafeMake = (options: T.TempoOptions = {}): T.Tempo => new TempoImpl(decodeSync(options))

/** @internal */
export const make = (options: T.TempoOptions = {}): Effect.Effect<T.Tempo, Options.InvalidOptions> =>
  Effect.map(decodeEffect(options), (config) => new TempoImpl(config))

/** @internal */
export const factory = (options: T.TempoOptions = {}): LA.Factory => {
  const config = decodeSync(options)
  return () => new TempoImpl(config)
}

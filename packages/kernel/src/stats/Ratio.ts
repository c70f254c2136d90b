/**
 * Exact comparisons of a share of counts (`part / whole`) against a configured ratio.
 * `failures >= ratio * calls` in floating point misses exact shares (`0.55 * 100` is
 * `55.00000000000001`, so 55 failures of 100 do not reach 0.55): the ratio is read as the
 * decimal it is written as (its shortest round-trip form: `0.55` is 55/100) and compared by
 * integer cross-multiplication, with `BigInt` only where a product would pass 2^53.
 *
 * @since 0.2.0
 */

/**
 * A ratio compiled for exact comparisons. `part` and `whole` must be non-negative integers.
 *
 * @since 0.2.0
 */
export interface ExactRatio {
  /** The ratio as given. */
  readonly value: number
  /** The sign of `part / whole − ratio`, exactly. */
  readonly compare: (part: number, whole: number) => -1 | 0 | 1
  /** `part / whole ≥ ratio`, exactly. */
  readonly atLeast: (part: number, whole: number) => boolean
  /** `part / whole > ratio`, exactly. */
  readonly above: (part: number, whole: number) => boolean
  /** `⌊ratio × whole⌋` for a non-negative integer `whole`, exactly (throws a `RangeError` otherwise). */
  readonly floorTimes: (whole: number) => number
}

const LIMIT = 2 ** 53

// The ratio as the decimal its shortest round-trip form spells ("0.55" → 55/100,
// "1e-7" → 1/10^7): the number the user wrote, not the binary double nearest to it.
const decimal = (ratio: number): { readonly p: bigint; readonly q: bigint } => {
  const text = String(ratio)
  const [mantissa, exponentText] = text.split("e")
  const exponent = exponentText === undefined ? 0 : Number(exponentText)
  const [whole, fraction = ""] = mantissa!.split(".")
  let p = BigInt(whole! + fraction)
  let k = fraction.length - exponent
  if (k < 0) {
    p *= 10n ** BigInt(-k)
    k = 0
  }
  return { p, q: 10n ** BigInt(k) }
}

class ExactRatioImpl implements ExactRatio {
  readonly p: bigint
  readonly q: bigint
  private readonly pn: number
  private readonly qn: number
  constructor(readonly value: number) {
    const { p, q } = decimal(value)
    this.p = p
    this.q = q
    // Exact in doubles only while every factor and product stays below 2^53.
    this.pn = p < BigInt(LIMIT) ? Number(p) : NaN
    this.qn = q < BigInt(LIMIT) ? Number(q) : NaN
  }
  // sign of part / whole − p / q, exactly
  compare(part: number, whole: number): -1 | 0 | 1 {
    const left = part * this.qn
    const right = this.pn * whole
    if (left < LIMIT && right < LIMIT) return left < right ? -1 : left > right ? 1 : 0
    const l = BigInt(part) * this.q
    const r = this.p * BigInt(whole)
    return l < r ? -1 : l > r ? 1 : 0
  }
  atLeast(part: number, whole: number): boolean {
    return this.compare(part, whole) >= 0
  }
  above(part: number, whole: number): boolean {
    return this.compare(part, whole) > 0
  }
  floorTimes(whole: number): number {
    if (!Number.isSafeInteger(whole) || whole < 0) {
      throw new RangeError(`expected a non-negative integer, got ${whole}`)
    }
    const product = this.pn * whole
    // `%` of integers below 2^53 is exact, and so is the division of the exact multiple left.
    if (product < LIMIT && this.qn < LIMIT) return (product - (product % this.qn)) / this.qn
    return Number((this.p * BigInt(whole)) / this.q)
  }
}

/**
 * Whether ratios written as decimals add up to at most `bound`, exactly (`0.33 + 0.56 + 0.11`
 * is `1.0000000000000002` in floating point). Throws a `RangeError` for a negative or
 * non-finite value.
 *
 * @since 0.2.0
 */
export const sumAtMost = (ratios: ReadonlyArray<number>, bound: number): boolean => {
  const parts = [...ratios, bound].map((ratio) => {
    if (!Number.isFinite(ratio) || ratio < 0)
      throw new RangeError(`expected a finite, non-negative ratio, got ${ratio}`)
    return decimal(ratio)
  })
  // Every denominator is a power of ten: the largest is a common one.
  const q = parts.reduce((max, part) => (part.q > max ? part.q : max), 1n)
  const scaled = parts.map((part) => part.p * (q / part.q))
  const limit = scaled.pop()!
  return scaled.reduce((sum, p) => sum + p, 0n) <= limit
}

/**
 * Compiles a ratio (finite, non-negative; throws a `RangeError` otherwise).
 *
 * @since 0.2.0
 */
export const make = (ratio: number): ExactRatio => {
  if (!Number.isFinite(ratio) || ratio < 0)
    throw new RangeError(`expected a finite, non-negative ratio, got ${ratio}`)
  return new ExactRatioImpl(ratio)
}
